"""The upstream's web server: 127.0.0.1, an ephemeral port, HTTP/1.1 with keep-alive, and
switches for the faults of a night (down, a page answering 500, a listing cut short, a slow body,
a reset connection). It logs every request, so the checks can see what was asked and answered.
"""

import email.utils
import http.server
import socket
import struct
import threading
import time
import urllib.parse

from . import upstream as up


class Faults:
    """What goes wrong on the server during one night."""

    def __init__(self):
        self.page500 = set()  # folders ('' or 'sub/') whose listing answers 500
        self.truncate = set()  # folders whose listing is cut off before its Content-Length
        self.slow = False  # every body drips in small pieces
        self.reset = {}  # path -> resets left (-1: every attempt)
        self.trap = None  # a Trap: a signal sent when the Nth request arrives


class Trap:
    """Calls `fire` when the server sees its Nth request (counted over both origins), and holds
    every later request until `fire` returns: a kill lands at the same point of the run on any
    machine, so a seed replays exactly."""

    def __init__(self, n, fire):
        self.n, self.fire, self.seen = n, fire, 0
        self.lock, self.done = threading.Lock(), threading.Event()

    def request(self):
        with self.lock:
            self.seen += 1
            mine = self.seen == self.n
        if mine:
            try:
                self.fire()
            finally:
                self.done.set()
        elif self.seen > self.n:
            self.done.wait(30)


class Server:
    """Serves one Upstream at http://127.0.0.1:PORT/pub/; `origin` names it in the log."""

    def __init__(self, upstream, lock, origin, secret):
        self.upstream, self.lock, self.origin, self.secret = upstream, lock, origin, secret
        self.faults = Faults()
        self.log = []
        self.port = 0
        self.httpd = None
        self.start()

    def start(self):
        handler = type("Handler", (_Handler,), {"sim": self})
        httpd = _Quiet(("127.0.0.1", self.port), handler)
        httpd.daemon_threads = True
        self.port = httpd.server_address[1]
        self.httpd = httpd
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self):
        """Down: the port refuses connections until `start` binds it again."""
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def clear_log(self):
        self.log.clear()

    def url(self, path=""):
        return "http://127.0.0.1:%d/pub/%s" % (self.port, urllib.parse.quote(path.encode(), safe="/"))


class _Quiet(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that hangs up (a killed run) is part of the simulation


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sim = None

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.do_GET(head=True)

    def do_GET(self, head=False):
        sim = self.sim
        raw = urllib.parse.urlsplit(self.path).path
        path = urllib.parse.unquote_to_bytes(raw).decode("utf-8", "surrogateescape")
        secret_seen = bool(sim.secret) and any(sim.secret in v for v in self.headers.values())
        entry = {"t": time.time(), "origin": sim.origin, "path": path, "secret": secret_seen,
                 "fault": None, "status": 0}
        sim.log.append(entry)
        if sim.faults.trap:
            sim.faults.trap.request()
        if not path.startswith("/pub/"):
            return self._send(entry, 404, b"not found\n", {}, head)
        rel = path[len("/pub/"):]
        with sim.lock:
            u = sim.upstream
            if rel == "" or rel.endswith("/"):
                if rel not in u.folders():
                    return self._send(entry, 404, b"not found\n", {}, head)
                body, ctype = u.listing(rel)
                headers = {"Content-Type": ctype}
                if u.validators and u.style not in ("nginx", "nginx-json"):
                    headers["ETag"] = '"%s"' % up.sha256(body)[:16]
                if rel in sim.faults.page500:
                    entry["fault"] = "500"
                    return self._send(entry, 500, b"internal error\n", {}, head)
                if rel in sim.faults.truncate:
                    entry["fault"] = "truncated"
                    return self._send(entry, 200, body, headers, head, cut=len(body) // 2)
                return self._send(entry, 200, body, headers, head)
            docs = u.documents()
            if rel not in docs:
                return self._send(entry, 404, b"not found\n", {}, head)
            data, mtime = docs[rel]
            reset = sim.faults.reset.get(rel, 0)
            if reset:
                sim.faults.reset[rel] = reset - 1 if reset > 0 else -1
        headers = {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
        etag = '"%s"' % up.sha256(data)[:20]
        modified = email.utils.formatdate(mtime, usegmt=True) if mtime < up.YEAR_2300 else \
            "Sat, 01 Jan 2300 00:00:00 GMT"
        if u.validators:
            headers["ETag"] = etag
        if u.validators or mtime >= up.YEAR_2300:
            headers["Last-Modified"] = modified
            if self.headers.get("If-None-Match") == etag or (
                    not self.headers.get("If-None-Match") and self.headers.get("If-Modified-Since") == modified):
                return self._send(entry, 304, b"", headers, True)
        status, start = 200, 0
        wanted = self.headers.get("Range", "")
        if_range = self.headers.get("If-Range")
        if wanted.startswith("bytes=") and wanted.endswith("-") and (
                if_range is None or if_range in (headers.get("ETag"), headers.get("Last-Modified"))):
            start = int(wanted[6:-1] or 0)
            if start >= len(data):
                return self._send(entry, 416, b"", {"Content-Range": "bytes */%d" % len(data)}, head)
            status = 206
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, len(data) - 1, len(data))
        body = data[start:]
        if reset:
            entry["fault"] = "reset"
            return self._send(entry, status, body, headers, head, cut=len(body) // 2, rst=True)
        return self._send(entry, status, body, headers, head)

    def _send(self, entry, status, body, headers, head, cut=None, rst=False):
        entry["status"] = status
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if head or status == 304:
            return
        payload = body if cut is None else body[:cut]
        try:
            if self.sim.faults.slow:
                for i in range(0, len(payload), 16384):
                    self.wfile.write(payload[i:i + 16384])
                    self.wfile.flush()
                    time.sleep(0.004)
            else:
                self.wfile.write(payload)
            self.wfile.flush()
        except OSError:
            self.close_connection = True
            return
        if cut is not None:
            if rst:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
