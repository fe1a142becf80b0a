"""The upstream a mirror follows: a generated release tree, its checksum file and signature,
the changes a maintainer makes between nights, and the listing pages a web server shows.

Everything here is decided by the seeded `random.Random` handed in; nothing reads the clock.
Paths are Python strings taken byte for byte (UTF-8): 'café' in NFC and in NFD are two files.
"""

import email.utils
import hashlib
import unicodedata
import urllib.parse

DAY = 86400
EPOCH = 1704067200  # 2024-01-01 00:00:00 UTC, night 0
YEAR_2300 = 10413792000  # 2300-01-01 00:00:00 UTC: past what seconds x 10^9 holds in 64 bits

STYLES = ["nginx", "nginx-json", "apache-table", "apache-fancy", "apache-plain", "lighttpd"]
FOLDERS = ["", "", "", "sub/", "sub/deeper/", "docs/", "ü dir/", "release 1.0/"]
NAMES = ["README", "README", "NOTES", "data.bin", "with space.txt",
         unicodedata.normalize("NFC", "café.txt"), unicodedata.normalize("NFD", "café.txt"),
         "日本語.txt", "a&b.txt", "100%.txt", "tool.tar.gz", "image.iso", "CHANGES"]


def folders_of(paths):
    """Every folder ('' and 'a/', 'a/b/', ...) the paths are in."""
    out = {""}
    for path in paths:
        parts = path.split("/")[:-1]
        for i in range(len(parts)):
            out.add("/".join(parts[: i + 1]) + "/")
    return out


def sha256(data):
    return hashlib.sha256(data).hexdigest()


class File:
    """One file as upstream serves it: its bytes and its modification time."""

    def __init__(self, data, mtime):
        self.data, self.mtime = data, mtime


class Upstream:
    """The release folder `/pub/` of one seed, and everything it ever served."""

    def __init__(self, rng, max_files=None):
        self.rng = rng
        self.night = 0
        self.style = rng.choice(STYLES)
        self.validators = rng.random() < 0.7  # ETag and Last-Modified on files and pages
        self.sums_name = "SHA256SUMS" if rng.random() < 0.8 else "SHA512SUMS"
        self.signed = rng.random() < 0.5
        self.lazy_sums = rng.random() < 0.25 # the maintainer forgets some entries
        self.far_future = rng.random() < 0.15  # some files dated 2300
        self.files = {}
        count = rng.randint(150, 320) if rng.random() < 0.15 else rng.randint(4, 30)
        for _ in range(count):
            self._add_file()
        if max_files is not None:  # shrinking: keep the first files, in name order
            self.files = dict(sorted(self.files.items())[:max_files])
        self.stable = sorted(self.files)[:3]  # named by download: tasks, never deleted
        self.sums_digests = {}  # path -> digest the published checksum file gives
        self.sums_text = b""
        self.sig = b""
        self.pending = {}  # path -> bytes already in the checksum file, not yet uploaded
        self.served = {}  # path -> every SHA-256 ever served for it
        self.entries = {}  # name in the checksum file -> every SHA-256 it ever gave
        self.history = {}  # name in the checksum file (and file path) -> the digests given, in order
        self.bare = set()  # (name, hex digest) of each bare-name entry ever published for a nested file
        self.signer = None

    def _new_bytes(self, size=None):
        rng = self.rng
        if size is None:
            roll = rng.random()
            size = (rng.randint(64 * 1024, 300 * 1024) if roll < 0.08
                    else rng.randint(1 << 20, 3 << 20) if roll < 0.1 else rng.randint(0, 4096))
        seed = rng.getrandbits(64).to_bytes(8, "little")
        block = hashlib.sha512(seed).digest()
        return (block * (size // 64 + 1))[:size]

    def _mtime(self):
        if self.far_future and self.rng.random() < 0.05:
            return YEAR_2300
        return EPOCH + self.night * DAY + self.rng.randint(0, DAY // 2)

    def _add_file(self):
        for _ in range(20):
            path = self.rng.choice(FOLDERS) + self.rng.choice(NAMES)
            if path not in self.files and not any(p.startswith(path + "/") for p in self.files):
                self.files[path] = File(self._new_bytes(), self._mtime())
                return path
        return None

    # -- the checksum file and its signature -------------------------------------------------

    def checksum_files(self):
        """The checksum file and its signature, as listed beside the files."""
        return [self.sums_name] + ([self.sums_name + ".asc"] if self.signed else [])

    def publish_sums(self, sign=True):
        """Writes the checksum file from the files as they are (and the pending uploads)."""
        algorithm = hashlib.sha256 if self.sums_name == "SHA256SUMS" else hashlib.sha512
        lines, names = [], {}
        for path in sorted(self.files):
            data = self.pending.get(path, self.files[path].data)
            name = path
            base = path.rsplit("/", 1)[-1]
            if "/" in path and self.rng.random() < 0.05 and base not in self.files and base not in names:
                name = base  # a bare-name entry for a nested file
                self.bare.add((name, algorithm(data).hexdigest()))
            if self.lazy_sums and self.rng.random() < 0.1:
                continue
            names[name] = path
            lines.append(algorithm(data).hexdigest() + "  " + name)
            self.entries.setdefault(name, set()).add(sha256(data))
            self.history.setdefault(name, []).append(algorithm(data).hexdigest())
            if name != path:  # the file's own history too: a later path entry names the same file
                self.history.setdefault(path, []).append(algorithm(data).hexdigest())
        self.sums_names = names
        self.sums_text = ("\n".join(lines) + "\n").encode()
        self.sums_digests = {path: sha256(self.pending.get(path, self.files[path].data))
                             for path in names.values()}
        self.sums_mtime = EPOCH + self.night * DAY + DAY // 2 + 60
        if sign and self.signed and self.signer:
            self.sig = self.signer(self.sums_text)

    def documents(self):
        """Every file of the folder as served now: path -> (bytes, mtime)."""
        out = {p: (f.data, f.mtime) for p, f in self.files.items()}
        out[self.sums_name] = (self.sums_text, self.sums_mtime)
        if self.signed:
            out[self.sums_name + ".asc"] = (self.sig, self.sums_mtime)
        return out

    def record_served(self):
        for path, (data, _) in self.documents().items():
            self.served.setdefault(path, set()).add(sha256(data))

    # -- changes between nights --------------------------------------------------------------

    def change(self):
        """One maintainer's change; returns a short description."""
        rng, paths = self.rng, sorted(self.files)
        kind = rng.choice(["add", "add", "delete", "replace", "replace", "sums-before", "sums-after",
                           "stale-signature", "corrupt", "restore"])
        movable = [p for p in paths if p not in self.stable]
        if kind == "add":
            path = self._add_file()
            self.publish_sums()
            return "add %r" % path
        if kind == "delete" and movable:
            path = rng.choice(movable)
            del self.files[path]
            self.publish_sums()
            return "delete %r" % path
        if kind in ("replace", "sums-after", "corrupt") and paths:
            path = rng.choice(paths)
            old = self.files[path]
            self.files[path] = File(self._new_bytes(len(old.data)), self._mtime())
            if kind == "replace":
                self.publish_sums()
            return "%s %r (same size)" % (kind, path)
        if kind == "sums-before" and paths:
            path = rng.choice(paths)
            self.pending[path] = self._new_bytes(len(self.files[path].data))
            self.publish_sums()
            return "sums-before %r" % path
        if kind == "stale-signature" and self.signed:
            self.publish_sums(sign=False)
            return "checksum file republished, signature not"
        self.finish_uploads()
        return "the maintainer finishes pending uploads and republishes"

    def finish_uploads(self):
        for path, data in self.pending.items():
            if path in self.files:
                self.files[path] = File(data, self._mtime())
        self.pending = {}
        self.publish_sums()

    # -- listings ----------------------------------------------------------------------------

    def folders(self):
        return folders_of(self.documents())

    def listing(self, folder):
        """The page the server shows for `folder` ('' or 'sub/'): (bytes, content type)."""
        docs, entries = self.documents(), {}
        for path, (data, mtime) in docs.items():
            if path.startswith(folder):
                rest = path[len(folder):]
                if "/" in rest:
                    name = rest.split("/", 1)[0] + "/"
                    entries[name] = (None, max(mtime, entries.get(name, (None, 0))[1]))
                else:
                    entries[rest] = (len(data), mtime)
        rows = sorted(entries.items(), key=lambda kv: kv[0].encode())
        return render(self.style, "/pub/" + folder, rows)


def _href(name):
    return urllib.parse.quote(name.encode(), safe="/")


def _esc(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _human(size):
    if size is None:
        return "-"
    if size < 1024:
        return str(size)
    for unit in "KMGT":
        size /= 1024
        if size < 9.95:
            return "%.1f%s" % (size, unit)
        if size < 1024:
            return "%d%s" % (round(size), unit)
    return "%dT" % size


def _date(mtime, fmt):
    import time
    return time.strftime(fmt, time.gmtime(mtime))


def render(style, url_path, rows):
    """A listing page in one server's style, after the captures in Tests/TestSupport."""
    if style == "nginx-json":
        items = []
        for name, (size, mtime) in rows:
            item = '{ "name":%s, "type":"%s", "mtime":"%s"' % (
                _json(name.rstrip("/")), "directory" if size is None else "file",
                email.utils.formatdate(mtime, usegmt=True))
            items.append(item + (' }' if size is None else ', "size":%d }' % size))
        return ("[\n" + ",\n".join(items) + "\n]\n").encode(), "application/json"
    title = "Index of " + _esc(url_path.rstrip("/") if style.startswith("apache") else url_path)
    if style == "nginx":
        lines = ['<html>', '<head><title>%s</title></head>' % title, '<body>',
                 '<h1>%s</h1><hr><pre><a href="../">../</a>' % title]
        for name, (size, mtime) in rows:
            shown = _esc(name if len(name) <= 50 else name[:47] + "..>")
            lines.append('<a href="%s">%s</a>%s %s %19s' % (
                _href(name), shown, " " * max(1, 51 - len(name)), _date(mtime, "%d-%b-%Y %H:%M"),
                "-" if size is None else size))
        lines += ['</pre><hr></body>', '</html>', '']
        return "\r\n".join(lines).encode(), "text/html"
    if style.startswith("apache"):
        head = ('<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" '
                '"http://www.w3.org/TR/html4/strict.dtd">\n<html>\n <head>\n  <title>%s</title>\n'
                ' </head>\n <body>\n<h1>%s</h1>\n' % (title, title))
        if style == "apache-plain":
            body = '<ul><li><a href="/"> Parent Directory</a></li>\n' + "".join(
                '<li><a href="%s"> %s</a></li>\n' % (_href(n), _esc(n)) for n, _ in rows) + "</ul>\n"
        elif style == "apache-fancy":
            body = ('<pre><img src="/icons/blank.gif" alt="Icon "> <a href="?C=N;O=D">Name</a>'
                    '                    <a href="?C=M;O=A">Last modified</a>      <a href="?C=S;O=A">'
                    'Size</a>  <a href="?C=D;O=A">Description</a><hr><img src="/icons/back.gif" '
                    'alt="[PARENTDIR]"> <a href="/">Parent Directory</a>      -   \n')
            for name, (size, mtime) in rows:
                body += '<img src="/icons/%s.gif" alt="[   ]"> <a href="%s">%s</a> %s %s %5s  \n' % (
                    "folder" if size is None else "binary", _href(name), _esc(name),
                    " " * max(1, 40 - len(name)), _date(mtime, "%Y-%m-%d %H:%M"), _human(size))
            body += "<hr></pre>\n"
        else:
            body = ('  <table>\n   <tr><th valign="top"><img src="/icons/blank.gif" alt="[ICO]"></th>'
                    '<th><a href="?C=N;O=D">Name</a></th><th><a href="?C=M;O=A">Last modified</a></th>'
                    '<th><a href="?C=S;O=A">Size</a></th><th><a href="?C=D;O=A">Description</a></th></tr>\n'
                    '   <tr><th colspan="5"><hr></th></tr>\n<tr><td valign="top"><img src="/icons/back.gif" '
                    'alt="[PARENTDIR]"></td><td><a href="/">Parent Directory</a></td><td>&nbsp;</td>'
                    '<td align="right">  - </td><td>&nbsp;</td></tr>\n')
            for name, (size, mtime) in rows:
                body += ('<tr><td valign="top"><img src="/icons/binary.gif" alt="[   ]"></td><td><a href="%s">'
                         '%s</a></td><td align="right">%s  </td><td align="right">%4s</td><td>&nbsp;</td></tr>\n'
                         % (_href(name), _esc(name), _date(mtime, "%Y-%m-%d %H:%M"), _human(size)))
            body += '   <tr><th colspan="5"><hr></th></tr>\n</table>\n'
        return (head + body + "</body></html>\n").encode(), "text/html;charset=UTF-8"
    # lighttpd
    page = ('<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n<title>%s</title>\n</head>\n<body>\n'
            '<h2>%s</h2>\n<div class="list">\n<table summary="Directory Listing" cellpadding="0" '
            'cellspacing="0">\n<thead><tr><th class="n">Name</th><th class="m">Last Modified</th>'
            '<th class="s">Size</th><th class="t">Type</th></tr></thead>\n<tbody>\n'
            '<tr class="d"><td class="n"><a href="../">..</a>/</td><td class="m">&nbsp;</td>'
            '<td class="s">- &nbsp;</td><td class="t">Directory</td></tr>\n' % (title, title))
    for name, (size, mtime) in rows:
        folder = size is None
        page += ('<tr%s><td class="n"><a href="%s">%s</a>%s</td><td class="m">%s</td><td class="s">%s</td>'
                 '<td class="t">%s</td></tr>\n' % (
                     ' class="d"' if folder else "", _href(name), _esc(name.rstrip("/")),
                     "/" if folder else "", _date(mtime, "%Y-%b-%d %H:%M:%S"),
                     "- &nbsp;" if folder else _human(size), "Directory" if folder else "application/octet-stream"))
    page += '</tbody>\n</table>\n</div>\n<div class="foot">lighttpd/1.4.69</div>\n</body>\n</html>\n'
    return page.encode(), "text/html;charset=utf-8"


def _json(text):
    import json
    return json.dumps(text, ensure_ascii=False)
