"""scripts/simulate: a seeded simulation of a mirror's life against the real batchdl binary.

    scripts/simulate [--binary PATH] [--seeds A-B | --seeds 1,5,9] [--nights N] [--grammar old|new]
                     [--max-files K] [--no-faults] [--no-kills] [--no-changes] [--shrink] [--keep]
    scripts/simulate [--binary PATH] --regressions    (the cases of simulate/regressions.txt)
    scripts/simulate --apt [--binary PATH] [--seeds ...] [--nights N] [--max-files K] [--no-faults]
                     [--no-kills] [--no-changes] [--shrink] [--keep]   (the life of an APT mirror)

The last line is `N nights, M violations`; the exit status is 0 only with no violation.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import apt_life, invariants, nginx
from .life import Options, Simulation

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The seeds every test run (scripts/test) lives through, 6 nights each: under 3 minutes with a
# debug build on 2 shared cores. A seed that finds a defect is left out (in OPEN) only while the
# defect is open; its shrunk case goes to regressions.txt either way.
OPEN: set[int] = set()
CI_SEEDS = [s for s in range(1, 61) if s not in OPEN]
CI_NIGHTS = 6


class Keys:
    """A throw-away signing key in a temporary GNUPGHOME, made once per simulation run."""

    def __init__(self, folder):
        self.certificates = None  # the CA of nginx's certificate, when nginx is installed
        self.home = os.path.join(folder, "gnupg")
        os.makedirs(self.home, mode=0o700)
        self.keyring = os.path.join(folder, "keyring.gpg")
        self.gpg("--quick-gen-key", "simulated release <release@sim.invalid>", "ed25519", "sign", "never")
        self.gpg("--output", self.keyring, "--export", "release@sim.invalid")

    def gpg(self, *args, data=None):
        out = subprocess.run(["gpg", "--homedir", self.home, "--batch", "--pinentry-mode", "loopback",
                              "--passphrase", ""] + list(args), input=data, capture_output=True,
                             env=dict(os.environ, GNUPGHOME=self.home, LC_ALL="C"), check=True)
        return out.stdout

    def sign(self, data):
        return self.gpg("--local-user", "release@sim.invalid", "--detach-sign", "--output", "-", data=data)

    def close(self):
        subprocess.run(["gpgconf", "--homedir", self.home, "--kill", "gpg-agent"], capture_output=True)


def parse_seeds(text):
    seeds = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            seeds += range(int(a), int(b) + 1)
        elif part:
            seeds.append(int(part))
    return seeds


def replay(args, seed, nights, opts):
    words = ["scripts/simulate", "--seeds", str(seed), "--nights", str(nights)]
    words += ["--apt"] if args.apt else ["--grammar", opts.grammar]
    if args.binary:
        words += ["--binary", args.binary]
    if opts.max_files is not None:
        words += ["--max-files", str(opts.max_files)]
    words += [flag for flag, on in (("--no-faults", not opts.faults), ("--no-kills", not opts.kills),
                                    ("--no-changes", not opts.changes)) if on]
    return " ".join(words)


def live(seed, opts, keys, workdir, verbose=False):
    """Lives `opts.nights` nights of one seed; returns (nights lived, [(night, inv, message)])."""
    sim = Simulation(seed, opts, keys, workdir)
    found = []
    try:
        if verbose:
            s = sim.manifest.sessions
            print("seed %d: %d files%s, %s listing%s, %s; sessions %s" % (
                seed, len(sim.upstream.files),
                " (some dated 2300)" if any(f.mtime >= 10413792000 for f in sim.upstream.files.values()) else "",
                sim.upstream.style, " (nginx, HTTPS, HTTP/2)" if sim.nginx else "",
                "signed " + sim.upstream.sums_name if sim.upstream.signed else sim.upstream.sums_name,
                ", ".join("%s(%s, dest %s, %s)" % (x.name, x.kind, x.dest, "+".join(t.kind for t in x.tasks))
                          for x in s)) + (" in %d shards" % sim.manifest.shards if sim.manifest.shards else ""))
        for number in range(opts.nights):
            night, violations = sim.night(number)
            if verbose:
                print("  night %d: exit %s; %s%s" % (number, night.rc, "; ".join(night.changes) or "no change",
                                                    "; " + ", ".join(night.events) if night.events else ""))
                invariants.show_failed(night.report_tasks())
            found += [(number, i, m) for i, m in violations]
            if violations:
                return number + 1, found
        return opts.nights, found
    finally:
        sim.close()


def kind(invariant, message):
    """A violation's kind: its invariant and its message's first words (not its paths)."""
    return invariant, " ".join(message.split()[:4])


def shrink(args, seed, opts, keys, workdir, violation, nights, live=live):
    """The smallest case of `seed` that still breaks the same way: fewer nights, files, faults."""
    def fails(o):
        lived, found = live(seed, o, keys, workdir)
        return any(kind(i, m) == violation for _, i, m in found)

    best = Options(opts.binary, opts.grammar, nights, None, opts.faults, opts.kills, opts.changes)
    sizes = [1, 2, 4, 8, 16, 32, 64, 128]
    for k in sizes:
        trial = Options(**dict(vars(best), max_files=k))
        if fails(trial):
            best = trial
            break
    for flag in ("faults", "kills", "changes"):
        trial = Options(**dict(vars(best), **{flag: False}))
        if getattr(best, flag) and fails(trial):
            best = trial
    return best


def main():
    parser = argparse.ArgumentParser(prog="scripts/simulate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary")
    parser.add_argument("--seeds", help="A-B or 1,5,9 (default: the CI list)")
    parser.add_argument("--nights", type=int)
    parser.add_argument("--grammar", choices=["old", "new"], default="new")
    parser.add_argument("--max-files", type=int)
    parser.add_argument("--no-faults", action="store_true", help="no server faults")
    parser.add_argument("--no-kills", action="store_true", help="no signals, double runs or damaged state")
    parser.add_argument("--no-changes", action="store_true", help="upstream never changes")
    parser.add_argument("--shrink", action="store_true", help="shrink each failing seed")
    parser.add_argument("--keep", action="store_true", help="keep the seeds' folders")
    parser.add_argument("--regressions", action="store_true",
                        help="live the cases of simulate/regressions.txt (each must pass)")
    parser.add_argument("--apt", action="store_true",
                        help="the life of an APT mirror (an apt: entry) instead; --max-files bounds its packages")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    # A regression case is a line of arguments: its seeds, nights and switches, the binary aside.
    cases = [(args, None)]
    if args.regressions:
        with open(os.path.join(REPO, "simulate", "regressions.txt"), encoding="utf-8") as f:
            lines = [line.split("#", 1) for line in f if line.strip() and not line.startswith("#")]
        cases = [(parser.parse_args(words.split() + (["--binary", args.binary] if args.binary else [])
                                    + (["-v"] if args.verbose else [])), note.strip())
                 for words, note in lines]
    binary = args.binary or next((p for p in (os.path.join(REPO, ".build/release/batchdl"),
                                              os.path.join(REPO, ".build/debug/batchdl")) if os.path.exists(p)), None)
    if not binary or not os.path.exists(binary):
        sys.exit("scripts/simulate: no batchdl binary: build it (swift build) or give --binary PATH")
    for tool in ("gpg", "gpgv"):
        if not shutil.which(tool):
            sys.exit("scripts/simulate: %s is not installed: run scripts/setup" % tool)
    # One fixed folder, so that a seed's absolute dest (and every path) is the same on every replay;
    # a second simulation running at once gets a folder of its own.
    workdir = os.path.join(tempfile.gettempdir(), "batchdl-simulate")
    try:
        os.makedirs(workdir)
    except FileExistsError:
        lock = os.path.join(workdir, "pid")
        try:
            with open(lock) as f:
                os.kill(int(f.read()), 0)
            workdir = tempfile.mkdtemp(prefix="batchdl-simulate-")
        except (OSError, ValueError):
            # A simulation that was killed leaves its gpg-agent serving the old keyring folder.
            subprocess.run(["gpgconf", "--homedir", os.path.join(workdir, "gnupg"), "--kill", "gpg-agent"],
                           capture_output=True)
            shutil.rmtree(workdir, ignore_errors=True)
            os.makedirs(workdir)
    with open(os.path.join(workdir, "pid"), "w") as f:
        f.write(str(os.getpid()))
    keys = Keys(workdir)
    keys.certificates = nginx.Certificates(os.path.join(workdir, "ca")) if nginx.available() else None
    total_nights = total = 0
    started = time.time()
    try:
        for one, note in cases:
            if note:
                print("regression: %s" % note)
            total_nights, total = case(one, binary, keys, workdir, total_nights, total)
    finally:
        keys.close()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("kept %s" % workdir)
    print("(%.0f s)" % (time.time() - started))
    print("%d nights, %d violations" % (total_nights, total))
    sys.exit(1 if total else 0)


def case(args, binary, keys, workdir, total_nights, total):
    """Lives the seeds of one command line; returns the running totals."""
    seeds = parse_seeds(args.seeds) if args.seeds else apt_life.CI_SEEDS if args.apt else CI_SEEDS
    nights = args.nights or (apt_life.CI_NIGHTS if args.apt else CI_NIGHTS)
    one = apt_life.live if args.apt else live
    opts = Options(os.path.abspath(binary), args.grammar, nights, args.max_files, not args.no_faults,
                   not args.no_kills, not args.no_changes, args.keep)
    for seed in seeds:
        lived, found = one(seed, opts, keys, workdir, args.verbose)
        total_nights += lived
        total += len(found)
        for night, invariant, message in found:
            print("seed %d night %d invariant %d: %s" % (seed, night, invariant, message))
        if found:
            print("  replay: %s" % replay(args, seed, found[0][0] + 1, opts))
            if args.shrink:
                small = shrink(args, seed, opts, keys, workdir, kind(*found[0][1:]), found[0][0] + 1, one)
                print("  smallest: %s" % replay(args, seed, small.nights, small))
        sys.stdout.flush()
    return total_nights, total


if __name__ == "__main__":
    main()
