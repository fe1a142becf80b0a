# Sourced by the bench scripts that fetch many small files from nginx on 127.0.0.1
# (bench/transfer, bench/callgrind, bench/kernel-profile): the server, the files it serves and the
# tools' inputs, made the same way for all of them.

# small_files FOLDER COUNT: exactly COUNT files f00000.bin... of 4 KiB of random bytes in FOLDER
# (missing ones are made, extra ones removed, the others kept as they are).
small_files() {
  mkdir -p "$1"
  python3 - "$1" "$2" <<'PY'
import os, sys
folder, count = sys.argv[1], int(sys.argv[2])
names = {f"f{i:05d}.bin" for i in range(count)}
for name in os.listdir(folder):
    if name not in names:
        os.remove(os.path.join(folder, name))
for name in sorted(names):
    path = os.path.join(folder, name)
    if not os.path.isfile(path) or os.path.getsize(path) != 4096:
        with open(path + ".tmp", "wb") as f:
            f.write(os.urandom(4096))
        os.replace(path + ".tmp", path)
PY
}

# small_inputs BASE COUNT URLS CURL_CFG [ARIA2_LIST]: the URL list batchdl's `list:` reads, curl's
# config (`url = ...` / `output = "dl/small/NAME"`) and, if named, aria2c's input file, for the
# files BASE/small/f00000.bin...
small_inputs() {
  awk -v base="$1" -v n="$2" -v urls="$3" -v cfg="$4" -v aria="${5:-}" 'BEGIN {
    printf "" >urls; printf "" >cfg
    if (aria != "") printf "" >aria
    for (i = 0; i < n; i++) {
      name = sprintf("f%05d.bin", i)
      print base "/small/" name >urls
      printf "url = \"%s/small/%s\"\noutput = \"dl/small/%s\"\n", base, name, name >cfg
      if (aria != "") printf "%s/small/%s\n  out=small/%s\n", base, name, name >aria
    }
  }'
}

# nginx_start ROOT WWW PORT WORKERS [HTTP_DIRECTIVES]: writes ROOT/nginx.conf, which serves WWW on
# 127.0.0.1:PORT only with WORKERS worker processes (HTTP_DIRECTIVES, one per line, are added to its
# http block), stops a server an interrupted run left on the port, and starts nginx. nginx_stop
# ROOT stops it; the caller sets its own EXIT trap. With TLS_DIR set (see tls_files), nginx
# serves HTTPS with HTTP/2 offered by ALPN, with TLS_DIR's server certificate.
nginx_start() {
  local root=$1 www=$2 port=$3 workers=$4 extra=${5:-} listen=""
  nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
  {
    echo "worker_processes $workers;"
    echo "pid $root/nginx.pid;"
    echo "error_log $root/nginx-error.log warn;"
    echo "events { worker_connections 1024; }"
    echo "http {"
    [ -n "$extra" ] && printf '%s\n' "$extra" | sed 's/^/  /'
    echo "  sendfile on;"
    echo "  keepalive_requests 100000;"
    for kind in body proxy fastcgi uwsgi scgi; do
      echo "  ${kind/body/client_body}_temp_path $root/tmp-$kind;"
    done
    echo "  server {"
    [ -n "${TLS_DIR:-}" ] && listen=" ssl http2"
    echo "    listen 127.0.0.1:$port$listen;"
    if [ -n "${TLS_DIR:-}" ]; then
      echo "    ssl_certificate $TLS_DIR/server.pem;"
      echo "    ssl_certificate_key $TLS_DIR/server.key;"
      echo "    ssl_session_cache shared:bench:10m;"
    fi
    echo "    root $www;"
    echo "  }"
    echo "}"
  } >"$root/nginx.conf"
  [ -f "$root/nginx.pid" ] && "$nginx_bin" -c "$root/nginx.conf" -p "$root" -s stop 2>/dev/null && sleep 0.5
  "$nginx_bin" -c "$root/nginx.conf" -p "$root"
  sleep 0.5
}

nginx_stop() {
  "$nginx_bin" -c "$1/nginx.conf" -p "$1" -s stop 2>/dev/null || true
}

# tls_files DIR: a throw-away CA (DIR/ca.pem) and a certificate it issued for 127.0.0.1
# (DIR/server.pem, DIR/server.key), made once with openssl: the tools are told to trust the CA,
# as users trust a private CA, and nothing touches the system's store.
tls_files() {
  local dir=$1
  [ -f "$dir/server.pem" ] && openssl x509 -checkend 3600 -noout -in "$dir/server.pem" >/dev/null 2>&1 && return
  mkdir -p "$dir"
  local curve=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${curve[@]}" -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 30 -subj "/CN=batchdl bench CA" 2>/dev/null
  openssl req "${curve[@]}" -keyout "$dir/server.key" -out "$dir/server.csr" -subj /CN=127.0.0.1 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$dir/server.pem" -days 30 -extfile "$dir/server.ext" 2>/dev/null
}
