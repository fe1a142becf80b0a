"""Manifests from a small grammar: one or two sessions (default, ephemeral or background), dests
absolute or relative, shared or nested, run whole or in shards, and `index:`, `list:` and `download:` tasks with or without
`checksums:` and `signature:`, `prune:` with or without `max_delete`, `max_size`, `refresh`,
`mirrors` and a secret header. `Manifest.expected` says which upstream file each destination
holds: the model's map from the mirror to upstream.
"""

import json
import os

# The keys each grammar may use. 'old' is what batchdl 4806547 knows (checked with its `validate`).
GRAMMARS = {
    "old": {"kind", "dest", "prune", "max_delete", "max_size", "mirrors", "refresh", "headers",
            "retry", "timeouts", "index", "depth", "list", "download", "to", "checksums",
            "signature", "keyring"},
}
# 'new' adds what later binaries know: background sessions (`identifier:`, then `batchdl wait`) and
# sharded runs (`run --shard I/N`, then `report merge`).
GRAMMARS["new"] = GRAMMARS["old"] | {"identifier", "background", "shard"}

SECRET_HEADER = "X-Sim-Token"


def q(text):
    """A YAML scalar (JSON is YAML)."""
    return json.dumps(text, ensure_ascii=False)


class Task:
    def __init__(self, kind, to, depth=0, folder="", checksums=False, files=()):
        self.kind, self.to, self.depth, self.folder = kind, to, depth, folder
        self.checksums, self.files = checksums, list(files)


class Session:
    def __init__(self, name, kind, dest, dest_path):
        self.name, self.kind, self.dest, self.dest_path = name, kind, dest, dest_path
        self.identifier = None  # background sessions only
        self.prune = None  # None, True, or the max_delete value
        self.max_size = None
        self.refresh = False
        self.mirrors = False
        self.tasks = []


class Manifest:
    def __init__(self, rng, upstream, home, abs_root, grammar="old", new_rng=None):
        """`new_rng` decides what only the `new` grammar has, so that a seed's upstream, nights
        and other keys are the same in both grammars."""
        keys = GRAMMARS[grammar]
        self.home, self.upstream = home, upstream
        self.sessions = []
        main = self._session(rng, "mirror", rng.choice(["default"] * 4 + ["ephemeral"]),
                             rng.random() < 0.45, os.path.join(abs_root, "mirror"), "out")
        if main.kind == "default" and rng.random() < 0.6 and "prune" in keys:
            main.prune = rng.choice([True, rng.randint(1, 4), "%d%%" % rng.choice([10, 25, 50, 100])])
        if rng.random() < 0.15 and "max_size" in keys:
            main.max_size = 1 << 20
        main.refresh = rng.random() < 0.2 and "refresh" in keys
        main.mirrors = rng.random() < 0.3 and "mirrors" in keys
        checked = rng.random() < 0.65 and "checksums" in keys
        if rng.random() < 0.8:
            main.tasks.append(Task("index", "pub/", depth=rng.randint(2, 4), checksums=checked))
        if not main.tasks or rng.random() < 0.3:
            folder = rng.choice(["", "sub/", "docs/"])
            main.tasks.append(Task("list", "list/", folder=folder, checksums=checked and rng.random() < 0.5))
        if rng.random() < 0.25:
            main.tasks.append(Task("download", "dl/", files=upstream.stable[:2]))
        self.sessions.append(main)
        if rng.random() < 0.35:
            where = rng.choice(["shared", "nested", "own"])
            dest_path = {"shared": main.dest_path, "nested": os.path.join(main.dest_path, "nested"),
                         "own": os.path.join(home, "out2")}[where]
            extra = Session("extra", rng.choice(["default", "ephemeral"]),
                            dest_path if (where != "own" and main.dest.startswith("/")) or
                            (where == "own" and rng.random() < 0.5) else
                            os.path.relpath(dest_path, home), dest_path)
            if rng.random() < 0.5:
                extra.tasks.append(Task("download", "x/", files=upstream.stable))
            else:
                extra.tasks.append(Task("list", "xlist/", folder=rng.choice(["", "sub/"])))
            self.sessions.append(extra)
        self.secret_header = rng.random() < 0.7
        self.shards = 0  # run whole, or as N shards one after the other
        if new_rng:
            background, shards = new_rng.random() < 0.2, new_rng.random() < 0.3
            if background and "background" in keys:
                main.kind, main.identifier = "background", "sim.%s" % main.name
            elif shards and "shard" in keys:
                self.shards = new_rng.choice([2, 3])

    def _session(self, rng, name, kind, absolute, abs_path, rel):
        if absolute:
            return Session(name, kind, abs_path, abs_path)
        return Session(name, kind, rel + "/", os.path.join(self.home, rel))

    # -- the model's map ---------------------------------------------------------------------

    def sources(self, task):
        """The upstream paths a task names now, each with its path below the task's `to:`."""
        u = self.upstream
        if task.kind == "download":
            return {p: p for p in task.files}
        docs = u.documents()
        if task.kind == "list":
            return {p: p for p in sorted(u.files) if p.startswith(task.folder)}
        return {p: p for p in docs if p.count("/") < task.depth}

    def expected(self):
        """Absolute destination path -> (upstream path, session, task), as upstream is now."""
        out = {}
        for s in self.sessions:
            for t in s.tasks:
                for upath, rel in self.sources(t).items():
                    out[os.path.join(s.dest_path, t.to, rel)] = (upath, s, t)
        return out

    # -- the files ---------------------------------------------------------------------------

    def write(self, server, mirror_server):
        """Writes the manifest and its list files into `home`; returns the manifest's path."""
        u = self.upstream
        sums = server.url(u.sums_name)
        lines = ["version: 1", "defaults:", "  retry: {attempts: 3, backoff: 50ms, max_backoff: 200ms}",
                 "  timeouts: {request: 5s, resource: 2m}", "sessions:"]
        for s in self.sessions:
            lines += ["  %s:" % s.name, "    kind: %s" % s.kind, "    dest: %s" % q(s.dest)]
            if s.identifier:
                lines.append("    identifier: %s" % s.identifier)
            if s.prune is True:
                lines.append("    prune: true")
            elif s.prune is not None:
                lines.append("    prune: {max_delete: %s}" % q(s.prune))
            if s.max_size:
                lines.append("    max_size: %d" % s.max_size)
            if s.refresh:
                lines.append("    refresh: always")
            if s.mirrors:
                lines += ["    mirrors:", "      %s: [%s]" % (q(server.url()), q(mirror_server.url()))]
            if server.url().startswith("https:"):
                lines.append("    tls: {ca_file: %s}" % q(server.certs.ca))
            if self.secret_header:
                lines += ["    headers:", "      %s: \"${SIM_TOKEN}\"" % SECRET_HEADER]
            lines.append("    tasks:")
            for t in s.tasks:
                if t.kind == "index":
                    lines += ["      - index: %s" % q(server.url()), "        depth: %d" % t.depth]
                elif t.kind == "list":
                    name = "urls-%s.txt" % s.name
                    with open(os.path.join(self.home, name), "w", encoding="utf-8", errors="surrogateescape") as f:
                        for upath, rel in self.sources(t).items():
                            f.write("%s  %s\n" % (server.url(upath), q(rel)))
                    lines.append("      - list: %s" % name)
                else:
                    for upath, rel in self.sources(t).items():
                        lines += ["      - download: %s" % q(server.url(upath)), "        to: %s" % q(t.to + rel)]
                    continue
                lines.append("        to: %s" % q(t.to))
                if t.checksums:
                    lines.append("        checksums: %s" % q(sums))
                    if u.signed:
                        lines += ["        signature: %s" % q(sums + ".asc"), "        keyring: keyring.gpg"]
        path = os.path.join(self.home, "mirror.yaml")
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write("\n".join(lines) + "\n")
        return path
