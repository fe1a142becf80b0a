import TestSupport
import Testing

@testable import BatchDLManifest
@testable import BatchDLPlan
@testable import BatchDLSupport

/// An `apt:` entry planned from a repository's result given as a value (no sockets): pinned
/// downloads, publish waits, and each suite's index files and roots as one publish group, in one
/// shard however the run is split.
@Suite struct AptExpansionTests {
  static let yaml = """
    version: 1
    sessions:
      s:
        dest: mirror
        tasks:
          - apt: https://h/debian/
            suites: [stable, testing]
            components: [main]
            architectures: [amd64]
            keyring: k.gpg
    """

  static func file(_ path: String, _ text: String) -> RepositoryFile {
    let bytes = Array(text.utf8)
    return RepositoryFile(
      path: Array(path.utf8), size: Int64(bytes.count), sha256: FileDigest.hex(of: bytes, algorithm: .sha256))
  }

  func plan() throws -> Plan {
    let folder = TemporaryDirectory()
    let path = folder.write("manifest.yaml", Self.yaml)
    let (loaded, diagnostics) = ManifestLoader.read(path: path, environment: [:])
    let manifest = try #require(loaded, "\(diagnostics)")
    let session = manifest.sessions[0]
    guard case .apt(let spec) = session.tasks[0] else { throw PlanFailed(description: "no apt entry") }
    var result = RepositoryResult()
    for suite in ["stable", "testing"] {
      var part = RepositoryPart(name: suite)
      let pool = (0..<40).map { Self.file("pool/main/p/p\($0)/p\($0)_\(suite).deb", "deb \($0) \(suite)") }
      part.pool = pool.map(\.path)
      part.indexes = [
        Self.file("dists/\(suite)/main/binary-amd64/Packages", "Packages of \(suite)"),
        Self.file("dists/\(suite)/main/binary-amd64/Packages.xz", "xz of \(suite)"),
      ]
      part.roots = [
        Self.file("dists/\(suite)/Release", "Release of \(suite)"),
        Self.file("dists/\(suite)/Release.gpg", "signature of \(suite)"),
        Self.file("dists/\(suite)/InRelease", "InRelease of \(suite)"),
      ]
      result.pool += pool
      result.indexes += part.indexes
      result.roots += part.roots
      result.parts.append(part)
    }
    var crawl = RepositoryCrawl()
    crawl.result = result
    crawl.pages = [ListingPage(url: spec.url + "dists/stable/InRelease", outcome: .fetched)]
    var set = DescriptorSet()
    set.repositories[DescriptorSet.key(of: spec, for: session, in: manifest)] = crawl
    return try Planner().plan(manifest, warnings: diagnostics, descriptors: set)
  }

  @Test func eachSuiteIsOnePublishGroupInOneShardAfterItsPool() throws {
    let plan = try plan()
    #expect(plan.publishGroups.count == 2)
    for group in plan.publishGroups {
      #expect(group.members.count == 5, "\(group.name)")
      let keys = Set(group.members.map { plan.requests[Int($0)].shardKey })
      #expect(keys.count == 1, "one shard for \(group.name)")
      // The roots wait for the indexes and the roots before them; the indexes for the pool.
      let roots = group.members.suffix(3)
      for (offset, root) in roots.enumerated() {
        let waits = Set(plan.requests[Int(root)].dependencies)
        #expect(waits.isSuperset(of: group.members.prefix(2 + offset)), "\(group.name) root \(offset)")
      }
      for index in group.members.prefix(2) { #expect(plan.requests[Int(index)].dependencies.count == 40) }
      #expect(group.removals.isEmpty)
    }
    // Pool files are not pulled into their suite's shard: they spread.
    let grouped = Set(plan.publishGroups.flatMap(\.members))
    let poolKeys = Set(plan.requests.indices.filter { !grouped.contains(Int32($0)) }.map { plan.requests[$0].shardKey })
    #expect(poolKeys.count > 10)
    // Every file is pinned to its size and SHA-256.
    #expect(plan.tasks.allSatisfy { plan.expectation(of: $0)?.digest?.algorithm == .sha256 })
  }
}
