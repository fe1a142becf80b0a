"""What an APT mirror promises, checked after every night of `--apt` (and the first during it, by
`AptReader`). The numbers are those of docs/testing.md, "The life of an APT mirror":

1. The mirror is always a consistent repository: for each suite it publishes, its root (InRelease,
   else Release with Release.gpg) verifies with gpgv against the keyring; every index file that
   root lists and the mirror holds has the listed size and SHA-256 (with Acquire-By-Hash, the
   by-hash copy of each listed index is there); every pool file the mirror's Packages name is
   there with its stanza's Size and SHA256: an apt client never sees a hash-sum mismatch. After a
   night whose run ended by itself, Release is InRelease's signed text and Release.gpg verifies
   it. During a run, and after a signalled one, an index at its own path may already hold the
   bytes upstream's newer Release lists (indexes are published before the roots; clients of a
   by-hash repository never read those paths).
2. Exit 0 means the mirror's InRelease, Release and Release.gpg are upstream's of that night,
   every index variant upstream serves for the suites, components and architectures asked is
   there with its bytes, and every pool file they name.
3. A night with a rolled-back Release, a tampered InRelease, index or pool file that the run had
   to fetch, or a fault on every attempt at a file the run asked for, does not exit 0 (a fault
   retried to success may). The Date of a suite's published root never goes back, and the mirror
   never holds a rolled-back or tampered root.
4. Every file in the mirror holds bytes upstream published for that path (never a tampered one);
   nothing is written outside dest, the state folder and the outputs; no `*.batchdl-part` is left
   after a night that exited 0.
5. Without `prune:` nothing but the dists/ tree's retired roots and index files is ever deleted;
   with it, a pool file an index the mirror published named, that no asked index names any more,
   goes no sooner than keep_removed after the night that first saw it unnamed, and is gone after
   a night exiting 0 that began more than keep_removed after the first night exiting 0 that no
   longer named it. Nothing still named is deleted, nor the user's file.
6. Exit status is never 0 when upstream was down.
7. batchdl never dies by a signal but the SIGKILL sent, never hangs, and a SIGTERM exits 3 (or
   the run's own status when it ended first).
"""

import hashlib
import os
import subprocess
import tempfile
import threading

from .apt_upstream import decompress, parse_date, release_fields, stanzas
from .invariants import USER_FILE, tree
from .upstream import sha256

SLACK = 1.5  # seconds: keep_removed counts whole seconds, and a night's times are taken around it


def mirror_files(sim):
    return tree(sim.dest) if os.path.isdir(sim.dest) else {}


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


_verified = {}


def gpgv(keyring, data, detached=None):
    """The signed text of a clear-signed `data` (or `data` when `detached` verifies it), or None."""
    key = (sha256(data), sha256(detached) if detached is not None else None)
    if key in _verified:
        return _verified[key]
    with tempfile.TemporaryDirectory() as folder:
        signed = os.path.join(folder, "signed")
        with open(signed, "wb") as f:
            f.write(data)
        if detached is not None:
            sig = os.path.join(folder, "sig")
            with open(sig, "wb") as f:
                f.write(detached)
            args = ["gpgv", "--keyring", keyring, sig, signed]
        else:
            args = ["gpgv", "--keyring", keyring, "--output", os.path.join(folder, "out"), signed]
        ok = subprocess.run(args, capture_output=True).returncode == 0
        out = (read(os.path.join(folder, "out")) if detached is None else data) if ok else None
    _verified[key] = out
    return out


def client_root(sim, suite):
    """What an apt client reads as the suite's Release: (name, signed text or None, raw bytes)."""
    dists = os.path.join(sim.mirror_root, "dists", suite)
    inrelease = read(os.path.join(dists, "InRelease"))
    if inrelease is not None:
        return "InRelease", gpgv(sim.keyring, inrelease), inrelease
    release, sig = read(os.path.join(dists, "Release")), read(os.path.join(dists, "Release.gpg"))
    if release is None:
        return None, None, None
    return "Release", gpgv(sim.keyring, release, sig) if sig is not None else None, release


def root_date(sim, suite):
    _, text, _ = client_root(sim, suite)
    return parse_date(release_fields(text).get("Date", "")) if text else None


class Digests:
    def __init__(self):
        self.cache = {}

    def of(self, path):
        st = os.stat(path)
        key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
        if key not in self.cache:
            with open(path, "rb") as f:
                self.cache[key] = (st.st_size, hashlib.sha256(f.read()).hexdigest())
        return self.cache[key]


def consistent(sim, settled, digests, named=None):
    """Invariant 1 over the mirror as it is now: the problems, and the roots read (to see whether
    they changed during the look). `named`, when given, gets the pool files the mirror's published
    indexes name (what its clients may ask for)."""
    problems, roots, u = [], {}, sim.upstream
    for suite in sim.suites:
        dists = os.path.join(sim.mirror_root, "dists", suite)
        name, text, raw = client_root(sim, suite)
        roots[suite] = raw
        if name is None:
            continue
        if text is None and not settled and name == "Release" and raw == u.releases[suite]:
            continue  # Release placed, Release.gpg next: a mirror without InRelease yet, mid-publication
        if text is None:
            problems.append("dists/%s/%s does not verify with gpgv against the keyring" % (suite, name))
            continue
        fields = release_fields(text)
        listed = fields["SHA256"]
        newer = release_fields(u.releases[suite])["SHA256"]  # what upstream's Release lists tonight
        by_hash = fields.get("Acquire-By-Hash") == "yes"
        for path, (size, digest) in sorted(listed.items()):
            full = os.path.join(dists, path)
            try:
                have = digests.of(full)
            except OSError:
                have = None
            wanted = [(size, digest)] + ([] if settled else [newer.get(path)])
            if not settled and sim.unsettled and have is not None and have[1] in u.genuine.get(sim.upstream.dists(suite) + path, ()):
                wanted.append(have)  # after a signal: an index of a later Release, its root not yet placed
            if have is not None and have not in wanted:
                problems.append("dists/%s/%s does not match the %s (size %d, sha256 %s...)" % (
                    suite, path, name, have[0], have[1][:12]))
            folder = path.rsplit("/", 1)[0]
            asked = any(folder == "%s/binary-%s" % (c, a) for c in sim.components for a in sim.archs)
            if by_hash and asked and have is not None:
                copy = os.path.join(dists, folder, "by-hash", "SHA256", digest)
                try:
                    if digests.of(copy) != (size, digest):
                        problems.append("dists/%s/%s/by-hash/SHA256/%s... has other bytes" % (suite, folder, digest[:12]))
                except OSError:
                    problems.append("dists/%s/%s: the %s lists it, its by-hash copy is missing" % (suite, path, name))
        for c in sim.components:
            for a in sim.archs:
                folder = "%s/binary-%s/" % (c, a)
                text_of = None
                for variant in ("Packages.xz", "Packages.gz", "Packages"):
                    if folder + variant not in listed:
                        continue
                    size, digest = listed[folder + variant]
                    where = os.path.join(dists, folder, "by-hash", "SHA256", digest) if by_hash else \
                        os.path.join(dists, folder, variant)
                    data = read(where)
                    if data is not None and sha256(data) == digest:
                        text_of = decompress(variant, data)
                        break
                held = os.path.isdir(os.path.join(dists, folder))  # an architecture taken back: not yet
                if text_of is None:
                    if settled and held:
                        problems.append("dists/%s/%s: no Packages the %s lists is readable" % (suite, folder, name))
                    continue
                for filename, (size, digest) in sorted(stanzas(text_of).items()):
                    if named is not None:
                        named.add(filename)
                    try:
                        have = digests.of(os.path.join(sim.mirror_root, filename))
                    except OSError:
                        problems.append("%s (named by dists/%s/%sPackages) is missing" % (filename, suite, folder))
                        continue
                    if have != (size, digest):
                        problems.append("%s has other bytes than dists/%s/%sPackages names" % (filename, suite, folder))
        if settled and name == "InRelease":
            release, sig = read(os.path.join(dists, "Release")), read(os.path.join(dists, "Release.gpg"))
            if release is not None and release != text:
                problems.append("dists/%s/Release is not InRelease's signed text" % suite)
            elif release is not None and (sig is None or gpgv(sim.keyring, release, sig) is None):
                problems.append("dists/%s/Release.gpg does not verify Release" % suite)
    return problems, roots


class AptReader(threading.Thread):
    """Invariant 1 during the run, as a client reading the mirror over and over would see it; a
    look counts only if no root changed while it looked."""

    def __init__(self, sim, night):
        super().__init__(daemon=True)
        self.sim, self.night, self.stop, self.digests = sim, night, threading.Event(), Digests()

    def run(self):
        while not self.stop.wait(0.03):
            problems, roots = consistent(self.sim, False, self.digests)
            if problems and all(client_root(self.sim, s)[2] == roots[s] for s in roots):
                self.night.violations.append((1, "during the run, " + problems[0]))
                return


def check_processes(night):
    for proc in night.processes:
        if proc.hung:
            yield 7, "%s hung past %ds and was killed" % (proc.what, proc.timeout)
        elif proc.rc < 0 and not (proc.killed and -proc.rc == proc.killed):
            yield 7, "%s died by signal %d (%s)" % (proc.what, -proc.rc, proc.last_stderr())
        elif night.signalled == "term" and proc.rc not in (0, 1, 3, 6):
            yield 7, "SIGTERM: exit %d, want 3" % proc.rc
        elif night.signalled is None and proc.rc not in (0, 1, 3, 6):
            yield 7, "%s exited %d (%s)" % (proc.what, proc.rc, proc.last_stderr())


def check_exit_zero(sim, night, after):
    if night.rc != 0:
        return
    if night.must_fail:
        yield 6 if night.must_fail == "upstream was down" else 3, "exit 0 although %s" % night.must_fail
        return
    u, root = sim.upstream, sim.mirror_root
    for suite in sim.suites:
        for name in ("InRelease", "Release", "Release.gpg"):
            path = os.path.join(root, "dists", suite, name)
            if u.dists(suite) + name not in u.files:  # no InRelease tonight: a client reads Release
                if path in after and gpgv(sim.keyring, read(path) or b"") != u.files[u.dists(suite) + "Release"][0]:
                    yield 2, "exit 0 but dists/%s/%s is left from an older Release" % (suite, name)
                continue
            if after.get(path) != sha256(u.files[u.dists(suite) + name][0]):
                yield 2, "exit 0 but dists/%s/%s is not upstream's of tonight" % (suite, name)
        listed = release_fields(u.releases[suite])["SHA256"]
        for path, (size, digest) in sorted(listed.items()):
            folder = path.rsplit("/", 1)[0]
            if not any(folder == "%s/binary-%s" % (c, a) for c in sim.components for a in sim.archs):
                continue
            if u.dists(suite) + path not in u.files:
                continue  # listed, not served (Debian's uncompressed Packages)
            if after.get(os.path.join(root, "dists", suite, path)) != digest:
                yield 2, "exit 0 but dists/%s/%s is missing or not the Release's" % (suite, path)
            if u.by_hash and after.get(os.path.join(root, "dists", suite, folder, "by-hash", "SHA256", digest)) != digest:
                yield 2, "exit 0 but the by-hash copy of dists/%s/%s is missing" % (suite, path)
    for path in sorted(sim.named):
        if after.get(os.path.join(root, path)) != sha256(u.pool[path]):
            yield 2, "exit 0 but %s is missing or not upstream's" % path
            break


def check_files(sim, night, after, canary_before):
    u, prefix = sim.upstream, sim.mirror_root.rstrip("/") + "/"
    for path, digest in sorted(after.items()):
        if os.path.basename(path) == USER_FILE and os.path.dirname(path) == sim.dest:
            continue
        if path.endswith(".batchdl-part"):
            if night.rc == 0:
                yield 4, "%s left after a night that exited 0" % os.path.relpath(path, sim.dest)
            continue
        rel = path[len(prefix):] if path.startswith(prefix) else None
        if rel is None or digest not in u.genuine.get(rel, ()) or digest in u.forged:
            yield 4, "%s holds bytes upstream never published there" % os.path.relpath(path, sim.dest)
    if sim.canary() != canary_before:
        yield 4, "a file outside dest, the state folder and the outputs changed"


def check_dates(sim, night):
    for suite in sim.suites:
        date = root_date(sim, suite)
        last = sim.dates.get(suite)
        if last is not None and (date is None or date < last):
            yield 3, "dists/%s: the published Date went back (or the root went away)" % suite
        if date is not None:
            sim.dates[suite] = date


def check_prune(sim, night, before, after):
    prefix = sim.mirror_root.rstrip("/") + "/"
    gone = sorted(p for p in set(before) - set(after) if not p.endswith(".batchdl-part"))
    for path in gone:
        rel = path[len(prefix):] if path.startswith(prefix) else path
        if os.path.basename(path) == USER_FILE:
            yield 5, "the user's file was deleted"
        elif sim.prune is None and not rel.startswith("dists/"):
            # Without prune, only the dists/ tree changes: roots upstream dropped and index files
            # the new Release lists that the mirror no longer keeps go with their suite's publication.
            yield 5, "%s was deleted from a session without prune" % rel
        elif rel in sim.named:
            yield 5, "%s was deleted although an asked index names it" % rel
        elif rel.startswith("pool/") and rel in sim.removed_at and rel in sim.published_named \
                and night.ended < sim.removed_at[rel] + sim.keep - SLACK:
            # keep_removed keeps what an index the mirror published named: a file fetched on a
            # night whose suite was not published was never offered to a client.
            yield 5, "%s was deleted %.1f s after its removal, keep_removed is %d s" % (
                rel, night.ended - sim.removed_at[rel], sim.keep)
    if sim.prune is None or night.rc != 0:
        return
    for rel, good_end in sorted(sim.first_good_end.items()):
        if night.started > good_end + sim.keep + SLACK and os.path.join(prefix, rel) in after:
            yield 5, "%s is still there %.1f s after the first good night without it (keep_removed %d s)" % (
                rel, night.started - good_end, sim.keep)
            break


def check_all(sim, night, before, after, canary_before):
    # A signal may land between a suite's indexes and its roots: until a night exits 0, an index
    # at its own path may hold a later Release's bytes (as on any mirror that apt's order fills).
    settled = night.signalled is None and not sim.unsettled
    named = set()
    problems, _ = consistent(sim, settled, Digests(), named)
    for check in (check_processes(night), ((1, p) for p in problems[:3]), check_exit_zero(sim, night, after),
                  check_files(sim, night, after, canary_before), check_dates(sim, night),
                  check_prune(sim, night, before, after)):
        yield from check
    # Named by what the mirror publishes now: what the next night's prune must keep.
    sim.published_named |= named
    yield from night.violations
