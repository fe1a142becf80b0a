"""The upstream's web server: 127.0.0.1, an ephemeral port, HTTP/1.1 with keep-alive, and
switches for the faults of a night (down, a page answering 500, a listing cut short, a slow body,
a reset connection). It logs every request, so the checks can see what was asked and answered:
for a file, also the `Range` start asked (`range`), the byte its body starts at (`start`), the
bytes of its body (`body`) and those written to the socket (`sent`), with the time after each
piece written (`progress`: (time, bytes written so far)).
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
        self.errors = {}  # file path -> [kind ('500', '503' or 'truncated'), answers left (-1: every one)]


class Trap:
    """Calls `fire` when the server sees its Nth request (counted over both origins), and holds
    every later request until `fire` returns: a kill lands at the same point of the run on any
    machine, so a seed replays exactly. A `mid` trap instead fires in the middle of the first file
    body of at least MID_BODY bytes at or after the Nth request, after dripping its first half for
    MID_DRIP seconds (past the first checkpoint), whatever N, and holds nothing: the resume bound is checked
    on a transfer the signal cut."""

    MID_BODY, MID_DRIP = 192 * 1024, 4.0

    def __init__(self, n, fire, mid=False):
        self.n, self.fire, self.seen, self.mid, self.claimed = n, fire, 0, mid, False
        self.lock, self.done = threading.Lock(), threading.Event()

    def request(self):
        with self.lock:
            self.seen += 1
            mine = self.seen == self.n
        if self.mid:
            return
        if mine:
            self.spring()
        elif self.seen > self.n:
            self.done.wait(30)

    def spring(self):
        try:
            self.fire()
        finally:
            self.done.set()

    def claim(self, size):
        """Whether a file body of `size` bytes is the one a mid trap cuts (once)."""
        with self.lock:
            if not self.mid or self.claimed or size < self.MID_BODY:
                return False
            self.claimed = True
            return True


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
            error = sim.faults.errors.get(rel)
            error = error[0] if error and error[1] != 0 else None
            if error and sim.faults.errors[rel][1] > 0:
                sim.faults.errors[rel][1] -= 1
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
        entry.update({"range": int(wanted[6:-1] or 0) if wanted.startswith("bytes=") and wanted.endswith("-")
                      and wanted[6:-1].isdigit() else None, "start": start, "size": len(data)})
        if error in ("500", "503"):
            entry["fault"] = error
            return self._send(entry, int(error), b"unavailable\n", {}, head)
        if error == "truncated" and not head and status != 304:
            entry["fault"] = "truncated"
            return self._send(entry, status, body, headers, head, cut=len(body) // 2)
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
        entry.update({"body": len(body), "sent": 0, "progress": []})
        slow = self.sim.faults.slow
        trap = self.sim.faults.trap
        cut_here = trap is not None and "size" in entry and trap.claim(len(payload))
        pieces = []
        if cut_here:  # the first half in 60 drips over MID_DRIP seconds, then the signal
            step = max(1, len(payload) // 120)
            pieces = [(i, i + step, trap.MID_DRIP / 60) for i in range(0, step * 60, step)]
            pieces.append((step * 60, step * 60, None))
        piece = 16384 if slow else 65536
        start = pieces[-1][1] if pieces else 0
        pieces += [(i, min(len(payload), i + piece), 0.004 if slow else 0) for i in range(start, len(payload), piece)]
        try:
            for a, b, pause in pieces:
                if pause is None:  # the signal, then the connection closes: the rest is never sent
                    trap.spring()
                    self.close_connection = True
                    return
                self.wfile.write(payload[a:b])
                self.wfile.flush()
                entry["sent"] = b
                entry["progress"].append((time.time(), b))
                if pause:
                    time.sleep(pause)
            self.wfile.flush()
        except OSError:
            self.close_connection = True
            return
        if cut is not None:
            if rst:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
