"""A mirror's life: one seed's upstream, manifest and nights. Each night upstream changes, the
server may fail, the run may be killed, signalled, doubled or find its state damaged; then every
invariant is checked against the model (what upstream served, listed and signed).
"""

import os
import random
import shutil
import signal
import subprocess
import threading
import time

from . import invariants as inv
from .manifest import SECRET_HEADER, Manifest
from .nginx import Nginx
from .server import Faults, Server, Trap
from .upstream import Upstream, sha256

TIMEOUT = 120  # seconds a run may take before it counts as hung


def wait_idle(pid, bound=5.0):
    """Waits until process `pid` uses no CPU for 150 ms (it has handled every answer it got and
    waits for the held ones), at most `bound` seconds."""
    last, quiet, deadline = None, 0, time.time() + bound
    while quiet < 3 and time.time() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return
        used = int(fields[11]) + int(fields[12])
        quiet = quiet + 1 if used == last else 0
        last = used
        time.sleep(0.05)


def can_mount(probe=[]):
    """Whether this process may mount a tmpfs (root, outside a container that forbids it)."""
    if not probe:
        folder = subprocess.run(["mktemp", "-d"], capture_output=True, text=True).stdout.strip()
        probe.append(bool(folder) and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", folder], capture_output=True).returncode == 0)
        if probe[0]:
            subprocess.run(["umount", folder], capture_output=True)
        if folder:
            os.rmdir(folder)
    return probe[0]


def mount(folder, size, remount=False):
    subprocess.run(["mount", "-t", "tmpfs", "-o", ("remount," if remount else "") + "size=%d" % size,
                    "tmpfs", folder], check=True, capture_output=True)


class Options:
    def __init__(self, binary, grammar="old", nights=6, max_files=None, faults=True, kills=True,
                 changes=True, keep=False):
        self.binary, self.grammar, self.nights, self.max_files = binary, grammar, nights, max_files
        self.faults, self.kills, self.changes, self.keep = faults, kills, changes, keep


class Process:
    """One invocation of batchdl and how it ended."""

    def __init__(self, sim, what, args, timeout=TIMEOUT):
        self.what, self.timeout, self.killed, self.hung = what, timeout, 0, False
        self.started = time.time()
        self.popen = subprocess.Popen([sim.opts.binary] + args, cwd=sim.home, env=sim.env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.rc, self.out, self.err = None, b"", b""

    def signal(self, sig):
        """Sends `sig`; a death by SIGKILL is then expected, by any other signal not."""
        if self.popen.poll() is None:
            self.killed = sig if sig == signal.SIGKILL else 0
            self.popen.send_signal(sig)

    def wait(self):
        try:
            self.out, self.err = self.popen.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.hung = True
            os.killpg(self.popen.pid, signal.SIGKILL)  # its group: a child may hold the pipes
            self.out, self.err = self.popen.communicate(timeout=10)
        self.rc = self.popen.returncode
        self.ended = time.time()
        return self.rc

    def last_stderr(self):
        lines = self.err.decode("utf-8", "replace").strip().splitlines()
        return lines[-1][:160] if lines else "no message"


class Night:
    """What happened on one night: the processes, the server's log, the final exit code."""

    def __init__(self, sim, number):
        self.sim, self.number = sim, number
        self.processes, self.extra_violations, self.changes, self.events = [], [], [], []
        self.rc, self.expected_rc, self.document_failed, self.log = None, False, None, []
        self.quiet = False  # no change, no fault, no event, and the night before exited 0
        self.metrics = []  # (exit code, metrics file) of each run whose metrics count
        self.signalled = None  # ("kill" or "term", time) when a run was signalled
        self.signalled_log, self.after_signal = [], {}  # its requests; the mirror after it

    def report(self):
        return inv.report_json(os.path.join(self.sim.outputs, "report.json"))

    def report_tasks(self):
        """The tasks of the night's report and of the background workers' reports."""
        return [t for r in [self.report()] + self.worker_reports() for t in (r or {}).get("tasks", [])]

    def worker_reports(self):
        workers = os.path.join(self.sim.home, ".batchdl", "workers")
        return [inv.report_json(os.path.join(workers, n)) for n in sorted(os.listdir(workers))
                if n.endswith(".report.json")] if os.path.isdir(workers) else []

    def all_reports(self):
        """Every report written this night: of each run (a signalled one, a second one, each
        shard's, the merged one) and of the background workers."""
        return [inv.report_json(os.path.join(self.sim.outputs, n)) for n in sorted(os.listdir(self.sim.outputs))
                if n.endswith(".json")] + self.worker_reports()

    def read_output(self, name):
        try:
            with open(os.path.join(self.sim.outputs, name), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return None


class Simulation:
    def __init__(self, seed, opts, keys, workdir):
        self.seed, self.opts = seed, opts
        self.rng = rng = random.Random(seed)
        self.root = os.path.join(workdir, "seed-%d" % seed)
        shutil.rmtree(self.root, ignore_errors=True)
        self.home = os.path.join(self.root, "home")
        self.outputs = os.path.join(self.home, "reports")
        abs_root = os.path.join(self.root, "abs")
        for folder in (self.home, abs_root, os.path.join(self.root, "canary")):
            os.makedirs(folder)
        self.upstream = Upstream(rng, opts.max_files)
        self.upstream.signer = keys.sign
        self.upstream.publish_sums()
        self.secret = "sim-secret-%016x" % rng.getrandbits(64)
        self.lock = threading.Lock()
        # Part of the seeds are served by nginx over HTTPS and HTTP/2 (new grammar: `tls:`), which
        # lists in its own style, always sends validators, and fails only by being down.
        self.nginx = (random.Random("nginx %d" % seed).random() < 0.25 and opts.grammar == "new"
                      and keys.certificates is not None)
        if self.nginx:
            self.upstream.style = "nginx-json" if self.upstream.style == "nginx-json" else "nginx"
            self.upstream.validators = True
            self.server = Nginx(self.upstream, os.path.join(self.root, "nginx"), keys.certificates,
                                SECRET_HEADER)
        else:
            self.server = Server(self.upstream, self.lock, "primary", self.secret)
        self.mirror = Server(self.upstream, self.lock, "mirror", self.secret)
        self.manifest = Manifest(rng, self.upstream, self.home, abs_root, opts.grammar,
                                 random.Random("new %d" % seed))
        shutil.copy(keys.keyring, os.path.join(self.home, "keyring.gpg"))
        for path in (os.path.join(self.root, "canary", "a.txt"), os.path.join(abs_root, "canary.txt"),
                     os.path.join(self.home, "canary", "b.txt")):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("canary %d\n" % seed)
        # A disk that fills: in some seeds the first session's dest is a tmpfs that holds half
        # the tree on night 0, and all of it from night 1 on (root only; skipped where not allowed).
        self.small_disk = None
        if random.Random("disk %d" % seed).random() < 0.15 and opts.faults and can_mount():
            pages = sum(len(data) // 4096 + 2 for data, _ in self.upstream.documents().values())
            self.small_disk = self.manifest.sessions[0].dest_path
            os.makedirs(self.small_disk, exist_ok=True)
            mount(self.small_disk, max(8, pages // 2) * 4096)
        for s in self.manifest.sessions:
            os.makedirs(s.dest_path, exist_ok=True)
            with open(os.path.join(s.dest_path, inv.USER_FILE), "w") as f:
                f.write("the user's own file\n")
        # No Swift backtracer: a crash is a death by signal at once, not a 30 s symbolication.
        self.env = dict(os.environ, SIM_TOKEN=self.secret, LC_ALL="C.UTF-8", SWIFT_BACKTRACE="enable=no")
        self.ever_map, self.last_good, self.expected, self.previous_rc = {}, {}, {}, None
        self.manifest_path = self.manifest.write(self.server, self.mirror)

    def close(self):
        self.server.stop()
        self.mirror.stop()
        if self.small_disk:
            subprocess.run(["umount", self.small_disk], capture_output=True)
        if not self.opts.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- helpers for the checks --------------------------------------------------------------

    def show(self, path):
        return os.path.relpath(path, self.root)

    def owner(self, path):
        # The session whose task writes the path; else the one whose dest holds it most closely
        # (two sessions may share a dest).
        if path in self.expected:
            return self.expected[path][1]
        best = None
        for s in self.manifest.sessions:
            if path.startswith(s.dest_path + "/") and (best is None or len(s.dest_path) > len(best.dest_path)):
                best = s
        return best

    def canary(self):
        skip = {s.dest_path for s in self.manifest.sessions} | {
            os.path.join(self.home, ".batchdl"), self.outputs, os.path.join(self.root, "nginx")}
        return {p: d for p, d in inv.tree(self.root, skip).items()
                if not any(p.startswith(s + "/") for s in skip)}

    def visible(self, upath, task):
        """What batchdl can see of a file without fetching it: a change outside this is invisible."""
        u = self.upstream
        data, mtime = u.documents()[upath]
        key = []
        if task.kind == "index" and u.style != "apache-plain":
            key.append((len(data), mtime // 60))
        if task.checksums:
            key.append(u.sums_digests.get(upath))
        if self.manifest.sessions and any(t is task for s in self.manifest.sessions if s.refresh
                                          for t in s.tasks) and u.validators:
            key.append(sha256(data))
        return tuple(key)

    def stale_allowed(self, path, upath, task, dig):
        good = self.last_good.get(path)
        return good is not None and good == (self.visible(upath, task), dig)

    # -- one night ---------------------------------------------------------------------------

    def run_args(self, other=None, shard=0):
        """A run's arguments; `other` names the outputs of a run that is not the night's own."""
        names = self.names(shard) if not other else (other + ".json", other + ".prom", other + ".jsonl")
        args = ["run", self.manifest_path, "--report", os.path.join(self.outputs, names[0]),
                "--metrics", os.path.join(self.outputs, names[1]),
                "--events", os.path.join(self.outputs, names[2]), "--progress", "never"]
        return args + (["--shard", "%d/%d" % (shard, self.manifest.shards)] if self.manifest.shards else [])

    def night(self, number):
        rng, u, night = self.rng, self.upstream, Night(self, number)
        shutil.rmtree(self.outputs, ignore_errors=True)
        os.makedirs(self.outputs)
        u.night = number
        if number > 0:
            for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
                if self.opts.changes:
                    night.changes.append(u.change())
        fault, event = self.pick_faults(rng, night)
        night.quiet = self.previous_rc == 0 and not night.changes and not night.events
        self.manifest_path = self.manifest.write(self.server, self.mirror)
        if self.nginx:
            self.server.publish()
        u.record_served()
        self.expected = self.manifest.expected()
        for path, (upath, s, t) in self.expected.items():
            checked = t.checksums and upath not in u.checksum_files()
            self.ever_map.setdefault(path, set()).add((upath, checked))
        if number == 0 and self.start(night, "validate", ["validate", self.manifest_path]).wait() != 0:
            night.extra_violations.append((0, "the generated manifest does not validate: %s"
                                           % night.processes[-1].last_stderr()))
        before, canary_before = inv.mirror_files(self), self.canary()
        if fault == "down":
            self.server.stop()
        reader = inv.Reader(self, night)
        reader.start()
        try:
            self.run_night(night, event, rng)
        finally:
            reader.stop.set()
            reader.join()
            if fault == "down":
                self.server.start()
            self.server.faults = self.mirror.faults = Faults()
        night.log = self.server.log + self.mirror.log
        if self.small_disk and number == 1:  # with space again, nothing fails for want of it
            for t in night.report_tasks():
                error = t.get("error") or {}
                if t.get("outcome") == "failed" and (error.get("code") == "disk-full" or
                                                     "No space left" in error.get("message", "")):
                    night.extra_violations.append((3, "the disk has space again, but %s failed: %s" % (
                        t.get("id"), error.get("message", "")[:120])))
        night.document_failed = self.document_failure(fault, night)
        after = inv.mirror_files(self)
        violations = list(inv.check_all(self, night, before, after, canary_before))
        for path, (upath, s, t) in self.expected.items():
            if after.get(path) == sha256(u.documents()[upath][0]):
                self.last_good[path] = (self.visible(upath, t), after[path])
        self.server.clear_log()
        self.mirror.clear_log()
        self.previous_rc = night.rc
        return night, violations

    def pick_faults(self, rng, night):
        """The night's server fault and run event; both drawn always, so the stream stays put."""
        u = self.upstream
        roll, folder = rng.random(), rng.choice(sorted(u.folders()))
        faults = self.server.faults = Faults()
        self.mirror.faults = faults
        fault, self.persistent_resets = None, set()
        if roll < 0.07:
            fault = "down"
        elif roll < 0.14:
            fault, faults.page500 = "500", {folder}
        elif roll < 0.19:
            fault, faults.truncate = "truncated", {folder}
        elif roll < 0.26:
            fault, faults.slow = "slow", True
        elif roll < 0.36:
            paths = sorted(u.documents())
            fault = "reset"
            for p in rng.sample(paths, min(len(paths), rng.randint(1, 3))):
                faults.reset[p] = rng.choice([1, 1, 2, -1])
            self.persistent_resets = {p for p, n in faults.reset.items() if n < 0}
        # A kill lands when the server sees its Nth request (N from the seed), not after a delay:
        # what the run has done by then is the same on a slow machine and a fast one.
        roll, at = rng.random(), rng.randint(1, len(u.documents()) + len(u.folders()))
        event = (None if roll >= 0.32 else "kill" if roll < 0.08 else "term" if roll < 0.14
                 else "twice" if roll < 0.2 else "wipe-state" if roll < 0.26 else "damage-state", at)
        if not self.opts.faults or (self.nginx and fault != "down"):
            fault, self.server.faults, self.persistent_resets = None, Faults(), set()
            self.mirror.faults = self.server.faults
        if not self.opts.kills:
            event = (None, at)
        if self.small_disk and night.number == 1:  # space again: the night must complete
            mount(self.small_disk, 1 << 30, remount=True)
            fault, event, self.server.faults = None, (None, at), Faults()
            self.mirror.faults = self.server.faults
        if self.small_disk and night.number == 0:
            night.events.append("a small disk")
        night.events += [x for x in (fault, event[0]) if x]
        return fault, event

    def run_night(self, night, event, rng):
        kind, at = event
        state = os.path.join(self.home, ".batchdl")
        if kind == "wipe-state":
            shutil.rmtree(state, ignore_errors=True)
        if kind == "damage-state" and os.path.exists(os.path.join(state, "state.sqlite")):
            for name in ("state.sqlite-wal", "state.sqlite-shm"):
                if os.path.exists(os.path.join(state, name)):
                    os.remove(os.path.join(state, name))
            with open(os.path.join(state, "state.sqlite"), "r+b") as f:
                f.write(bytes(rng.getrandbits(8) for _ in range(100)))
            sent = len(self.server.log)
            proc = self.start(night, "run on a damaged state folder")
            if proc.wait() != 5 or len(self.server.log) != sent:
                night.extra_violations.append((8, "a damaged state folder: exit %d and %d requests sent (want 5, 0: %s)"
                                               % (proc.rc, len(self.server.log) - sent,
                                                  ", ".join(e["path"] for e in self.server.log[sent:sent + 3]))))
            self.start(night, "cache clear", ["cache", "clear", "--yes", self.manifest_path]).wait()
        if kind in ("kill", "term"):
            started, procs = threading.Event(), []

            def fire():  # in the server's thread, on the at-th request: the run is then idle
                started.wait(10)
                wait_idle(procs[0].popen.pid)
                if procs[0].popen.poll() is None:
                    night.signalled = (kind, time.time())
                procs[0].signal(signal.SIGKILL if kind == "kill" else signal.SIGTERM)

            if not self.nginx:  # in half the nights (a generator of their own), in a file's body
                mid = random.Random("mid %d %d" % (self.seed, night.number)).random() < 0.5
                self.server.faults.trap = Trap(at, fire, mid)
                if mid:
                    night.events.append("(in a body of at least %d KiB)" % (Trap.MID_BODY // 1024))
            procs.append(self.start(night, "run (to be signalled)", self.run_args("signalled")))
            started.set()
            if self.nginx:  # nginx holds no request: the kill follows its access log

                def watch():
                    while procs[0].popen.poll() is None and len(self.server.log) < at:
                        time.sleep(0.005)
                    if procs[0].popen.poll() is None:
                        fire()
                threading.Thread(target=watch, daemon=True).start()
            rc = procs[0].wait()
            self.server.faults.trap = None
            # What the signalled run was sent, and what the mirror held after it (invariant 7).
            night.signalled_log = list(self.server.log) + list(self.mirror.log)
            night.after_signal = inv.mirror_files(self)
            if kind == "term" and rc not in (0, 1, 3, 6) and rc >= 0:
                night.extra_violations.append((8, "SIGTERM: exit %d, want 3" % rc))
        if kind == "twice":
            first = self.start(night, "run")
            deadline = time.time() + 10
            while not self.server.log and first.popen.poll() is None and time.time() < deadline:
                time.sleep(0.01)
            second = self.start(night, "second run at once", self.run_args("second"))
            rc2 = second.wait()
            overlapped = first.popen.poll() is None
            night.rc = first.wait()
            if overlapped and 4 not in (night.rc, rc2):
                night.extra_violations.append((8, "two runs at once exited %d and %d: one must exit 4" % (night.rc, rc2)))
            if night.rc == 4:  # the second took the lock first: its run is the night's
                night.rc = rc2
                for theirs, ours in zip(("second.json", "second.prom"), self.names(0)):
                    shutil.copy(os.path.join(self.outputs, theirs), os.path.join(self.outputs, ours))
        else:
            night.rc = self.start(night, "run").wait()
        night.rc = self.finish(night, night.rc)

    def names(self, shard):
        """The report, metrics and events files of a run (of one shard)."""
        if not self.manifest.shards:
            return "report.json", "batchdl.prom", "events.jsonl"
        return "report-%d.json" % shard, "batchdl-%d.prom" % shard, "events-%d.jsonl" % shard

    def finish(self, night, rc):
        """The rest of a night after its (first shard's) run: the other shards one after the other
        and the merge of their reports, or the wait for the background worker. Returns the night's
        exit code: the first that is not 0."""
        night.metrics = [(rc, self.names(0)[1])]
        rcs = [rc]
        for shard in range(1, self.manifest.shards):
            rcs.append(self.start(night, "run shard %d" % shard, self.run_args(shard=shard)).wait())
            night.metrics.append((rcs[-1], self.names(shard)[1]))
        if self.manifest.shards:
            reports = [os.path.join(self.outputs, self.names(i)[0]) for i in range(self.manifest.shards)]
            merge = self.start(night, "report merge", ["report", "merge"] + reports +
                               ["-o", os.path.join(self.outputs, "report.json")])
            if merge.wait() != 0:
                night.extra_violations.append((8, "report merge exited %d: %s" % (merge.rc, merge.last_stderr())))
        if any(s.kind == "background" for s in self.manifest.sessions):
            rcs.append(self.start(night, "wait", ["wait", self.manifest_path, "--timeout", str(TIMEOUT)]).wait())
        return next((r for r in rcs if r != 0), 0)

    def start(self, night, what, args=None):
        proc = Process(self, what, args or self.run_args())
        night.processes.append(proc)
        return proc

    def document_failure(self, fault, night):
        """Why a document (listing page, checksum file, signature) could not be fetched tonight."""
        u = self.upstream
        docs = set(u.checksum_files())
        uses_documents = any(t.kind == "index" or t.checksums for s in self.manifest.sessions for t in s.tasks)
        if fault == "down" and uses_documents:
            return "upstream refused every connection"
        for entry in night.log:
            path = entry["path"][len("/pub/"):]
            if entry["fault"] in ("500", "truncated") or (entry["fault"] == "reset" and path in docs
                                                          and self.reset_persistent(path)):
                return "the document %r answered %s" % (entry["path"], entry["fault"])
        return None

    def reset_persistent(self, path):
        return path in getattr(self, "persistent_resets", set())
