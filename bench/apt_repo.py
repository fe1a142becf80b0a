#!/usr/bin/env python3
"""A synthetic signed APT repository for bench/apt (Python 3, standard library only).

    apt_repo.py make ROOT --packages N [--archs amd64,arm64] [--seed S] [--no-pool]
                --gnupghome DIR --key USER-ID
    apt_repo.py change ROOT [--percent 1] --gnupghome DIR --key USER-ID
    apt_repo.py check MIRROR UPSTREAM [--suite stable]

make: ROOT/dists/stable/{Release,InRelease,Release.gpg} and, for each architecture,
  ROOT/dists/stable/main/binary-ARCH/{Packages,Packages.gz,Packages.xz} with a by-hash copy of each
  (by-hash/SHA256/DIGEST), and ROOT/pool/main/p/pkgNNNNN/pkgNNNNN_VERSION_ARCH.deb: N package
  names, each built for every architecture (so N stanzas in each Packages and N x ARCHS pool
  files), each .deb 1 to 16 KiB of random bytes. Everything is drawn from a generator seeded with
  --seed, so that the same arguments make the same bytes (the signatures aside). The Release
  (Suite and Codename `stable`, `Acquire-By-Hash: yes`) lists each index with its size and
  SHA256; InRelease (clear-signed) and Release.gpg (detached, armored) are made by gpg with the
  key --key of --gnupghome. --no-pool writes the indexes alone (for `plan`, which reads them and
  fetches no pool file). The state the next `change` needs is kept in ROOT/.state.json.

change: a new version of PERCENT% of the package names (at least one), drawn with the seed and
  the number of the change: new pool files (new bytes and sizes) for every architecture, the old
  ones deleted, new Packages indexes (the old by-hash copies stay, as on a real archive), a new
  Release whose Date is later than the last one, signed again. In place, in about a second.

check: whether MIRROR (the folder holding a mirror's dists/ and pool/) holds the repository at
  UPSTREAM as it is now: its dists/SUITE/Release byte for byte (InRelease and Release.gpg too
  where the mirror has them), every index file it has that the Release lists with the Release's
  size and SHA256 (at least one form of each Packages), and every pool file the Packages name
  with its stanza's Size and SHA256. Prints one line; exits 1 if anything is missing or wrong.
  Pool files no index names (a pruned-later or not-yet-cleaned old version) are counted, not
  failed.
"""

import argparse
import email.utils
import gzip
import hashlib
import json
import lzma
import os
import random
import subprocess
import sys
import time

SUITE = "stable"
COMPONENT = "main"
WORDS = (
    "library tool data file network client server daemon utility command line interface "
    "development support runtime module plugin extension documentation binary shared static "
    "package manager parser format compression archive secure fast small simple portable "
    "graphics audio video text editor terminal system kernel driver firmware python perl"
).split()
SECTIONS = ["admin", "devel", "libs", "net", "utils", "text", "web", "python", "graphics", "sound"]


def write_atomic(path, data):
    """Writes DATA at PATH through a temporary file renamed over it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def pool_path(i, version, arch):
    name = f"pkg{i:05d}"
    return f"pool/{COMPONENT}/p/{name}/{name}_{version}_{arch}.deb"


def version_of(generation):
    return f"1.{generation}-1"


def stanza(i, arch, version, size, sha256, md5):
    """One Packages stanza, about 700 bytes as in Debian's main (its fields, in its order)."""
    rng = random.Random(i)
    name = f"pkg{i:05d}"
    words = [rng.choice(WORDS) for _ in range(rng.randint(28, 52))]
    lines = [" " + " ".join(words[k : k + 10]) for k in range(8, len(words), 10)]
    depends = ", ".join(f"pkg{rng.randrange(100000):05d} (>= 1.0)" for _ in range(rng.randint(1, 4)))
    return (
        f"Package: {name}\n"
        f"Source: {name}\n"
        f"Version: {version}\n"
        f"Installed-Size: {size // 1024 * 3 + 4}\n"
        f"Maintainer: Bench Maintainers <bench-{i % 97}@example.org>\n"
        f"Architecture: {arch}\n"
        f"Depends: libc6 (>= 2.36), {depends}\n"
        f"Description: {' '.join(words[:8])}\n"
        + "\n".join(lines)
        + "\n"
        f"Homepage: https://example.org/{name}\n"
        f"Description-md5: {hashlib.md5(name.encode()).hexdigest()}\n"
        f"Section: {SECTIONS[i % len(SECTIONS)]}\n"
        f"Priority: optional\n"
        f"Filename: {pool_path(i, version, arch)}\n"
        f"Size: {size}\n"
        f"MD5sum: {md5}\n"
        f"SHA256: {sha256}\n"
    )


def write_deb(root, state, i, arch, rng):
    """Writes package I's .deb for ARCH at its state's version; returns its entry."""
    data = rng.randbytes(rng.randint(1024, 16384))
    write_atomic(os.path.join(root, pool_path(i, version_of(state["generation_of"][i]), arch)), data)
    return [len(data), hashlib.sha256(data).hexdigest(), hashlib.md5(data).hexdigest()]


def synthetic_entry(i, arch, seed):
    """A pool file's entry when no pool is written (--no-pool): size and digests of nothing real."""
    size = 1024 + (i * 7919 + seed) % 15361
    key = f"{seed}/{i}/{arch}".encode()
    return [size, hashlib.sha256(key).hexdigest(), hashlib.md5(key).hexdigest()]


def write_indexes(root, state):
    """Writes every Packages (plain, .gz, .xz, by-hash copies), the Release, InRelease, Release.gpg."""
    dists = os.path.join(root, "dists", SUITE)
    listed = []
    for arch in state["archs"]:
        entries = state["entries"][arch]
        text = "\n".join(
            stanza(i, arch, version_of(state["generation_of"][i]), *entries[i]) for i in range(state["packages"])
        ).encode()
        folder = f"{COMPONENT}/binary-{arch}"
        forms = [
            ("Packages", text),
            ("Packages.gz", gzip.compress(text, compresslevel=6, mtime=0)),
            ("Packages.xz", lzma.compress(text, preset=1)),
        ]
        for name, data in forms:
            digest = hashlib.sha256(data).hexdigest()
            by_hash = os.path.join(dists, folder, "by-hash", "SHA256", digest)
            if not os.path.exists(by_hash):
                write_atomic(by_hash, data)
            write_atomic(os.path.join(dists, folder, name), data)
            listed.append((f"{folder}/{name}", len(data), digest))
    # Each Date later than the last one (a mirror refuses a Release older than its copy).
    stamp = max(int(time.time()), state.get("date", 0) + 1)
    state["date"] = stamp
    release = (
        "Origin: batchdl-bench\n"
        "Label: batchdl-bench\n"
        f"Suite: {SUITE}\n"
        f"Codename: {SUITE}\n"
        f"Date: {email.utils.formatdate(stamp, usegmt=True).replace('GMT', 'UTC')}\n"
        f"Architectures: {' '.join(state['archs'])}\n"
        f"Components: {COMPONENT}\n"
        "Acquire-By-Hash: yes\n"
        "Description: synthetic repository of bench/apt\n"
        "SHA256:\n" + "".join(f" {digest} {size:16d} {path}\n" for path, size, digest in listed)
    )
    write_atomic(os.path.join(dists, "Release"), release.encode())
    gpg = ["gpg", "--homedir", state["gnupghome"], "--batch", "--yes", "--local-user", state["key"]]
    gpg += ["--digest-algo", "SHA256"]
    release_path = os.path.join(dists, "Release")
    for args, name in ((["--clearsign"], "InRelease"), (["--armor", "--detach-sign"], "Release.gpg")):
        tmp = os.path.join(dists, name + ".tmp")
        subprocess.run(gpg + ["--output", tmp] + args + [release_path], check=True)
        os.replace(tmp, os.path.join(dists, name))


def save(root, state):
    kept = {k: v for k, v in state.items() if k not in ("gnupghome", "key")}
    write_atomic(os.path.join(root, ".state.json"), json.dumps(kept).encode())


def make(args):
    archs = args.archs.split(",")
    state = {
        "seed": args.seed,
        "packages": args.packages,
        "archs": archs,
        "pool": not args.no_pool,
        "changes": 0,
        "generation_of": [0] * args.packages,
        "entries": {},
        "gnupghome": args.gnupghome,
        "key": args.key,
    }
    rng = random.Random(args.seed)
    for arch in archs:
        if state["pool"]:
            state["entries"][arch] = [write_deb(args.root, state, i, arch, rng) for i in range(args.packages)]
        else:
            state["entries"][arch] = [synthetic_entry(i, arch, args.seed) for i in range(args.packages)]
    write_indexes(args.root, state)
    save(args.root, state)


def change(args):
    with open(os.path.join(args.root, ".state.json")) as f:
        state = json.load(f)
    state["gnupghome"], state["key"] = args.gnupghome, args.key
    state["changes"] += 1
    rng = random.Random(state["seed"] * 1000003 + state["changes"])
    count = max(1, state["packages"] * args.percent // 100)
    for i in sorted(rng.sample(range(state["packages"]), count)):
        old = version_of(state["generation_of"][i])
        state["generation_of"][i] = state["changes"]
        for arch in state["archs"]:
            if state["pool"]:
                state["entries"][arch][i] = write_deb(args.root, state, i, arch, rng)
                os.remove(os.path.join(args.root, pool_path(i, old, arch)))
            else:
                state["entries"][arch][i] = synthetic_entry(i * 31 + state["changes"], arch, state["seed"])
    write_indexes(args.root, state)
    save(args.root, state)
    print(f"changed {count} of {state['packages']} packages (change {state['changes']})")


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def check(args):
    mirror, upstream = args.mirror, args.upstream
    dists = f"dists/{args.suite}"
    problems = []

    def same(relative, required):
        mine = os.path.join(mirror, relative)
        if not os.path.isfile(mine):
            if required:
                problems.append(f"{relative} missing")
            return
        with open(mine, "rb") as a, open(os.path.join(upstream, relative), "rb") as b:
            if a.read() != b.read():
                problems.append(f"{relative} differs from upstream's")

    same(f"{dists}/Release", True)
    same(f"{dists}/InRelease", False)
    same(f"{dists}/Release.gpg", False)
    with open(os.path.join(upstream, dists, "Release")) as f:
        release = f.read()
    listed = {}
    for line in release.split("SHA256:\n", 1)[1].splitlines():
        if not line.startswith(" "):
            break
        digest, size, path = line.split()
        listed[path] = (int(size), digest)
    named = {}
    indexes = 0
    for folder in sorted({p.rsplit("/", 1)[0] for p in listed if p.endswith("/Packages")}):
        text = None
        for name, opener in (("Packages", None), ("Packages.xz", lzma.open), ("Packages.gz", gzip.open)):
            relative = f"{folder}/{name}"
            path = os.path.join(mirror, dists, relative)
            if relative not in listed or not os.path.isfile(path):
                continue
            size, digest = listed[relative]
            if os.path.getsize(path) != size or sha256_file(path) != digest:
                problems.append(f"{dists}/{relative} does not match the Release")
                continue
            indexes += 1
            if text is None:
                with (opener or open)(path, "rb") as f:
                    text = f.read().decode()
        if text is None:
            problems.append(f"{dists}/{folder}: no Packages in any form")
            continue
        for block in text.split("\n\n"):
            fields = {}
            for line in block.splitlines():
                if line and not line.startswith(" ") and ":" in line:
                    key, value = line.split(":", 1)
                    fields[key] = value.strip()
            if "Filename" in fields:
                named[fields["Filename"]] = (int(fields["Size"]), fields["SHA256"])
    bad = 0
    for relative, (size, digest) in named.items():
        path = os.path.join(mirror, relative)
        if not os.path.isfile(path) or os.path.getsize(path) != size or sha256_file(path) != digest:
            bad += 1
            if bad <= 3:
                problems.append(f"{relative} missing or wrong")
    if bad > 3:
        problems.append(f"... {bad} pool files missing or wrong in all")
    extra = 0
    for folder, _, files in os.walk(os.path.join(mirror, "pool")):
        for name in files:
            if os.path.relpath(os.path.join(folder, name), mirror) not in named:
                extra += 1
    if problems:
        print("WRONG: " + "; ".join(problems))
        sys.exit(1)
    print(f"ok: Release as upstream's, {indexes} index files, {len(named)} pool files checked; {extra} not named")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("make")
    p.add_argument("root")
    p.add_argument("--packages", type=int, default=10000)
    p.add_argument("--archs", default="amd64,arm64")
    p.add_argument("--seed", type=int, default=40)
    p.add_argument("--no-pool", action="store_true")
    p.add_argument("--gnupghome", required=True)
    p.add_argument("--key", required=True)
    p = sub.add_parser("change")
    p.add_argument("root")
    p.add_argument("--percent", type=int, default=1)
    p.add_argument("--gnupghome", required=True)
    p.add_argument("--key", required=True)
    p = sub.add_parser("check")
    p.add_argument("mirror")
    p.add_argument("upstream")
    p.add_argument("--suite", default=SUITE)
    args = parser.parse_args()
    {"make": make, "change": change, "check": check}[args.command](args)


if __name__ == "__main__":
    main()
