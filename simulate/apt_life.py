"""`scripts/simulate --apt`: the life of an APT mirror. One seed decides a small signed repository
(apt_upstream.py), an `apt:` manifest that mirrors it, and each night's changes upstream,
attacks (a rolled-back Release, a tampered index, pool file or InRelease), server faults and
signals; after every night (and during it, by `AptReader`) the mirror is checked against the
model (apt_invariants.py; the invariants are listed there and in docs/testing.md).
"""

import os
import random
import shutil
import signal
import threading
import time

from . import apt_invariants as ainv
from . import invariants as inv
from .apt_upstream import AptUpstream
from .life import Process, wait_idle
from .server import Faults, Server, Trap
from .upstream import sha256

# The seeds scripts/test lives through (6 nights each, about a minute with a debug build on 2
# shared cores): 1-24 but those that find a defect still open (each with its replay in
# docs/testing.md, "Open findings of --apt"); a seed leaves OPEN when its defect is fixed.
OPEN = {
    10: "during the run only, on some runs: an arm64 Packages in place without its by-hash copy the "
    "old InRelease lists, the night an architecture came back after two failed nights",
}
CI_SEEDS = [s for s in range(1, 25) if s not in OPEN]
CI_NIGHTS = 6


class AptNight:
    def __init__(self, number):
        self.number, self.changes, self.events, self.processes = number, [], [], []
        self.violations, self.rc, self.signalled, self.log = [], None, None, []
        self.must_fail = None  # why this night may not exit 0
        self.started = self.ended = 0.0


class AptSimulation:
    def __init__(self, seed, opts, keys, workdir):
        self.seed, self.opts, self.keys = seed, opts, keys
        self.rng = rng = random.Random("apt %d" % seed)
        self.root = os.path.join(workdir, "apt-seed-%d" % seed)
        shutil.rmtree(self.root, ignore_errors=True)
        self.home = os.path.join(self.root, "home")
        self.outputs = os.path.join(self.home, "reports")
        os.makedirs(os.path.join(self.root, "canary"))
        os.makedirs(self.home)
        self.upstream = u = AptUpstream(rng, keys, opts.max_files)
        self.lock = threading.Lock()
        self.server = Server(u, self.lock, "primary", "")
        # The manifest: one apt: entry, of all suites or one, of all architectures or one.
        self.suites = u.suites if rng.random() < 0.7 else [rng.choice(u.suites)]
        self.components = u.components
        self.archs = u.archs if rng.random() < 0.7 else [u.archs[0]]
        self.prune = rng.choice([None, None, "100%", "50%", 3])
        # keep_removed in seconds, nights paced a second apart (`night`): it expires within a life.
        self.keep = rng.choice([0, 0, 1, 3]) if self.prune is not None else 0
        self.to = rng.choice(["", "", "debian/"])
        self.dest = os.path.join(self.home, "mirror")
        self.mirror_root = os.path.join(self.dest, self.to) if self.to else self.dest
        shutil.copy(keys.keyring, os.path.join(self.home, "keyring.gpg"))
        self.keyring = os.path.join(self.home, "keyring.gpg")
        for path in (os.path.join(self.root, "canary", "a.txt"), os.path.join(self.home, "canary", "b.txt")):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("canary %d\n" % seed)
        os.makedirs(self.dest)
        with open(os.path.join(self.dest, inv.USER_FILE), "w") as f:
            f.write("the user's own file\n")
        self.env = dict(os.environ, LC_ALL="C.UTF-8", SWIFT_BACKTRACE="enable=no")
        self.manifest_path = self.write_manifest()
        # The model's memory across nights.
        self.removed_at = {}  # pool path -> start time of the first night no asked index named it
        self.published_named = set()  # pool paths an index the mirror published has named
        self.first_good_end = {}  # pool path -> end of the first night exiting 0 since its removal
        self.dates = {}  # suite -> the Date the mirror's root gave after the last night
        self.previous_rc, self.last_start = None, None
        self.unsettled = False  # a signalled night, and no night exiting 0 since
        self.served_before = set()  # SHA-256 of every file upstream served on an earlier night

    def close(self):
        self.server.stop()
        if not self.opts.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def describe(self):
        u = self.upstream
        return ("apt seed %d: suites %s (mirrored %s), components %s, architectures %s (mirrored %s), "
                "%d pool files%s%s; prune %s, keep_removed %ss, to %r" % (
                    self.seed, "+".join(u.suites), "+".join(self.suites), "+".join(u.components),
                    "+".join(u.archs), "+".join(self.archs), len(u.pool), ", by-hash" if u.by_hash else "",
                    "" if u.plain_served else ", plain Packages not served", self.prune, self.keep, self.to))

    def write_manifest(self):
        lines = ["version: 1", "defaults:", "  retry: {attempts: 3, backoff: 50ms, max_backoff: 200ms}",
                 "  timeouts: {request: 5s, resource: 2m}", "sessions:", "  debian:", "    dest: mirror/"]
        if self.prune is not None:
            lines.append("    prune: {max_delete: %s}" % (
                '"%s"' % self.prune if isinstance(self.prune, str) else self.prune))
        lines += ["    tasks:", "      - apt: %s" % self.server.url(self.upstream.ROOT),
                  "        suites: [%s]" % ", ".join(self.suites),
                  "        components: [%s]" % ", ".join(self.components),
                  "        architectures: [%s]" % ", ".join(self.archs), "        keyring: keyring.gpg"]
        if self.keep:
            lines.append("        keep_removed: %ds" % self.keep)
        if self.to:
            lines.append("        to: %s" % self.to)
        path = os.path.join(self.home, "mirror.yaml")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def run_args(self, name="report"):
        return ["run", self.manifest_path, "--report", os.path.join(self.outputs, name + ".json"),
                "--metrics", os.path.join(self.outputs, name + ".prom"), "--progress", "never"]

    def canary(self):
        skip = {self.dest, os.path.join(self.home, ".batchdl"), self.outputs}
        return {p: d for p, d in inv.tree(self.root, skip).items()}

    # -- one night ---------------------------------------------------------------------------

    def night(self, number):
        rng, u, night = self.rng, self.upstream, AptNight(number)
        shutil.rmtree(self.outputs, ignore_errors=True)
        os.makedirs(self.outputs)
        u.night = number
        u.heal()
        # The maintainer's changes, published with a new Date (sometimes a new Date alone).
        if number > 0 and self.opts.changes:
            touched = set()
            for _ in range(rng.choice([0, 1, 1, 2, 3, 5])):
                suite, what = u.change()
                touched.add(suite)
                night.changes.append(what)
            if not touched and rng.random() < 0.3:
                touched.add(rng.choice(u.suites))
                night.changes.append("a new Date")
            if touched:
                u.publish_all(sorted(touched))
        # Sometimes the operator drops an architecture from the manifest, or takes it back.
        if rng.random() < 0.12 and len(u.archs) > 1 and number > 0 and self.opts.changes:
            self.archs = [u.archs[0]] if len(self.archs) > 1 else list(u.archs)
            night.changes.append("the manifest now asks for %s" % "+".join(self.archs))
            self.manifest_path = self.write_manifest()
        # Tonight's attack, fault and signal: drawn always, so the stream stays put.
        attack_roll, fault_roll, event_roll = rng.random(), rng.random(), rng.random()
        suite, at = rng.choice(self.suites), rng.randint(1, 12 + len(u.files) // 3)
        faulted = rng.sample(sorted(u.files), min(len(u.files), rng.randint(1, 4)))
        fault_kind, persistent = rng.choice(["500", "503", "truncated", "reset"]), rng.random() < 0.3
        if self.opts.faults and number > 0:
            self.attack(night, attack_roll, suite)
        fault = None
        if self.opts.faults:
            if fault_roll < 0.08 and number > 0:
                fault = "down"
            elif fault_roll < 0.35:
                fault = "slow" if fault_kind == "reset" and not persistent and fault_roll < 0.15 else fault_kind
        event = None
        if self.opts.kills:
            event = "kill" if event_roll < 0.1 else "term" if event_roll < 0.18 else None
        night.events += [x for x in (fault, event) if x]
        self.server.faults = faults = Faults()
        if fault == "slow":
            faults.slow = True
        elif fault == "reset":
            for p in faulted:
                faults.reset[u.ROOT + p] = -1 if persistent else 1
        elif fault in ("500", "503", "truncated"):
            for p in faulted:
                faults.errors[u.ROOT + p] = [fault, -1 if persistent else 2]
        if fault not in (None, "slow", "down"):
            night.events.append("%s%s on %s" % ("persistent " if persistent else "", fault, ", ".join(faulted[:2])))
        self.persistent = {u.ROOT + p for p in faulted} if persistent and fault not in (None, "slow", "down") else set()
        # The model of tonight.
        self.named = u.named_pool(self.suites, self.components, self.archs)
        if self.keep and self.last_start:
            time.sleep(max(0.0, self.last_start + 1.0 - time.time()))
        night.started = self.last_start = time.time()
        for path in self.named:
            self.removed_at.pop(path, None)
            self.first_good_end.pop(path, None)
        before, canary_before = ainv.mirror_files(self), self.canary()
        if fault == "down":
            self.server.stop()
            night.must_fail = "upstream was down"
        reader = ainv.AptReader(self, night)
        reader.start()
        try:
            self.run(night, event, at)
        finally:
            reader.stop.set()
            reader.join()
            if fault == "down":
                self.server.start()
            self.server.faults = Faults()
        night.ended = time.time()
        night.log = list(self.server.log)
        self.server.clear_log()
        if night.must_fail is None and self.persistent:
            hit = [e["path"] for e in night.final_log if e["path"] in self.persistent and e["fault"]]
            if hit:
                night.must_fail = "%r failed on every attempt" % hit[0]
        after = ainv.mirror_files(self)
        for path in self.named_removed_since(before):
            self.removed_at.setdefault(path, night.started)
        violations = list(ainv.check_all(self, night, before, after, canary_before))
        if night.rc == 0:
            for path, when in self.removed_at.items():
                self.first_good_end.setdefault(path, night.ended)
        self.previous_rc = night.rc
        self.unsettled = night.rc != 0 and (self.unsettled or night.signalled is not None)
        self.served_before |= {sha256(data) for data, _ in u.files.values()}
        return night, violations

    def named_removed_since(self, before):
        """Pool paths the mirror holds or held that no asked index names tonight."""
        prefix = self.mirror_root.rstrip("/") + "/"
        held = {p[len(prefix):] for p in before if p.startswith(prefix + "pool/")}
        return (held | set(self.removed_at)) - self.named

    def attack(self, night, roll, suite):
        u = self.upstream
        published = ainv.root_date(self, suite)
        if roll < 0.08 and published is not None:
            night.changes.append(u.rollback(suite, published))
            night.must_fail = "a rolled-back Release"
            return
        if roll < 0.13 and published is not None:
            u.tamper_inrelease(suite)
            night.changes.append("%s: InRelease altered after signing" % suite)
            night.must_fail = "a tampered InRelease"
            return
        if roll < 0.16 and published is not None:
            u.tamper_detached(suite)
            night.changes.append("%s: Release.gpg does not verify the Release" % suite)
            night.must_fail = "a Release.gpg that does not verify"
            return
        if roll < 0.2:
            u.drop_inrelease(suite)
            night.changes.append("%s: no InRelease tonight (Release and Release.gpg only)" % suite)
            return
        if roll < 0.3:
            # Only what the mirror does not hold yet must be fetched (and so found out).
            have = ainv.mirror_files(self)
            # An index counts when its bytes were never served before: else the state folder may
            # hold them, and batchdl rightly asks for nothing.
            fresh = [p for p in sorted(self.named_now()) if os.path.join(self.mirror_root, p) not in have]
            indexes = [p for p in sorted(u.files) if p.startswith(u.dists(suite)) and "/binary-" in p
                       and "/by-hash/" not in p and p.split("/binary-")[1].split("/")[0] in self.archs
                       and not p.endswith("/Packages") and sha256(u.files[p][0]) not in self.served_before]
            choices = fresh + indexes
            if choices:
                path = u.rng.choice(choices)
                u.tamper(path)
                night.changes.append("%s served with other bytes" % path)
                night.must_fail = "a tampered %s" % path
                return

    def named_now(self):
        return self.upstream.named_pool(self.suites, self.components, self.archs)

    def run(self, night, event, at):
        if event in ("kill", "term"):
            procs, started = [], threading.Event()

            def fire():
                started.wait(10)
                wait_idle(procs[0].popen.pid)
                if procs[0].popen.poll() is None:
                    night.signalled = event
                procs[0].signal(signal.SIGKILL if event == "kill" else signal.SIGTERM)

            self.server.faults.trap = Trap(at, fire)
            procs.append(Process(self, "run (to be signalled)", self.run_args()))
            night.processes.append(procs[0])
            started.set()
            night.rc = procs[0].wait()
            self.server.faults.trap = None
            night.final_log = list(self.server.log)
            if night.signalled is None:
                night.events.append("(the run ended before the signal)")
            return
        proc = Process(self, "run", self.run_args())
        night.processes.append(proc)
        night.rc = proc.wait()
        night.final_log = list(self.server.log)


def live(seed, opts, keys, workdir, verbose=False):
    """Lives `opts.nights` nights of one apt seed; returns (nights lived, [(night, inv, message)])."""
    sim = AptSimulation(seed, opts, keys, workdir)
    found = []
    try:
        if verbose:
            print(sim.describe())
        for number in range(opts.nights):
            night, violations = sim.night(number)
            if verbose:
                print("  night %d: exit %s; %s%s%s" % (
                    number, night.rc, "; ".join(night.changes) or "no change",
                    "; " + ", ".join(night.events) if night.events else "",
                    "; must fail: " + night.must_fail if night.must_fail else ""))
                report = inv.report_json(os.path.join(sim.outputs, "report.json")) or {}
                inv.show_failed(report.get("tasks", []))
            found += [(number, i, m) for i, m in violations]
            if violations:
                return number + 1, found
        return opts.nights, found
    finally:
        sim.close()
