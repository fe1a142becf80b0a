"""Upstream served by nginx over HTTPS with HTTP/2, for part of the seeds: the tree is written to
a folder that nginx lists with `autoindex`, under a throw-away certificate authority made with
openssl (as Tests/TestSupport/NginxServer.swift does). nginx can only fail by being down (stopped);
its access log is the request log the checks read.
"""

import os
import shutil
import socket
import subprocess
import time
import urllib.parse

from .server import Faults


def available():
    return bool(shutil.which("nginx") and shutil.which("openssl"))


class Certificates:
    """A CA and a server certificate for 127.0.0.1, made once per simulation."""

    def __init__(self, folder):
        os.makedirs(folder)
        self.ca, self.cert, self.key = (os.path.join(folder, n) for n in ("ca.pem", "server.pem", "server.key"))
        curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        ext = os.path.join(folder, "server.ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        for args in (["req", "-x509"] + curve + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "3",
                                                  "-subj", "/CN=batchdl simulation ca"],
                     ["req"] + curve + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"],
                     ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                      "-CAcreateserial", "-out", "server.pem", "-days", "3", "-extfile", ext]):
            subprocess.run(["openssl"] + args, cwd=folder, capture_output=True, check=True)


class Nginx:
    """Serves one Upstream at https://127.0.0.1:PORT/pub/ from `root`/www/pub; same face as Server."""

    def __init__(self, upstream, root, certificates, secret_header):
        self.upstream, self.root, self.certs, self.origin = upstream, root, certificates, "primary"
        self.www = os.path.join(root, "www", "pub")
        self.access = os.path.join(root, "logs", "access.log")
        os.makedirs(self.www)
        os.makedirs(os.path.dirname(self.access))
        self.faults, self.proc, self.offset = Faults(), None, 0
        self.header = "$http_" + secret_header.lower().replace("-", "_")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.start()

    def configuration(self):
        json = self.upstream.style == "nginx-json"
        return """user root root;
worker_processes 1;
pid {root}/logs/nginx.pid;
error_log {root}/logs/error.log warn;
events {{ worker_connections 256; }}
http {{
  log_format sim escape=none "$request_method\\t$uri\\t$status\\t{header}";
  access_log {root}/logs/access.log sim;
  client_body_temp_path {root}/logs/body;
  proxy_temp_path {root}/logs/proxy;
  fastcgi_temp_path {root}/logs/fastcgi;
  uwsgi_temp_path {root}/logs/uwsgi;
  scgi_temp_path {root}/logs/scgi;
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{port} ssl http2;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    root {root}/www;
    location /pub/ {{ autoindex on; autoindex_format {fmt}; }}
  }}
}}
""".format(root=self.root, port=self.port, cert=self.certs.cert, key=self.certs.key, header=self.header,
           fmt="json" if json else "html")

    def start(self):
        conf = os.path.join(self.root, "nginx.conf")
        with open(conf, "w") as f:
            f.write(self.configuration())
        self.proc = subprocess.Popen(["nginx", "-p", self.root, "-c", conf, "-e", os.path.join(self.root, "logs", "error.log"),
                                      "-g", "daemon off;"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        for _ in range(500):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("nginx did not start on port %d" % self.port)

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    def url(self, path=""):
        return "https://127.0.0.1:%d/pub/%s" % (self.port, urllib.parse.quote(path.encode(), safe="/"))

    def publish(self):
        """Writes upstream's folder as it is now (bytes and times) where nginx serves it."""
        docs = self.upstream.documents()
        for folder, _, files in os.walk(self.www, topdown=False):
            for name in files:
                path = os.path.join(folder, name)
                if os.path.relpath(path, self.www) not in docs:
                    os.remove(path)
            if folder != self.www and not os.listdir(folder):
                os.rmdir(folder)
        for rel, (data, mtime) in docs.items():
            path = os.path.join(self.www, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                with open(path, "rb") as f:
                    same = f.read() == data
            except OSError:
                same = False
            if not same:
                with open(path, "wb") as f:
                    f.write(data)
            os.utime(path, (mtime, mtime))

    @property
    def log(self):
        """The requests since the last `clear_log`, as Server logs them."""
        try:
            with open(self.access, "rb") as f:
                f.seek(self.offset)
                lines = f.read().split(b"\n")[:-1]
        except OSError:
            return []
        out = []
        for line in lines:
            _, path, status, secret = (line.split(b"\t") + [b""] * 4)[:4]
            out.append({"origin": "primary", "path": path.decode("utf-8", "surrogateescape"), "fault": None,
                        "status": int(status or 0), "secret": secret not in (b"", b"-")})
        return out

    def clear_log(self):
        try:
            self.offset = os.path.getsize(self.access)
        except OSError:
            self.offset = 0
