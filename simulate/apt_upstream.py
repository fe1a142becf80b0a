"""The upstream of `--apt`: a small signed APT repository that a maintainer (and, some nights, an
attacker) changes between nights. Served by server.Server at /pub/ as any Upstream: `documents()`
is every file it serves now (path -> (bytes, mtime)).

Everything but the Release's Date (which must be near the clock: batchdl refuses a Date more than
10 days ahead) is decided by the seeded `random.Random` handed in.
"""

import email.utils
import gzip
import hashlib
import lzma
import time

from .upstream import DAY, sha256, folders_of

WORDS = "tool library data client server daemon utility parser archive editor driver plugin".split()


def date_text(stamp):
    return email.utils.formatdate(stamp, usegmt=True).replace("GMT", "UTC")


def release_fields(text):
    """A Release's fields (the SHA256 field as path -> (size, digest)) from its bytes."""
    fields, listed, in_sha = {}, {}, False
    for line in text.decode("utf-8", "replace").splitlines():
        if line.startswith(" ") and in_sha:
            parts = line.split()
            if len(parts) == 3:
                listed[parts[2]] = (int(parts[1]), parts[0])
            continue
        in_sha = False
        key, _, value = line.partition(":")
        if key == "SHA256":
            in_sha = True
        elif key:
            fields[key] = value.strip()
    fields["SHA256"] = listed
    return fields


def parse_date(text):
    try:
        return int(email.utils.parsedate_to_datetime(text).timestamp())
    except (TypeError, ValueError):
        return None


def stanzas(text):
    """Filename -> (Size, SHA256) of a Packages text."""
    out = {}
    for block in text.decode("utf-8", "replace").split("\n\n"):
        fields = {}
        for line in block.splitlines():
            if line and not line.startswith(" ") and ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if "Filename" in fields:
            out[fields["Filename"]] = (int(fields.get("Size", -1)), fields.get("SHA256", ""))
    return out


def decompress(name, data):
    if name.endswith(".xz"):
        return lzma.decompress(data)
    if name.endswith(".gz"):
        return gzip.decompress(data)
    return data


class AptUpstream:
    """/pub/debian/: dists/SUITE/{InRelease,Release,Release.gpg}, the Packages of each component
    and architecture (plain, .gz, .xz; by-hash copies kept as a real archive keeps them) and pool/."""

    ROOT = "debian/"

    def __init__(self, rng, keys, max_packages=None):
        self.rng, self.keys, self.night = rng, keys, 0
        self.style, self.validators = "nginx", True  # what server.Server asks of an upstream
        self.suites = ["stable"] if rng.random() < 0.5 else ["stable", "testing"]
        self.components = ["main"] if rng.random() < 0.7 else ["main", "contrib"]
        self.archs = ["amd64"] if rng.random() < 0.4 else ["amd64", "arm64"]
        self.by_hash = rng.random() < 0.7
        self.plain_served = rng.random() < 0.5  # Debian's mirrors list Packages but do not serve it
        self.files = {}  # path below ROOT -> (bytes, mtime) served now
        self.genuine = {}  # path -> every SHA-256 upstream published for it (never a tampered one)
        self.pool = {}  # pool path -> its bytes (a pool path's bytes never change upstream)
        self.suite_pkgs = {s: {} for s in self.suites}  # suite -> (component, name) -> version
        self.releases = {}  # suite -> the Release text published last (the genuine one)
        self.dates = {}  # suite -> its last genuine Date
        self.saved = {}  # path -> its genuine (bytes, mtime) while tonight serves others
        self.forged = set()  # SHA-256 of roots signed by the key that no mirror may publish (rollbacks)
        self.names_made = 0
        count = rng.randint(10, 40)
        if max_packages is not None:
            count = min(count, max_packages)
        for _ in range(count):
            self._new_package(self.suites)
        self.publish_all()

    # -- packages ----------------------------------------------------------------------------

    def _new_package(self, suites):
        self.names_made += 1
        name = "%s%s%d" % (self.rng.choice(WORDS), self.rng.choice(["", "-", "lib"]), self.names_made)
        component = self.rng.choice(self.components)
        for s in suites:
            self.suite_pkgs[s][(component, name)] = 1
        return name

    def pool_path(self, component, name, version, arch):
        return "pool/%s/%s/%s/%s_1.%d-1_%s.deb" % (component, name[0], name, name, version, arch)

    def pool_bytes(self, path):
        if path not in self.pool:
            rng = self.rng
            size = rng.randint(200 * 1024, 320 * 1024) if rng.random() < 0.06 else rng.randint(100, 6000)
            block = hashlib.sha512(rng.getrandbits(64).to_bytes(8, "little")).digest()
            self.pool[path] = (block * (size // 64 + 1))[:size]
        return self.pool[path]

    def stanza(self, component, name, version, arch):
        path = self.pool_path(component, name, version, arch)
        data = self.pool_bytes(path)
        return ("Package: %s\nVersion: 1.%d-1\nArchitecture: %s\nMaintainer: Sim <sim@sim.invalid>\n"
                "Description: the %s %s\nFilename: %s\nSize: %d\nSHA256: %s\n" % (
                    name, version, arch, name, component, path, len(data), sha256(data))), path

    # -- publication -------------------------------------------------------------------------

    def dists(self, suite):
        return "dists/%s/" % suite

    def _put(self, path, data, mtime):
        self.files[path] = (data, mtime)
        self.genuine.setdefault(path, set()).add(sha256(data))

    def mtime(self):
        return int(time.time())

    def publish(self, suite, stamp):
        """Writes the suite's indexes, its Release with Date `stamp`, and signs it."""
        mtime, listed, named = self.mtime(), [], set()
        for component in self.components:
            for arch in self.archs:
                parts = []
                for (c, name), version in sorted(self.suite_pkgs[suite].items(), key=lambda kv: kv[0][1]):
                    if c == component:
                        text, path = self.stanza(c, name, version, arch)
                        parts.append(text)
                        named.add(path)
                        self._put(path, self.pool[path], mtime) if path not in self.files else None
                text = "\n".join(parts).encode()
                folder = "%s/binary-%s/" % (component, arch)
                for name, data in (("Packages", text), ("Packages.gz", gzip.compress(text, mtime=0)),
                                   ("Packages.xz", lzma.compress(text, preset=1))):
                    listed.append((folder + name, len(data), sha256(data)))
                    if name == "Packages" and not self.plain_served:
                        continue
                    self._put(self.dists(suite) + folder + name, data, mtime)
                    if self.by_hash:
                        self._put(self.dists(suite) + folder + "by-hash/SHA256/" + sha256(data), data, mtime)
        release = ("Origin: sim\nLabel: sim\nSuite: %s\nCodename: %s\nDate: %s\nArchitectures: %s\n"
                   "Components: %s\n%sDescription: simulated repository\nSHA256:\n" % (
                       suite, suite, date_text(stamp), " ".join(self.archs), " ".join(self.components),
                       "Acquire-By-Hash: yes\n" if self.by_hash else "")
                   + "".join(" %s %16d %s\n" % (d, n, p) for p, n, d in listed)).encode()
        self.releases[suite], self.dates[suite] = release, stamp
        self.sign(suite, release, mtime)
        # Pool files no suite names any more go (the archive's own cleanup).
        alive = self.named_pool()
        for path in [p for p in self.files if p.startswith("pool/") and p not in alive]:
            del self.files[path]

    def sign(self, suite, release, mtime, genuine=True):
        user = "release@sim.invalid"
        inrelease = self.keys.gpg("--local-user", user, "--digest-algo", "SHA256", "--clearsign", data=release)
        detached = self.keys.gpg("--local-user", user, "--digest-algo", "SHA256", "--armor", "--detach-sign",
                                 data=release)
        for name, data in (("Release", release), ("Release.gpg", detached), ("InRelease", inrelease)):
            path = self.dists(suite) + name
            if genuine:
                self._put(path, data, mtime)
            else:
                self.saved.setdefault(path, self.files[path])
                self.files[path] = (data, mtime)
                self.forged.add(sha256(data))

    def publish_all(self, suites=None):
        stamp = max([int(time.time())] + [d + 1 for d in self.dates.values()])
        for suite in suites or self.suites:
            self.publish(suite, stamp)

    def named_pool(self, suites=None, components=None, archs=None):
        out = set()
        for s in suites or self.suites:
            for (c, name), version in self.suite_pkgs[s].items():
                if components and c not in components:
                    continue
                for arch in archs or self.archs:
                    out.add(self.pool_path(c, name, version, arch))
        return out

    # -- the nights --------------------------------------------------------------------------

    def change(self):
        """One maintainer's change to one suite's packages (published by `publish_all`)."""
        rng = self.rng
        suite = rng.choice(self.suites)
        pkgs = self.suite_pkgs[suite]
        kind = rng.choice(["update", "update", "remove", "add"] + (["migrate"] if len(self.suites) > 1 else []))
        if kind == "update" and pkgs:
            key = rng.choice(sorted(pkgs))
            pkgs[key] += 1 + self.night  # a version no suite had
            return suite, "%s: %s updated to 1.%d-1" % (suite, key[1], pkgs[key])
        if kind == "remove" and len(pkgs) > 2:
            key = rng.choice(sorted(pkgs))
            del pkgs[key]
            return suite, "%s: %s removed" % (suite, key[1])
        if kind == "migrate":  # testing's version of a package goes to stable too (a shared pool file)
            key = rng.choice(sorted(self.suite_pkgs["testing"]))
            self.suite_pkgs["stable"][key] = self.suite_pkgs["testing"][key]
            return "stable", "%s migrated to stable" % key[1]
        name = self._new_package([suite])
        return suite, "%s: %s added" % (suite, name)

    def rollback(self, suite, before):
        """Serves the suite's last Release, with a Date older than `before`, signed again (a replayed
        or rolled-back root that the key really signed)."""
        text = self.releases[suite].decode()
        old = [line for line in text.splitlines() if line.startswith("Date: ")][0]
        stamp = before - DAY * self.rng.randint(1, 3)
        release = text.replace(old, "Date: " + date_text(stamp)).encode()
        self.sign(suite, release, self.mtime(), genuine=False)
        return "%s: Release re-signed with the older Date %s" % (suite, date_text(stamp))

    def tamper(self, path):
        """Serves other bytes at `path` tonight (an index or a pool file), by-hash copy too."""
        data, mtime = self.files[path]
        self.saved.setdefault(path, (data, mtime))
        forged = bytearray(data)
        if forged:
            forged[len(forged) // 2] ^= 0x5A
        else:
            forged = bytearray(b"x")
        if self.rng.random() < 0.3:
            forged += b"\n"
        self.files[path] = (bytes(forged), mtime)
        digest = sha256(data)
        for other in list(self.files):
            if other.endswith("/by-hash/SHA256/" + digest):
                self.saved.setdefault(other, self.files[other])
                self.files[other] = (bytes(forged), mtime)

    def tamper_inrelease(self, suite):
        path = self.dists(suite) + "InRelease"
        data, mtime = self.files[path]
        self.saved.setdefault(path, (data, mtime))
        self.files[path] = (data.replace(b"Label: sim", b"Label: evil", 1), mtime)

    def tamper_detached(self, suite):
        """A Release.gpg that does not verify the Release (InRelease stays good)."""
        path = self.dists(suite) + "Release.gpg"
        self.saved.setdefault(path, self.files[path])
        self.sign(suite, self.files[self.dists(suite) + "Release"][0] + b"\n", self.mtime(), genuine=False)
        for name in ("Release", "InRelease"):
            self.files[self.dists(suite) + name] = self.saved.pop(self.dists(suite) + name)
        self.forged.discard(sha256(self.files[self.dists(suite) + "InRelease"][0]))

    def drop_inrelease(self, suite):
        """Tonight the suite has Release and Release.gpg only (as older repositories)."""
        path = self.dists(suite) + "InRelease"
        self.saved.setdefault(path, self.files[path])
        del self.files[path]

    def heal(self):
        """The night after a tamper: upstream serves its genuine bytes again."""
        for path, value in self.saved.items():
            if path in self.files or not path.startswith("pool/"):
                self.files[path] = value
        self.saved = {}

    # -- what server.Server serves -------------------------------------------------------------

    def documents(self):
        return {self.ROOT + p: v for p, v in self.files.items()}

    def folders(self):
        return folders_of(self.documents())

    def listing(self, folder):
        return b"<html><body>no listing</body></html>\n", "text/html"
