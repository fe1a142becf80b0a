import Foundation
import TestSupport
import Testing

@testable import BatchDLManifest

/// The synthetic APT repository: gpgv verifies its InRelease and Release.gpg, the signed text
/// batchdl takes apart is the text gpgv writes, and the readers find every pool file from it.
@Suite struct AptRepositoryFixtureTests {
  @Test func gpgvVerifiesAndTheReadersFindEveryPoolFile() throws {
    let repository = try AptRepositoryFixture()
    let gpgv = try #require(ExternalTool.find("gpgv"))
    var found: [String: AptRepositoryFixture.PoolFile] = [:]
    for suite in repository.suites {
      let dists = "dists/\(suite)"
      let output = repository.folder.path + "/\(suite)-verified"
      let verified = try ExternalTool.run(
        gpgv, ["--keyring", repository.keyring, "--output", output, repository.path("\(dists)/InRelease")])
      #expect(verified.status == 0, "\(verified.output)")
      let detached = try ExternalTool.run(
        gpgv,
        ["--keyring", repository.keyring, repository.path("\(dists)/Release.gpg"), repository.path("\(dists)/Release")])
      #expect(detached.status == 0, "\(detached.output)")

      let document = try #require(repository.read("\(dists)/InRelease"))
      let text = try AptClearSigned.signedText(of: document).get()
      #expect(text.bytes == Array(try Data(contentsOf: URL(fileURLWithPath: output))), "the text gpgv verified")
      #expect(text.bytes == repository.read("\(dists)/Release"))

      let release = try AptRelease.parse(document: document).get()
      #expect(release.refused.isEmpty && release.acquireByHash && release.suite == suite)
      #expect(release.date == AptDate.seconds(Array(repository.date.utf8)))
      let plain = try AptRelease.parse(try #require(repository.read("\(dists)/Release"))).get()
      #expect(
        plain.files
          == release.files.map {
            var file = $0; file.line -= 3; return file
          })

      let plan = try AptIndexSelection.select(
        release: release, suite: suite, components: repository.components,
        architectures: repository.architectures, sources: true
      ).get()
      #expect(plan.missing.isEmpty, "\(plan.missing)")
      #expect(plan.targets.count == release.files.count)
      var suitePool: Set<String> = []
      for target in plan.targets {
        for path in [target.path, try #require(target.byHashPath)] {
          let bytes = try #require(repository.read(String(decoding: path, as: UTF8.self)))
          #expect(Int64(bytes.count) == target.size && AptRepositoryFixture.sha256(bytes) == target.sha256)
        }
        guard target.isRead else { continue }
        #expect(target.compression == .xz)
        let xz = try #require(ExternalTool.find("xz"))
        let decompressed = try ExternalTool.run(
          xz, ["-dc", repository.path(String(decoding: target.path, as: UTF8.self))])
        let index = try AptIndexReader.read(
          Array(decompressed.stdout.utf8), kind: target.kind == .sources ? .sources : .packages
        ).get()
        #expect(index.refused.isEmpty, "\(index.refused)")
        for file in index.files {
          let path = String(decoding: file.path, as: UTF8.self)
          suitePool.insert(path)
          found[path] = AptRepositoryFixture.PoolFile(size: file.size, sha256: file.sha256)
          let bytes = try #require(repository.read(path))
          #expect(Int64(bytes.count) == file.size && AptRepositoryFixture.sha256(bytes) == file.sha256)
        }
      }
      #expect(suitePool == repository.poolBySuite[suite])
    }
    #expect(found == repository.pool)
    #expect(repository.pool.count == 2 * 2 * (2 * 3 + 3 * 2) + 2 * 2)
  }
}
