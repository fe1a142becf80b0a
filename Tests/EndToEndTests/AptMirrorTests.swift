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

    init(_ repository: AptRepositoryFixture) throws {
      self.repository = repository
      nginx = try NginxServer()
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

    func manifest(extra: String = "", session: String = "", suites: String? = nil) {
      run.manifest(
        """
        version: 1
        sessions:
          debian:
            dest: mirror
            tls: {ca_file: ca.pem}
            retry: {attempts: 1}
        \(session)
            tasks:
              - apt: \(url)
                suites: \(suites ?? "[" + repository.suites.joined(separator: ", ") + "]")
                components: [\(repository.components.joined(separator: ", "))]
                architectures: [\(repository.architectures.joined(separator: ", "))]
                sources: true
                keyring: keyring.gpg
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
}
