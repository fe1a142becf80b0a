import Foundation
import TestSupport
import Testing

/// `apt:` against a synthetic signed repository (two suites, two components, two architectures,
/// `.gz` and `.xz` indexes, by-hash copies) served by nginx over TLS with HTTP/2.
@Suite(.serialized) struct AptMirrorTests {
  /// The repository served at `/debian/` by a fresh nginx, and a fixture folder that trusts it.
  final class Served {
    let repository: AptRepositoryFixture
    let nginx: NginxServer
    let run: RunFixture

    /// `directives`: more lines in upstream nginx's `server` block (a slow pool).
    init(_ repository: AptRepositoryFixture, directives: String = "") throws {
      self.repository = repository
      nginx = try NginxServer(serverDirectives: directives)
      run = try RunFixture()
      run.trustCA(of: nginx)
      try sync()
      _ = try ExternalTool.run(
        try #require(ExternalTool.find("cp")), [repository.keyring, run.folder.path + "/keyring.gpg"])
    }

    deinit { nginx.stop() }

    /// Copies the repository as it is now to nginx's `/debian/`.
    func sync() throws {
      let target = nginx.root + "/debian"
      try? FileManager.default.removeItem(atPath: target)
      let copy = try ExternalTool.run(try #require(ExternalTool.find("cp")), ["-a", repository.root, target])
      #expect(copy.status == 0, "\(copy.output)")
    }

    var url: String { nginx.url("/debian/") }

    /// The manifest of one `apt:` entry for the whole repository; `keyring`, `url` (default: the
    /// repository's) and `suites` replace what it names, `extra` adds keys to the entry and
    /// `session` to its session.
    func manifest(
      extra: String = "", session: String = "", suites: String? = nil, keyring: String = "keyring.gpg",
      url: String? = nil, dest: String = "mirror"
    ) {
      run.manifest(
        """
        version: 1
        sessions:
          debian:
            dest: \(dest)
            tls: {ca_file: ca.pem}
            retry: {attempts: 1}
        \(session)
            tasks:
              - apt: \(url ?? self.url)
                suites: \(suites ?? "[" + repository.suites.joined(separator: ", ") + "]")
                components: [\(repository.components.joined(separator: ", "))]
                architectures: [\(repository.architectures.joined(separator: ", "))]
                sources: true
                keyring: \(keyring)
        \(extra)
        """)
    }

    /// The mirror's copy of `relative` (below the repository's root).
    func mirrored(_ relative: String) -> [UInt8]? {
      FileManager.default.contents(atPath: run.folder.path + "/mirror/" + relative).map { Array($0) }
    }
  }

  @Test func aRepositoryIsMirroredWholeAndAnUnchangedRunSendsOnlyTheRoots() throws {
    let served = try Served(try AptRepositoryFixture())
    served.manifest()
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let repository = served.repository
    for (path, file) in repository.pool {
      let bytes = served.mirrored(path)
      #expect(bytes.map { AptRepositoryFixture.sha256($0) } == file.sha256, "\(path)")
    }
    for suite in repository.suites {
      for name in ["InRelease", "Release", "Release.gpg", "main/binary-amd64/Packages.xz", "contrib/source/Sources.gz"]
      {
        #expect(
          served.mirrored("dists/\(suite)/\(name)") == repository.read("dists/\(suite)/\(name)"), "\(suite) \(name)")
      }
      let packages = try #require(repository.read("dists/\(suite)/main/binary-arm64/Packages.gz"))
      let byHash = "dists/\(suite)/main/binary-arm64/by-hash/SHA256/\(AptRepositoryFixture.sha256(packages))"
      #expect(served.mirrored(byHash) == packages)
    }
    // The same .deb in both suites is one request.
    let common = served.nginx.requests().filter { $0.uri.contains("common_1.0_amd64.deb") && $0.uri.contains("/main/") }
    #expect(common.count == 1, "\(common.map(\.uri))")

    // Unchanged: the three roots of each suite are asked for (304), nothing else.
    let before = served.nginx.requests().count
    result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let again = served.nginx.requests().dropFirst(before)
    #expect(again.count == 3 * repository.suites.count, "\(again.map { "\($0.uri) \($0.status)" })")
    #expect(again.allSatisfy { $0.status == 304 }, "\(again.map { "\($0.uri) \($0.status)" })")
    #expect(again.allSatisfy { $0.proto == "HTTP/2.0" })

    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: served.run.folder.path)
    #expect(plan.status == 0, "\(plan.stderr)")
    #expect(plan.stdout.contains("dists/stable/InRelease: verified, names"), "\(plan.stdout)")
    #expect(
      plan.stdout.contains("dists/testing/main/binary-amd64/Packages.xz: verified, names 4 files of "), "\(plan.stdout)"
    )
  }

  /// The real client against the mirror (a second nginx serving `dest`), before, during and after
  /// a mirror update in which packages change, leave and arrive: `apt-get update` never sees a
  /// hash-sum mismatch, and after the run it downloads the new versions.
  @Test func aptGetNeverSeesAHashSumMismatchBeforeDuringOrAfterAnUpdate() throws {
    // The update's new pool files (`+u1` versions) trickle at 40 bytes a second: the run spends
    // seconds on the pool before it may publish the indexes, and the client keeps asking the
    // mirror meanwhile.
    let served = try Served(
      try AptRepositoryFixture(),
      directives: "location ~ \"^/debian/pool/.*[+]u1\" { limit_rate 40; limit_rate_after 0; }")
    served.manifest()
    let result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let mirror = try NginxServer(root: served.run.folder.path + "/mirror")
    defer { mirror.stop() }
    let client = try AptClient(
      repository: mirror.url("/"), suites: ["stable"], components: ["main", "contrib"],
      keyring: served.repository.keyring, caCertificate: mirror.certificates.caCertificate)
    var outcome = try client.update()
    #expect(outcome.succeeded, "\(outcome.output)")
    outcome = try client.download(["pkg0", "pkg1"])
    #expect(
      outcome.succeeded && outcome.files == ["pkg0_1.0-6_amd64.deb", "pkg1_1.1-6_amd64.deb"], "\(outcome.output)")

    try served.repository.update(changing: ["pkg0"], removing: ["pkg1"], adding: ["newpkg"])
    try served.sync()
    let running = try served.run.start()
    var rounds = 0
    while running.isRunning && rounds < 30 {
      rounds += 1
      outcome = try client.update()
      #expect(!outcome.hashSumMismatch && !outcome.unexpectedSize, "round \(rounds): \(outcome.output)")
      #expect(outcome.succeeded, "round \(rounds): \(outcome.output)")
    }
    running.waitUntilExit()
    #expect(running.terminationStatus == 0)
    #expect(rounds >= 2, "the client asked the mirror \(rounds) times during the run")
    outcome = try client.update()
    #expect(outcome.succeeded, "\(outcome.output)")
    outcome = try client.download(["pkg0", "newpkg"])
    #expect(
      outcome.succeeded && outcome.files == ["newpkg_1.0+u1_amd64.deb", "pkg0_1.0-6+u1_amd64.deb"], "\(outcome.output)")
    outcome = try client.download(["pkg1"])
    #expect(!outcome.succeeded, "pkg1 left the indexes: \(outcome.output)")
  }

  /// Pool files upstream removed stay for `keep_removed`, then prune deletes them; the by-hash copy
  /// of a replaced index is kept as long; everything under `max_delete`.
  @Test func removedPoolFilesStayForKeepRemovedThenArePruned() throws {
    let served = try Served(try AptRepositoryFixture(suites: ["stable"], components: ["main"]))
    served.manifest(extra: "        keep_removed: 3s", session: "    prune: {max_delete: \"50%\"}")
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let removed = served.repository.poolBySuite["stable"]?.filter { $0.contains("/pkg1/") }.sorted() ?? []
    #expect(removed.count == 4, "\(removed)")
    let packages = try #require(served.repository.read("dists/stable/main/binary-amd64/Packages.xz"))
    let oldByHash = "dists/stable/main/binary-amd64/by-hash/SHA256/\(AptRepositoryFixture.sha256(packages))"
    #expect(served.mirrored(oldByHash) == packages)

    try served.repository.update(removing: ["pkg1"], deletingOldPool: true)
    try served.sync()
    result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    for path in removed { #expect(served.mirrored(path) != nil, "\(path) is kept") }
    #expect(served.mirrored(oldByHash) == packages)
    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: served.run.folder.path)
    #expect(plan.stdout.contains("kept by keep_removed"), "\(plan.stdout)")

    sleep(4)
    result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    for path in removed { #expect(served.mirrored(path) == nil, "\(path) is pruned") }
    #expect(served.mirrored(oldByHash) == nil)
    let report =
      try JSONSerialization.jsonObject(with: Data((served.run.folder.read("report.json") ?? "").utf8)) as? [String: Any]
    let pruned = report?["pruned"] as? [String] ?? []
    // The removed pool files and the by-hash copies of the replaced indexes, nothing else.
    #expect(Set(removed.map { "mirror/" + $0 } + ["mirror/" + oldByHash]).isSubset(of: Set(pruned)), "\(pruned)")
    #expect(pruned.allSatisfy { $0.contains("/pkg1/") || $0.contains("/by-hash/SHA256/") }, "\(pruned)")
    // The new indexes and every other pool file stay.
    #expect(served.mirrored("dists/stable/InRelease") == served.repository.read("dists/stable/InRelease"))
    #expect(served.mirrored("pool/main/p/pkg0/pkg0_1.0-6_amd64.deb") != nil)
  }

  /// An architecture dropped from the manifest: its index files (no task names them any more) are
  /// deleted at once, its pool files and the by-hash copies of its indexes stay for keep_removed.
  @Test func indexFilesNoLongerNamedGoAtOncePoolFilesAfterKeepRemoved() throws {
    let served = try Served(try AptRepositoryFixture(suites: ["stable"], components: ["main"]))
    served.manifest(extra: "        keep_removed: 1d", session: "    prune: {max_delete: \"50%\"}")
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let manifest = try #require(served.run.folder.read("manifest.yaml"))
    served.run.folder.write("manifest.yaml", manifest.replacingOccurrences(of: "[amd64, arm64]", with: "[amd64]"))
    result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    for name in ["Packages", "Packages.gz", "Packages.xz"] {
      #expect(served.mirrored("dists/stable/main/binary-arm64/\(name)") == nil, "\(name) is deleted at once")
      #expect(served.mirrored("dists/stable/main/binary-amd64/\(name)") != nil)
    }
    let arm = served.repository.pool.keys.filter { $0.hasSuffix("_arm64.deb") }
    #expect(!arm.isEmpty)
    for path in arm { #expect(served.mirrored(path) != nil, "\(path) stays for keep_removed") }
    let packages = try #require(served.repository.read("dists/stable/main/binary-arm64/Packages.xz"))
    #expect(
      served.mirrored("dists/stable/main/binary-arm64/by-hash/SHA256/\(AptRepositoryFixture.sha256(packages))")
        == packages)
  }

  /// An absolute `dest`: the published root's Date is read there (a rollback is refused), and
  /// pool files upstream removed are pruned from there.
  @Test func anAbsoluteDestIsTheMirrorForRollbackAndPrune() throws {
    let newer = try AptRepositoryFixture(
      suites: ["stable"], components: ["main"], date: "Sun, 29 Nov 2026 10:00:00 UTC")
    let served = try Served(newer)
    let dest = served.run.folder.path + "/mirror"
    served.manifest(session: "    prune: {max_delete: \"50%\"}", dest: dest)
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let published = try #require(served.mirrored("dists/stable/InRelease"))
    try newer.update(removing: ["pkg1"], deletingOldPool: true)
    try served.sync()
    result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(newer.poolBySuite["stable"]?.contains { $0.contains("/pkg1/") } == false)
    #expect(!served.run.files().contains { $0.hasPrefix("mirror/pool/") && $0.contains("/pkg1/") })
    #expect(served.mirrored("dists/stable/InRelease") != published)
    // An older Date than the one published under the absolute dest: refused.
    try newer.update(date: "Sat, 28 Nov 2026 09:00:00 UTC")
    try served.sync()
    result = try served.run.run()
    #expect(result.status != 0)
    let failure = try AptHostileTests.error(served, AptHostileTests.id(served, "dists/stable/InRelease"))
    #expect(failure.code == "signature" && failure.message.contains("rollback"), "\(failure)")
  }
}
