"""What a mirror promises, checked after every night (and 4 during it, by `Reader`). Each check
returns (invariant, message) pairs; the numbers are those of docs/testing.md:

1. batchdl never dies by a signal and never hangs.
2. Every file at a destination holds bytes upstream served for that path, and, when a checksum
   file covers it, bytes an entry for that path (or its bare name) gave: never another file's.
3. Exit 0 means the mirror equals upstream's listed set as of that night, and that every document
   (listing page, checksum file, signature) was fetched: a night on which one failed is not 0.
   With space again after a full disk, nothing fails for space.
4. A mirrored checksum file that the manifest checks with (`checksums:`), placed this night, names
   no file the mirror lacks or holds otherwise (not promised by a sharded run: each shard places
   it after its own files only). During the run, each file such a checksum file names is there,
   with the entry's bytes or newer ones upstream's checksum file gave later. batchdl never places
   a listing page (pages are documents, kept in the state folder), so there is no index page to
   read: a page in a dest would be a file no task named (2).
5. Prune deletes only files upstream no longer lists, in a pruning session that did not fail in
   the run that pruned,
   never more than max_delete, never the user's file; no file upstream still lists is lost.
6. Nothing is written outside the dests, the state folder and the named outputs (the canary).
7. A quiet night (no upstream change, no fault, the night before exited 0) sends only the
   documents' requests: no file is fetched again. Across a signalled run and the run after it,
   no file is sent twice beyond the resume bound (`check_resume`).
8. The exit code, the report and the metrics agree with each other and with the disk; a second
   run started during a run exits 4; a damaged state folder exits 5 and sends nothing.
9. The secret of the manifest's header is in no file written and in no request to the mirror
   origin.
"""

import base64
import hashlib
import json
import os
import re
import threading

from .upstream import sha256

USER_FILE = "USER-NOTE.txt"


def digest(path):
    with open(path, "rb") as f:
        return sha256(f.read())


def tree(root, skip=()):
    """path -> SHA-256 of every regular file under root, leaving out the folders in `skip`."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skip]
        for name in files:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                out[path] = digest(path)
    return out


def mirror_files(sim):
    """The files in every dest (partial files aside): path -> SHA-256."""
    out = {}
    for s in sim.manifest.sessions:
        if os.path.isdir(s.dest_path):
            out.update({p: d for p, d in tree(s.dest_path).items() if not p.endswith(".batchdl-part")})
    return out


def check_processes(night):
    for proc in night.processes:
        if proc.hung:
            yield 1, "%s hung past %ds and was killed" % (proc.what, proc.timeout)
        elif proc.rc < 0 and not (proc.killed and -proc.rc == proc.killed):
            yield 1, "%s died by signal %d (%s)" % (proc.what, -proc.rc, proc.last_stderr())


def check_bytes(sim, after):
    u = sim.upstream
    for path, dig in sorted(after.items()):
        if os.path.basename(path) == USER_FILE:
            continue
        sources = sim.ever_map.get(path)
        if not sources:
            yield 2, "%s is a file no task ever named" % sim.show(path)
            continue
        served = set().union(*(u.served.get(p, set()) for p, _ in sources))
        if dig not in served:
            yield 2, "%s holds bytes upstream never served for %s" % (
                sim.show(path), " or ".join(sorted(repr(p) for p, _ in sources)))
            continue
        covered = [p for p, checked in sources if checked]
        if covered:
            given = set()
            for p in covered:
                given |= u.entries.get(p, set()) | u.entries.get(p.rsplit("/", 1)[-1], set())
            if dig not in given:
                yield 2, "%s holds bytes no checksum entry for %r ever gave" % (sim.show(path), covered[0])
        owner = sim.owner(path)
        if owner and owner.max_size and os.path.getsize(path) > owner.max_size:
            yield 2, "%s is larger than the session's max_size" % sim.show(path)


def check_exit_zero(sim, night, after):
    if night.rc != 0:
        return
    if night.document_failed:
        yield 3, "exit 0 although %s" % night.document_failed
    for path, (upath, s, t) in sorted(sim.expected.items(), key=lambda kv: kv[0]):
        if path not in after:
            yield 3, "exit 0 but %s (upstream %r) is missing" % (sim.show(path), upath)
            continue
        now = sha256(sim.upstream.documents()[upath][0])
        if after[path] != now and not sim.stale_allowed(path, upath, t, after[path]):
            yield 3, "exit 0 but %s is not upstream's current %r" % (sim.show(path), upath)


def check_mirrored_sums(sim, before, after):
    u = sim.upstream
    if sim.manifest.shards:
        return  # each shard places the checksum file after its own files only (docs/manifest.md)
    algorithm = hashlib.sha256 if u.sums_name == "SHA256SUMS" else hashlib.sha512
    for s in sim.manifest.sessions:
        for t in s.tasks:
            # Only a checksum file the manifest checks with (`checksums:`) is batchdl's to hold
            # back: one merely mirrored is upstream's own, consistent or not.
            if t.kind != "index" or not t.checksums:
                continue
            folder = os.path.join(s.dest_path, t.to)
            sums = os.path.join(folder, u.sums_name)
            if sums not in after or before.get(sums) == after[sums]:
                continue
            with open(sums, "rb") as f:
                lines = f.read().decode("utf-8", "surrogateescape").splitlines()
            for line in lines:
                hexdigest, _, name = line.partition("  ")
                if name.count("/") >= t.depth or ("/" not in name and (name not in u.files or (name, hexdigest) in u.bare)):
                    continue
                path = os.path.join(folder, name)
                if path not in after:
                    yield 4, "the %s placed this night names %r, which the mirror lacks" % (u.sums_name, name)
                else:
                    with open(path, "rb") as f:
                        if algorithm(f.read()).hexdigest() != hexdigest:
                            yield 4, "the %s placed this night names %r with other bytes than the mirror's" % (
                                u.sums_name, name)


class Reader(threading.Thread):
    """Invariant 4 during the run: a reader of the mirror that, over and over, reads each mirrored
    checksum file the manifest checks with and each file it names. A file named must be there,
    with the entry's bytes or bytes a later checksum file of upstream gave for it: a mirror
    places a file before the checksum file that names its new bytes (no mirror swaps both at
    once), and holds that checksum file back while another file fails. What it saw counts only
    if the checksum file is unchanged after the look."""

    def __init__(self, sim, night):
        super().__init__(daemon=True)
        self.sim, self.night, self.stop, self.cache = sim, night, threading.Event(), {}
        u = sim.upstream
        self.algorithm = hashlib.sha256 if u.sums_name == "SHA256SUMS" else hashlib.sha512
        self.watched = [(os.path.join(s.dest_path, t.to), t.depth) for s in sim.manifest.sessions
                        for t in s.tasks if t.kind == "index" and t.checksums and not sim.manifest.shards]

    def run(self):
        while self.watched and not self.stop.wait(0.02):
            for folder, depth in self.watched:
                problem = self.look(folder, depth)
                if problem:
                    self.night.extra_violations.append((4, "during the run, " + problem))
                    return

    def digest(self, path):
        st = os.stat(path)
        key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
        if key not in self.cache:
            with open(path, "rb") as f:
                self.cache[key] = self.algorithm(f.read()).hexdigest()
        return self.cache[key]

    def look(self, folder, depth):
        sums = os.path.join(folder, self.sim.upstream.sums_name)
        try:
            with open(sums, "rb") as f:
                data = f.read()
        except OSError:
            return None
        problem = None
        for line in data.decode("utf-8", "surrogateescape").splitlines():
            hexdigest, _, name = line.partition("  ")
            # A bare-name entry names a nested file (docs/mirroring.md), even once upstream adds a
            # file of that name at the top: an older checksum file's entry is still the nested one's.
            u = self.sim.upstream
            if name.count("/") >= depth or ("/" not in name and (name not in u.files or (name, hexdigest) in u.bare)):
                continue
            try:
                have = self.digest(os.path.join(folder, name))
            except OSError:
                problem = "the mirrored %s names %r, which the mirror lacks" % (self.sim.upstream.sums_name, name)
                break
            history = self.sim.upstream.history.get(name, [])
            ahead = hexdigest in history and have in history and history.index(hexdigest) < (
                len(history) - 1 - history[::-1].index(have))
            if have != hexdigest and not ahead:
                problem = "the mirrored %s names %r with other bytes than the mirror's" % (
                    self.sim.upstream.sums_name, name)
                break
        try:
            with open(sums, "rb") as f:
                return problem if f.read() == data else None
        except OSError:
            return None


def check_prune(sim, night, before, after):
    deleted = {}
    for path in sorted(set(before) - set(after)):
        if os.path.basename(path) == USER_FILE:
            yield 5, "the user's file %s was deleted" % sim.show(path)
            continue
        if path in sim.expected:
            yield 5, "%s was lost although upstream still lists %r" % (sim.show(path), sim.expected[path][0])
        s = sim.owner(path)
        deleted.setdefault(s.name if s else "?", []).append(path)
    for name, paths in deleted.items():
        s = next((s for s in sim.manifest.sessions if s.name == name), None)
        if s is None or s.prune is None:
            yield 5, "%d files deleted from a session without prune (%s)" % (len(paths), sim.show(paths[0]))
            continue
        failed = [t for t in night.report_tasks() if t.get("session") == name
                  and t.get("outcome") in ("failed", "cancelled")]
        # A night may have several runs (a signalled one that finished first, shards): a prune by
        # one whose own tasks of the session all ended well is a prune after a good run.
        clean = any(any(p.get("session") == name and p.get("outcome") == "pruned" for p in r.get("prune", []))
                    and not any(t.get("session") == name and t.get("outcome") in ("failed", "cancelled")
                                for t in r.get("tasks", [])) for r in night.all_reports() if r)
        if failed and not clean:
            yield 5, "prune deleted %s in session %s although %s ended %s" % (
                sim.show(paths[0]), name, failed[0].get("id"), failed[0].get("outcome"))
        elif night.document_failed:
            yield 5, "prune deleted %s although %s" % (sim.show(paths[0]), night.document_failed)
        if isinstance(s.prune, int) and not isinstance(s.prune, bool) and len(paths) > s.prune:
            yield 5, "prune deleted %d files, more than max_delete %d" % (len(paths), s.prune)


def check_canary(sim, canary_before):
    now = sim.canary()
    for path in sorted(set(now) | set(canary_before)):
        if now.get(path) != canary_before.get(path):
            what = "created" if path not in canary_before else "deleted" if path not in now else "changed"
            yield 6, "%s was %s outside dest, state and outputs" % (sim.show(path), what)


def check_quiet_night(sim, night):
    if not night.quiet or any(s.kind == "ephemeral" or s.refresh for s in sim.manifest.sessions):
        return
    docs = set(sim.upstream.checksum_files())
    fetched = [e["path"] for e in night.log if not e["path"].endswith("/")
               and e["path"][len("/pub/"):] not in docs]
    if fetched:
        yield 7, "a night without change sent %d file requests (%r first)" % (len(fetched), fetched[0])


# The resume bound (docs/run.md, "Re-runs and resume"): a partial file is synced every second
# (the first time a second into its transfer), what reached the disk is recorded at most four times
# a second, results too; a body under 64 KiB is held in memory and starts over; SIGTERM syncs and
# checkpoints every transfer in flight; only a strong validator makes a file resumable.
CHECKPOINT_EVERY, COMMIT_EVERY, IN_MEMORY = 1.0, 0.25, 64 * 1024
SLACK = 1.0  # a loaded machine's scheduling, and bytes written to the socket not yet read


def intervals(entries):
    """The byte ranges of a file the entries' bodies carried: sorted, merged [a, b) pairs."""
    spans = sorted((e["start"], e["start"] + e["sent"]) for e in entries if e.get("sent"))
    merged = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def overlap(xs, ys):
    return sum(max(0, min(b, d) - max(a, c)) for a, b in xs for c, d in ys)


def sent_after(entry, t):
    """The bytes of an entry's body the server wrote after time t."""
    return entry["sent"] - max((n for when, n in entry["progress"] if when <= t), default=0)


def allowance(entry, kind, killed_at, resumable):
    """What the re-run may send again of the bytes one response of the signalled run carried:
    all of them when the file restarts whole (no strong validator, never checkpointed: the
    transfer ran under a second, or what must be kept is under 64 KiB, once a body in memory),
    else the bytes past its last checkpoint: those written in the last CHECKPOINT_EVERY +
    COMMIT_EVERY (+ SLACK) before the SIGKILL or the transfer's end, or in the last SLACK before a
    SIGTERM that found it in flight."""
    progress, sent = entry["progress"], entry["sent"]
    first, last = progress[0][0], progress[-1][0]
    in_flight = sent < entry["body"] and kind == "term"
    end = killed_at if sent < entry["body"] else min(last, killed_at)
    if not resumable or end - first < CHECKPOINT_EVERY + SLACK:
        return sent
    window = SLACK if in_flight else CHECKPOINT_EVERY + COMMIT_EVERY + SLACK
    recent = sent_after(entry, end - window)
    return sent if sent - recent < IN_MEMORY else recent


def check_resume(sim, night, before):
    """Invariant 7's second half: across a signalled run and the run after it, no file is fetched
    twice beyond the resume bound. For each file of a default session without `refresh` (one task
    per upstream path, no reset on it tonight, within `max_size`), over the Python server's log:
    - a file the signalled run fetched whole and the mirror held with upstream's bytes after it is
      not sent again (a 304 is fine), unless a SIGKILL came within COMMIT_EVERY + SLACK of its
      body's end (its result may not be recorded yet);
    - of a file the signalled run fetched in part, the bytes both runs were sent are at most the sum
      of `allowance` over the signalled run's responses."""
    if not night.signalled or sim.nginx:
        return
    kind, killed_at = night.signalled
    u = sim.upstream
    skip = set(u.checksum_files())
    named = {}
    for path, (upath, s, t) in sim.expected.items():
        named.setdefault(upath, []).append((path, s))
    resets = {e["path"] for e in night.log if e.get("fault") == "reset"}
    before_ids = {id(e) for e in night.signalled_log}
    for upath, dests in sorted(named.items()):
        path, s = dests[0]
        rel = "/pub/" + upath
        if (len(dests) > 1 or upath in skip or rel in resets or s.kind != "default" or s.refresh
                or (s.max_size and len(u.documents()[upath][0]) > s.max_size)):
            continue
        first = [e for e in night.signalled_log if e["path"] == rel and "progress" in e]
        second = [e for e in night.log if e["path"] == rel and "progress" in e and id(e) not in before_ids]
        if not first or not second:
            continue
        current = sha256(u.documents()[upath][0])
        whole = [e for e in first if e["sent"] == e["body"] and e["start"] + e["body"] == e["size"] and e["sent"]]
        again = sum(e["sent"] for e in second)
        # Placed by the signalled run: the current bytes are there after it and were not before
        # (a file already in place that fails its check again is fetched again, rightly).
        if whole and night.after_signal.get(path) == current and before.get(path) != current:
            if again and not (kind == "kill" and max(e["progress"][-1][0] for e in whole) > killed_at - COMMIT_EVERY - SLACK):
                yield 7, "%s was fetched whole and placed before the %s, and the run after sent %d bytes of it again" % (
                    rel, "SIGKILL" if kind == "kill" else "SIGTERM", again)
            continue
        if whole:
            continue  # fetched whole but not placed (a checksum mismatch, a kill before placing): sent from 0
        dup = overlap(intervals(first), intervals(second))
        bound = sum(allowance(e, kind, killed_at, u.validators) for e in first if e["sent"])
        if dup > bound:
            yield 7, "%s: %d bytes sent before the %s were sent again, more than the resume bound %d (Range %s)" % (
                rel, dup, "SIGKILL" if kind == "kill" else "SIGTERM", bound,
                ", ".join("none" if e.get("range") is None else str(e["range"]) for e in second))


def check_report(sim, night, after):
    rc = night.rc
    if rc not in (0, 1, 3, 6):
        if rc is not None and rc >= 0 and not night.expected_rc:
            yield 8, "the run exited %d" % rc
        return
    report = night.report()
    if report is None:
        yield 8, "exit %d but no readable report" % rc
        return
    tasks = night.report_tasks()
    bad = [t for t in tasks if t.get("outcome") in ("failed", "cancelled")]
    if rc == 0 and (bad or report.get("summary", {}).get("failed")):
        yield 8, "exit 0 but the report has %s %s" % (bad[0].get("id") if bad else "", "failed")
    if rc == 1 and not bad and not report.get("hooks"):
        yield 8, "exit 1 but no task failed in the report"
    prunes = [p for r in [report] + night.worker_reports() for p in (r or {}).get("prune", [])]
    if rc == 6 and not any(p.get("outcome") == "refused" for p in prunes):
        yield 8, "exit 6 but no prune refused in the report"
    for t in tasks:
        if t.get("outcome") in ("completed", "unchanged") and t.get("kind") == "download" and t.get("to"):
            path = os.path.join(sim.home, t["to"])
            if path not in after:
                yield 8, "the report says %s %s but it is not on disk" % (t.get("id"), t["outcome"])
            elif t.get("sha256") and t["sha256"] != after[path]:
                yield 8, "the report gives %s another sha256 than the disk" % t.get("id")
    for run_rc, name in night.metrics:
        metrics = night.read_output(name)
        m = re.search(r"^batchdl_exit_code\{[^}]*\} (\d+)", metrics or "", re.M)
        if metrics is not None and (not m or int(m.group(1)) != run_rc):
            yield 8, "%s says exit %s, the run exited %d" % (name, m.group(1) if m else "nothing", run_rc)


def check_secret(sim, night):
    secret = sim.secret.encode()
    spellings = [secret, base64.b64encode(secret)]
    for folder, dirs, files in os.walk(sim.root):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) != os.path.join(sim.root, "nginx")]  # upstream's
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            if any(s in data for s in spellings):
                yield 9, "the secret is written in %s" % sim.show(path)
    for entry in night.log:
        if entry["origin"] == "mirror" and entry["secret"]:
            yield 9, "the secret header was sent to the mirror origin for %r" % entry["path"]
            break


def check_all(sim, night, before, after, canary_before):
    for check in (check_processes(night), check_bytes(sim, after), check_exit_zero(sim, night, after),
                  check_mirrored_sums(sim, before, after), check_prune(sim, night, before, after),
                  check_canary(sim, canary_before), check_quiet_night(sim, night), check_resume(sim, night, before),
                  check_report(sim, night, after),
                  check_secret(sim, night)):
        yield from check
    yield from night.extra_violations


def report_json(path):
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def show_failed(tasks):
    """Prints the first three failed tasks of a report's `tasks` (with -v), and how many more."""
    failed = [t for t in tasks if t.get("outcome") == "failed"]
    for t in failed[:3]:
        print("    failed %s: %s" % (t.get("id"), (t.get("error") or {}).get("message", "")[:150]))
    if len(failed) > 3:
        print("    ... and %d more failed" % (len(failed) - 3))
