import BatchDLSupport
import Foundation
import TestSupport
import Testing

@testable import BatchDLManifest

/// The APT chain as a `RepositoryFormat`: documents in, pool files, index files and roots out,
/// each failure alone.
@Suite struct AptFormatTests {
  /// 2026-11-28 12:00 UTC: after the fixture's Date, before its Valid-Until.
  static let now: Int64 = 1_795_867_200

  /// What a run of `format` against `serve` fetched and came to.
  struct Run {
    var result: RepositoryResult
    var fetched: [String] = []
  }

  /// Steps `format` until done (at most 5 steps), answering each request with `serve`; roots get
  /// `verified` and `storedDate`.
  static func run(
    _ format: some RepositoryFormat, now: Int64 = now, verified: Bool = true, releaseVerified: Bool = true,
    storedDate: Int64? = nil, serve: ([UInt8]) -> [UInt8]?
  ) throws -> Run {
    var documents = RepositoryDocuments(now: now)
    var fetched: [String] = []
    for _ in 0..<5 {
      switch format.step(documents) {
      case .done(let result): return Run(result: result, fetched: fetched)
      case .fetch(let requests):
        #expect(!requests.isEmpty)
        for request in requests {
          #expect(documents[request.fetchPath] == nil, "asked twice")
          let name = String(decoding: request.fetchPath, as: UTF8.self)
          fetched.append(name)
          let isRoot = ["InRelease", "Release", "Release.gpg"].contains { name.hasSuffix("/" + $0) }
          documents.documents[request.fetchPath] = RepositoryDocument(
            bytes: serve(request.fetchPath),
            signatureVerified: isRoot && verified && (releaseVerified || !name.hasSuffix("/Release")),
            storedDate: isRoot ? storedDate : nil)
        }
      }
    }
    Issue.record("the format did not finish in 5 steps")
    throw CancellationError()
  }

  static func run(
    _ repository: AptRepositoryFixture, suites: [String]? = nil, now: Int64 = now, verified: Bool = true,
    releaseVerified: Bool = true, storedDate: Int64? = nil
  ) throws -> Run {
    let format = AptRepositoryFormat(
      suites: (suites ?? repository.suites).map {
        AptFormat(
          suite: $0, components: repository.components, architectures: repository.architectures, sources: true)
      })
    return try run(format, now: now, verified: verified, releaseVerified: releaseVerified, storedDate: storedDate) {
      repository.read(String(decoding: $0, as: UTF8.self))
    }
  }

  static func names(_ files: [RepositoryFile]) -> Set<String> {
    Set(files.map { String(decoding: $0.path, as: UTF8.self) })
  }

  static func codes(_ result: RepositoryResult) -> [String: String] {
    Dictionary(
      result.failures.map { (String(decoding: $0.path, as: UTF8.self), $0.code) }, uniquingKeysWith: { $0 + "," + $1 })
  }

  @Test func twoSuitesGiveEveryPoolFileOnceIndexesByHashAndRootsLast() throws {
    let repository = try AptRepositoryFixture()
    let run = try Self.run(repository)
    #expect(run.result.failures.isEmpty, "\(run.result.failures)")
    #expect(Self.names(run.result.pool) == Set(repository.pool.keys))
    #expect(run.result.pool.count == repository.pool.count, "the shared common_1.0 files once")
    for file in run.result.pool {
      let expected = repository.pool[String(decoding: file.path, as: UTF8.self)]
      #expect(expected == AptRepositoryFixture.PoolFile(size: file.size, sha256: file.sha256))
    }
    let common = "pool/main/c/common/common_1.0_amd64.deb"
    #expect(repository.poolBySuite.values.allSatisfy { $0.contains(common) })
    #expect(run.result.pool.filter { $0.path == Array(common.utf8) }.count == 1)
    for suite in repository.suites {
      #expect(
        run.result.roots.map { String(decoding: $0.path, as: UTF8.self) }.filter { $0.hasPrefix("dists/\(suite)/") }
          == ["dists/\(suite)/Release", "dists/\(suite)/Release.gpg", "dists/\(suite)/InRelease"])
      let release = try AptRelease.parse(document: try #require(repository.read("dists/\(suite)/InRelease"))).get()
      let indexes = run.result.indexes.filter { $0.path.starts(with: Array("dists/\(suite)/".utf8)) }
      #expect(indexes.count == release.files.count)
      for index in indexes {
        #expect(String(decoding: index.fetchPath, as: UTF8.self).contains("/by-hash/SHA256/\(index.sha256)"))
        #expect(index.alsoAt == [index.fetchPath])
      }
    }
    #expect(run.fetched.filter { $0.hasSuffix("/Packages.xz") || $0.hasSuffix("/Packages") }.isEmpty, "by hash only")
    #expect(run.result.verdicts.allSatisfy { $0.failure == nil })
  }

  @Test func theDetachedPairIsPublishedOnlyWhenVerifiedAndTheSameAsTheInReleaseAndAnUnverifiedOneFailsTheSuite() throws
  {
    let repository = try AptRepositoryFixture(suites: ["stable"])
    // A pair gpgv does not verify beside an InRelease: the suite fails and publishes no root.
    let unverified = try Self.run(repository, releaseVerified: false)
    #expect(Self.codes(unverified.result) == ["dists/stable/Release": "signature"])
    #expect(unverified.result.roots.isEmpty && unverified.result.indexes.isEmpty)
    var release = try #require(repository.read("dists/stable/Release"))
    release += Array("X-Other: 1\n".utf8)
    repository.write("dists/stable/Release", release)
    let differing = try Self.run(repository)
    #expect(Self.codes(differing.result) == ["dists/stable/Release": "descriptor"])
    #expect(Self.names(differing.result.roots) == ["dists/stable/InRelease"])
    #expect(!differing.result.indexes.isEmpty)
  }

  @Test func aTamperedIndexFailsAloneAndWithholdsItsSuitesIndexes() throws {
    let repository = try AptRepositoryFixture()
    let release = try AptRelease.parse(document: try #require(repository.read("dists/stable/InRelease"))).get()
    let line = try #require(release.file(Array("main/binary-amd64/Packages.xz".utf8)))
    let tampered = "dists/stable/main/binary-amd64/by-hash/SHA256/\(line.sha256)"
    var bytes = try #require(repository.read(tampered))
    bytes[bytes.count / 2] ^= 0xFF
    repository.write(tampered, bytes)
    let run = try Self.run(repository)
    #expect(Self.codes(run.result) == ["dists/stable/main/binary-amd64/Packages.xz": "checksum-mismatch"])
    #expect(!run.result.indexes.contains { $0.path.starts(with: Array("dists/stable/".utf8)) })
    #expect(!run.result.roots.contains { $0.path.starts(with: Array("dists/stable/".utf8)) })
    #expect(run.result.roots.contains { $0.path == Array("dists/testing/InRelease".utf8) })
    #expect(run.result.pool.contains { $0.path == Array("pool/main/p/pkg0/pkg0_1.0-6_arm64.deb".utf8) })
    #expect(run.result.pool.contains { $0.path == Array("pool/main/c/common/common_1.0_amd64.deb".utf8) })
  }

  /// Whether a Release is the suite's own: its `Suite` or `Codename` is the suite's name (or the
  /// first segment of a `stable/updates`-style name); one with neither field is accepted.
  @Test(
    arguments: [
      ("stable", "stable", "bookworm", true), ("bookworm", "stable", "bookworm", true),
      ("stable/updates", "stable", "buster", true), ("stable", "testing", "trixie", false),
      ("stable", nil, nil, true), ("sid", "unstable", "sid", true), ("stable", "Stable", nil, false),
    ] as [(String, String?, String?, Bool)])
  func aReleaseOfAnotherSuiteIsTold(_ suite: String, _ name: String?, _ codename: String?, _ own: Bool) {
    var release = AptRelease()
    release.suite = name
    release.codename = codename
    #expect((AptFormat.otherSuite(release, suite) == nil) == own)
  }

  /// A signed Release line batchdl refuses (a path twice with other digests, a path that escapes
  /// or holds white space, a bad hash) fails `descriptor` and withholds its suite alone.
  @Test(arguments: [
    " \(String(repeating: "ab", count: 32)) 12 main/binary-amd64/Packages.xz",
    " \(String(repeating: "ab", count: 32)) 12 ../../../outside",
    " \(String(repeating: "ab", count: 32)) 12 main/binary-amd64/Pack ages",
    " nothex 12 main/binary-amd64/Packages.bz2",
  ])
  func aRefusedReleaseLineWithholdsItsSuite(_ line: String) throws {
    let repository = try AptRepositoryFixture()
    let release = String(decoding: try #require(repository.read("dists/stable/Release")), as: UTF8.self)
    let edited = Array(release.replacingOccurrences(of: "SHA256:\n", with: "SHA256:\n\(line)\n").utf8)
    let run = try Self.run(
      AptRepositoryFormat(
        suites: repository.suites.map {
          AptFormat(suite: $0, components: repository.components, architectures: repository.architectures)
        })
    ) { path in
      let name = String(decoding: path, as: UTF8.self)
      return name == "dists/stable/InRelease" ? edited : repository.read(name)
    }
    #expect(run.result.failures.contains { $0.code == "descriptor" }, "\(run.result.failures)")
    #expect(!run.result.roots.contains { $0.path.starts(with: Array("dists/stable/".utf8)) })
    #expect(!run.result.indexes.contains { $0.path.starts(with: Array("dists/stable/".utf8)) })
    #expect(run.result.roots.contains { $0.path == Array("dists/testing/InRelease".utf8) })
  }

  @Test(arguments: [
    ("rollback", true, Int64(1_795_900_000), now),
    ("expired", true, nil, Int64(4_200_000_000)),
    ("unverified", false, nil, now),
    // Dated more than 10 days ahead of now (apt's Acquire::Max-FutureTime): not valid yet.
    ("future", true, nil, Int64(1_795_867_200 - 11 * 86_400)),
  ])
  func aRootThatFailsItsChecksFailsSignatureAndAddsNothing(
    _ name: String, verified: Bool, storedDate: Int64?, now: Int64
  ) throws {
    let repository = try AptRepositoryFixture(suites: ["stable"])
    let run = try Self.run(repository, now: now, verified: verified, storedDate: storedDate)
    #expect(Self.codes(run.result) == ["dists/stable/InRelease": "signature"], "\(name): \(run.result.failures)")
    #expect(run.result.pool.isEmpty && run.result.indexes.isEmpty && run.result.roots.isEmpty)
    #expect(run.fetched.count == 3, "\(name): nothing past the root is fetched")
  }

  @Test func aRootNotOlderThanTheStoredCopyIsAccepted() throws {
    let repository = try AptRepositoryFixture(suites: ["stable"])
    let date = try #require(AptDate.seconds(Array(repository.date.utf8)))
    let run = try Self.run(repository, storedDate: date)
    #expect(run.result.failures.isEmpty && !run.result.roots.isEmpty)
  }

  @Test func onlyTheReadAndOptionalVariantsAreFetchedBeforePlanning() throws {
    let repository = try AptRepositoryFixture(suites: ["stable"])
    let release = try AptRelease.parse(document: try #require(repository.read("dists/stable/InRelease"))).get()
    for name in ["main/binary-amd64/Packages", "main/binary-arm64/Packages.gz"] {
      let line = try #require(release.file(Array(name.utf8)))
      let folder = (name as NSString).deletingLastPathComponent
      try FileManager.default.removeItem(
        atPath: repository.path("dists/stable/\(folder)/by-hash/SHA256/\(line.sha256)"))
    }
    let run = try Self.run(repository)
    // A variant neither read nor optional is not fetched before planning: it is a download pinned
    // to its Release line (a 404 then fails it, and its suite's roots wait in vain); the read .xz
    // variants are all there, and the optional plain one the server lacks is left out.
    #expect(Self.codes(run.result).isEmpty, "\(run.result.failures)")
    for name in ["main/binary-amd64/Packages.gz", "main/binary-arm64/Packages.gz", "contrib/source/Sources.gz"] {
      let gz = try #require(release.file(Array(name.utf8)))
      let folder = (name as NSString).deletingLastPathComponent
      #expect(!run.fetched.contains("dists/stable/\(folder)/by-hash/SHA256/\(gz.sha256)"), "\(name) is not fetched")
    }
    #expect(run.fetched.contains { $0.hasPrefix("dists/stable/main/binary-amd64/by-hash/") }, "\(run.fetched)")
    #expect(Self.names(run.result.indexes).contains("dists/stable/main/binary-arm64/Packages.gz"))
    #expect(!Self.names(run.result.indexes).contains("dists/stable/main/binary-amd64/Packages"))
    #expect(Self.names(run.result.pool) == Set(repository.pool.keys), "the read .xz variants are all there")
  }

  @Test func aReadVariantTheServerLacksFailsDescriptor() throws {
    let repository = try AptRepositoryFixture(suites: ["stable"])
    let release = try AptRelease.parse(document: try #require(repository.read("dists/stable/InRelease"))).get()
    let line = try #require(release.file(Array("main/binary-arm64/Packages.xz".utf8)))
    try FileManager.default.removeItem(
      atPath: repository.path("dists/stable/main/binary-arm64/by-hash/SHA256/\(line.sha256)"))
    let run = try Self.run(repository)
    #expect(Self.codes(run.result) == ["dists/stable/main/binary-arm64/Packages.xz": "descriptor"])
    #expect(run.result.roots.isEmpty && run.result.indexes.isEmpty)
  }

  @Test func aStanzaNamingAPathOutsideThePoolIsRefusedAloneAndWithholdsItsSuite() throws {
    let good = Array("fake deb\n".utf8)
    func stanza(_ name: String, _ path: String, _ bytes: [UInt8]) -> String {
      "Package: \(name)\nVersion: 1\nArchitecture: amd64\nFilename: \(path)\nSize: \(bytes.count)\n"
        + "SHA256: \(AptRepositoryFixture.sha256(bytes))\n\n"
    }
    let packages = Array(
      (stanza("escape", "../escape", good) + stanza("root", "dists/stable/InRelease", good)
        + stanza("own", "pool/.batchdl/state", good) + stanza("good", "pool/main/g/good_1_amd64.deb", good)).utf8)
    let release = Array(
      """
      Suite: stable
      Date: Sat, 28 Nov 2026 10:00:00 UTC
      Architectures: amd64
      Components: main
      SHA256:
       \(AptRepositoryFixture.sha256(packages)) \(packages.count) main/binary-amd64/Packages

      """.utf8)
    let served: [String: [UInt8]] = [
      "dists/stable/InRelease": release, "dists/stable/main/binary-amd64/Packages": packages,
    ]
    let format = AptFormat(suite: "stable", components: ["main"], architectures: ["amd64"])
    let run = try Self.run(format) { served[String(decoding: $0, as: UTF8.self)] }
    #expect(
      Self.codes(run.result)
        == ["../escape": "descriptor", "dists/stable/InRelease": "descriptor", "pool/.batchdl/state": "descriptor"])
    #expect(Self.names(run.result.pool) == ["pool/main/g/good_1_amd64.deb"])
    // The index names files the mirror will not hold: the suite is withheld (the copy in place
    // stays), while the good pool file is still fetched.
    #expect(run.result.indexes.isEmpty && run.result.roots.isEmpty)
    #expect(run.result.parts.map(\.name) == ["stable"])
    #expect(
      run.result.parts.first?.withheld?.contains("../escape") == true, "\(run.result.parts.first?.withheld ?? "")")
    let verdict = try #require(
      run.result.verdicts.first { $0.path == Array("dists/stable/main/binary-amd64/Packages".utf8) })
    #expect(verdict.failure == nil && verdict.filesAdded == 1 && verdict.bytesAdded == Int64(good.count))
  }

  @Test func twoSuitesGivingOnePoolPathDifferentDigestsFailThatPathAndWithholdBoth() throws {
    func suite(_ name: String, _ content: String) -> [String: [UInt8]] {
      let deb = Array(content.utf8)
      let packages = Array(
        ("Package: a\nFilename: pool/a.deb\nSize: \(deb.count)\nSHA256: \(AptRepositoryFixture.sha256(deb))\n\n"
          + "Package: \(name)\nFilename: pool/\(name).deb\nSize: 1\nSHA256: \(String(repeating: "a", count: 64))\n")
          .utf8)
      let release = Array(
        "Suite: \(name)\nSHA256:\n \(AptRepositoryFixture.sha256(packages)) \(packages.count) main/binary-amd64/Packages\n"
          .utf8)
      return ["dists/\(name)/InRelease": release, "dists/\(name)/main/binary-amd64/Packages": packages]
    }
    let served = suite("one", "first").merging(suite("two", "second")) { $1 }
    let format = AptRepositoryFormat(
      suites: ["one", "two"].map { AptFormat(suite: $0, components: ["main"], architectures: ["amd64"]) })
    let run = try Self.run(format) { served[String(decoding: $0, as: UTF8.self)] }
    #expect(Self.codes(run.result) == ["pool/a.deb": "descriptor"])
    #expect(Self.names(run.result.pool) == ["pool/one.deb", "pool/two.deb"])
    // Both suites name the refused path: neither is published, each says why.
    #expect(run.result.roots.isEmpty && run.result.indexes.isEmpty)
    #expect(run.result.parts.allSatisfy { $0.withheld?.contains("pool/a.deb") == true })
  }

  @Test func anIndexPastTheDecompressionBoundFailsDescriptor() throws {
    let repository = try AptRepositoryFixture(suites: ["stable"], components: ["main"], architectures: ["amd64"])
    var format = AptFormat(suite: "stable", components: ["main"], architectures: ["amd64"], sources: true)
    // With the uncompressed variants served, they are read: no xz stream is decoded (a decoder
    // allowed one byte of memory would fail).
    format.decompressionLimits = DecompressionLimits(xzMemoryLimit: 1)
    let plain = try Self.run(format) { repository.read(String(decoding: $0, as: UTF8.self)) }
    #expect(plain.result.failures.isEmpty, "\(plain.result.failures)")
    #expect(!plain.result.pool.isEmpty && !plain.result.roots.isEmpty)
    format.decompressionLimits = DecompressionLimits(maxOutputBytes: 64, ratioFloorBytes: 0)
    // Without them (as on Debian's mirrors), the .xz variants are, past the bound.
    let release = try AptRelease.parse(document: try #require(repository.read("dists/stable/InRelease"))).get()
    var absent: Set<String> = []
    for name in ["main/binary-amd64/Packages", "main/source/Sources"] {
      let line = try #require(release.file(Array(name.utf8)))
      absent.insert("dists/stable/\((name as NSString).deletingLastPathComponent)/by-hash/SHA256/\(line.sha256)")
    }
    let serveWithoutPlain: ([UInt8]) -> [UInt8]? = { path in
      let name = String(decoding: path, as: UTF8.self)
      return absent.contains(name) ? nil : repository.read(name)
    }
    var starved = format
    starved.decompressionLimits = DecompressionLimits(xzMemoryLimit: 1)
    #expect(!(try Self.run(starved, serve: serveWithoutPlain)).result.failures.isEmpty, "the xz decoder needs memory")
    let run = try Self.run(format, serve: serveWithoutPlain)
    #expect(
      Self.codes(run.result)
        == [
          "dists/stable/main/binary-amd64/Packages.xz": "descriptor",
          "dists/stable/main/source/Sources.xz": "descriptor",
        ])
    #expect(run.result.pool.isEmpty && run.result.indexes.isEmpty && run.result.roots.isEmpty)
  }

  @Test func aSignedIndexThatIsNoValidCompressedFileFailsDescriptor() throws {
    let garbage = Array("not xz at all".utf8)
    let release = Array(
      "Suite: stable\nSHA256:\n \(AptRepositoryFixture.sha256(garbage)) \(garbage.count) main/binary-amd64/Packages.xz\n"
        .utf8)
    let served = ["dists/stable/InRelease": release, "dists/stable/main/binary-amd64/Packages.xz": garbage]
    let format = AptFormat(suite: "stable", components: ["main"], architectures: ["amd64"])
    let run = try Self.run(format) { served[String(decoding: $0, as: UTF8.self)] }
    #expect(Self.codes(run.result) == ["dists/stable/main/binary-amd64/Packages.xz": "descriptor"])
    #expect(run.result.roots.isEmpty)
  }

  @Test func aReleaseWithoutDateFailsSignatureOnlyWhenAStoredCopyHasOne() throws {
    let packages = Array("".utf8)
    let release = Array(
      "Suite: stable\nSHA256:\n \(AptRepositoryFixture.sha256(packages)) 0 main/binary-amd64/Packages\n".utf8)
    let served = ["dists/stable/InRelease": release, "dists/stable/main/binary-amd64/Packages": packages]
    let format = AptFormat(suite: "stable", components: ["main"], architectures: ["amd64"])
    let first = try Self.run(format) { served[String(decoding: $0, as: UTF8.self)] }
    #expect(first.result.failures.isEmpty && Self.names(first.result.roots) == ["dists/stable/InRelease"])
    let again = try Self.run(format, storedDate: 1_795_860_000) { served[String(decoding: $0, as: UTF8.self)] }
    #expect(Self.codes(again.result) == ["dists/stable/InRelease": "signature"])
  }
}
