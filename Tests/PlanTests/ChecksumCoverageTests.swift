import TestServer
import TestSupport
import Testing

@testable import BatchDLManifest
@testable import BatchDLPlan
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// Which checksum entry a covered download is checked with, or why it fails before it is sent: the
/// planner's `ChecksumVerdict`, driven here with checksum files given as values (no sockets, no
/// gpgv).
@Suite struct ChecksumCoverageTests {
  static let a = String(repeating: "a", count: 64)
  static let b = String(repeating: "b", count: 64)
  static let c512 = String(repeating: "c", count: 128)

  /// Plans `yaml` with each checksum file URL of `documents` read as the given text (or failed).
  func plan(
    _ yaml: String, _ documents: [String: Result<String, DocumentFailure>]
  ) throws -> (plan: Plan, warnings: [String]) {
    let folder = TemporaryDirectory()
    let path = folder.write("manifest.yaml", yaml)
    let (loaded, diagnostics) = ManifestLoader.read(path: path, environment: [:])
    let manifest = try #require(loaded, "\(diagnostics)")
    var set = DescriptorSet()
    for session in manifest.sessions {
      var specs = session.checksums.map { [$0] } ?? []
      specs += session.tasks.compactMap(\.checksums)
      for spec in specs {
        for source in spec.files {
          let key = DescriptorSet.key(of: source, keyring: spec.keyring, for: session, in: manifest)
          var document = ChecksumDocument(display: source.location, url: source.location, outcome: .fetched)
          switch documents[source.location] {
          case .success(let text):
            document.file = ChecksumFile.parse(Array(text.utf8), file: source.location)
            document.sha256 = SHA256Digest.hex(Array(text.utf8))
          case .failure(let failure): document.failure = failure
          case nil: document.outcome = .missing
          }
          set.checksums[key] = document
        }
      }
    }
    let plan = try Planner().plan(manifest, warnings: diagnostics, descriptors: set)
    return (plan, plan.warnings.map(\.message))
  }

  func task(_ plan: Plan, _ id: String) -> PlannedTask? { plan.tasks.first { plan.id(of: $0) == id } }

  func refusal(_ plan: Plan, _ id: String) -> DocumentFailure? {
    task(plan, id).flatMap { plan.refusedRequests[$0.request] }
  }

  @Test func aFileIsCheckedWithItsEntryByPathThenByUniqueName() throws {
    let (plan, _) = try plan(
      """
      version: 1
      sessions:
        s:
          checksums: https://h/pub/SHA256SUMS
          tasks:
            - download: https://h/pub/iso/a.iso
            - download: https://h/elsewhere/b.iso
      """, ["https://h/pub/SHA256SUMS": .success("\(Self.a)  iso/a.iso\n\(Self.b)  b.iso\n")])
    let a = try #require(task(plan, "a.iso"))
    #expect(plan.expectation(of: a)?.digest == ExpectedDigest(algorithm: .sha256, hex: Self.a))
    let b = try #require(task(plan, "b.iso"))
    #expect(plan.expectation(of: b)?.digest == ExpectedDigest(algorithm: .sha256, hex: Self.b))
    #expect(plan.refusedRequests.isEmpty)
  }

  @Test func noEntryOrAnAmbiguousNameFailsChecksumMissingUnlessTheTaskHasItsOwnDigest() throws {
    let (plan, _) = try plan(
      """
      version: 1
      sessions:
        s:
          checksums: https://h/pub/SUMS
          tasks:
            - download: https://h/pub/missing.iso
            - download: https://h/x/twice.iso
            - download: https://h/y/twice.iso
              to: y/twice.iso
            - download: https://h/q/deep.iso
            - download: https://h/pub/own.iso
              sha256: \(Self.b)
            - download: https://h/r/own.iso
              to: r/own.iso
      """,
      ["https://h/pub/SUMS": .success("\(Self.a)  twice.iso\n\(Self.a)  one/deep.iso\n\(Self.a)  own.iso\n")])
    #expect(refusal(plan, "missing.iso")?.code == .checksumMissing)
    #expect(refusal(plan, "missing.iso")?.message.contains("no bare name 'missing.iso'") == true)
    for id in ["twice.iso", "y/twice.iso"] {
      let twice = refusal(plan, id)
      #expect(twice?.code == .checksumMissing, "\(id)")
      #expect(twice?.message.contains("ambiguous") == true, "\(twice?.message ?? "")")
    }
    // A name with a folder is that path's only.
    #expect(refusal(plan, "deep.iso")?.code == .checksumMissing)
    #expect(refusal(plan, "own.iso") == nil)
    // A file with its own digest is one of the files named `own.iso`: the bare name is not r/'s.
    #expect(refusal(plan, "r/own.iso")?.message.contains("ambiguous") == true)
  }

  /// Issue 36, item 3: an entry with a folder is that path's only; a file of the same name
  /// elsewhere is `checksum-missing`, not given its digest (nor joined to its content).
  @Test func anEntryWithAFolderNeverChecksAFileOfTheSameNameElsewhere() throws {
    let (plan, _) = try plan(
      """
      version: 1
      sessions:
        s:
          checksums: https://h/pub/SHA256SUMS
          tasks:
            - download: https://h/pub/README
            - download: https://h/pub/sub/README
              to: sub/README
      """, ["https://h/pub/SHA256SUMS": .success("\(Self.a)  sub/README\n")])
    #expect(refusal(plan, "README")?.code == .checksumMissing)
    let sub = try #require(task(plan, "sub/README"))
    #expect(plan.expectation(of: sub)?.digest == ExpectedDigest(algorithm: .sha256, hex: Self.a))
    #expect(task(plan, "README")?.request != sub.request)
  }

  /// Issue 36, item 25: a bare name matched while one covered file had it, that a later covered
  /// file has too, is undone (the plan is made again); a path entry in another file wins.
  @Test func aBareNameOfSeveralCoveredFilesChecksNoneAndAPathWins() throws {
    let c = String(repeating: "c", count: 64)
    let (plan, warnings) = try plan(
      """
      version: 1
      sessions:
        s:
          checksums: [https://h/pub/SHA256SUMS, https://h/pub/docs/SHA256SUMS]
          tasks:
            - download: https://h/pub/README
            - download: https://h/pub/docs/README
              to: docs/README
            - download: https://h/pub/NOTES
            - download: https://h/pub/extra/NOTES
              to: extra/NOTES
        other:
          checksums: https://h/pub/docs/SHA256SUMS
          tasks:
            - download: https://h/pub/sub/INSTALL
              to: elsewhere/INSTALL
      """,
      [
        "https://h/pub/SHA256SUMS": .success("\(Self.a)  README\n\(Self.b)  docs/README\n\(c)  extra/NOTES\n"),
        "https://h/pub/docs/SHA256SUMS": .success("\(Self.b)  README\n\(c)  INSTALL\n"),
      ])
    #expect(!warnings.contains { $0.contains("disagree") }, "\(warnings)")
    let readme = try #require(task(plan, "README"))
    #expect(plan.expectation(of: readme)?.digest?.hex == Self.a)
    let docs = try #require(task(plan, "docs/README"))
    #expect(plan.expectation(of: docs)?.digest?.hex == Self.b)
    #expect(refusal(plan, "README") == nil && refusal(plan, "docs/README") == nil)
    #expect(refusal(plan, "NOTES")?.code == .checksumMissing)
    // A bare name that one covered file has still checks it (in another folder, another session).
    let install = try #require(task(plan, "elsewhere/INSTALL"))
    #expect(plan.expectation(of: install)?.digest?.hex == c)
  }

  /// Issue 36, item 25: a verdict is part of the request: a session whose checksum file has no
  /// entry for a file does not fail the same URL in a session whose own file has one.
  @Test func aSecondSessionDoesNotInheritAFailedVerdict() throws {
    let (plan, _) = try plan(
      """
      version: 1
      sessions:
        one:
          dest: one/
          checksums: https://h/pub/SUMS-ONE
          tasks:
            - download: https://h/pub/README
        two:
          dest: two/
          checksums: https://h/pub/SUMS-TWO
          tasks:
            - download: https://h/pub/README
      """,
      [
        "https://h/pub/SUMS-ONE": .success("\(Self.a)  sub/README\n"),
        "https://h/pub/SUMS-TWO": .success("\(Self.a)  README\n"),
      ])
    let one = try #require(plan.tasks.first { plan.text.string($0.to).hasPrefix("one/") })
    let two = try #require(plan.tasks.first { plan.text.string($0.to).hasPrefix("two/") })
    #expect(plan.refusedRequests[one.request]?.code == .checksumMissing)
    #expect(plan.refusedRequests[two.request] == nil)
    #expect(plan.expectation(of: two)?.digest?.hex == Self.a)
  }

  @Test func aFailedOrUnsignedChecksumFileFailsEveryFileItCovers() throws {
    let failure = DocumentFailure(code: .signature, message: "the signature of SUMS: bad signature")
    let (plan, warnings) = try plan(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://h/pub/a.iso
              checksums: https://h/pub/SUMS
            - download: https://h/pub/b.iso
      """, ["https://h/pub/SUMS": .failure(failure)])
    #expect(refusal(plan, "a.iso") == failure)
    #expect(refusal(plan, "b.iso") == nil, "an entry's own checksums cover only it")
    #expect(warnings.contains { $0.contains("bad signature") }, "\(warnings)")
  }

  @Test func aMirroredChecksumFileIsNotCheckedAndWaitsForEveryFileItCovers() throws {
    let (plan, _) = try plan(
      """
      version: 1
      sessions:
        s:
          checksums: https://h/pub/SHA256SUMS
          tasks:
            - download: https://h/pub/a.iso
            - download: https://h/pub/b.iso
            - download: https://h/pub/SHA256SUMS
      """, ["https://h/pub/SHA256SUMS": .success("\(Self.a)  a.iso\n\(Self.b)  b.iso\n")])
    let sums = try #require(task(plan, "SHA256SUMS"))
    #expect(plan.refusedRequests[sums.request] == nil)
    let waits = Set(plan.requests[Int(sums.request)].dependencies)
    let covered = Set(["a.iso", "b.iso"].compactMap { task(plan, $0)?.request })
    #expect(waits == covered)
  }

  @Test func aSHA512EntryIsTheExpectationAndPartOfTheRequestIdentity() throws {
    let yaml = """
      version: 1
      sessions:
        s:
          checksums: https://h/pub/SHA512SUMS
          tasks:
            - download: https://h/pub/a.iso
      """
    let (first, _) = try plan(yaml, ["https://h/pub/SHA512SUMS": .success("\(Self.c512)  a.iso\n")])
    let planned = try #require(task(first, "a.iso"))
    #expect(first.expectation(of: planned)?.digest == ExpectedDigest(algorithm: .sha512, hex: Self.c512))
    let changed = String(repeating: "d", count: 128)
    let (second, _) = try plan(yaml, ["https://h/pub/SHA512SUMS": .success("\(changed)  a.iso\n")])
    #expect(first.requests[0].key != second.requests[0].key, "a changed entry must fetch the file again")
  }

  @Test func withoutACopyOfTheChecksumFileNothingIsRefusedAndAWarningSaysSo() throws {
    let (plan, warnings) = try plan(
      """
      version: 1
      sessions:
        s:
          checksums: https://h/pub/SUMS
          tasks:
            - download: https://h/pub/a.iso
      """, [:])
    #expect(plan.refusedRequests.isEmpty)
    #expect(warnings.contains { $0.contains("no stored copy of the checksum file") }, "\(warnings)")
  }
}

extension ChecksumCoverageTests {
  @Test func aWeakDigestIsUsedWithOneWarningAndABrokenLineIsReportedAtItsPosition() throws {
    let md5a = String(repeating: "1", count: 32)
    let md5b = String(repeating: "2", count: 32)
    let (plan, warnings) = try plan(
      """
      version: 1
      sessions:
        s:
          checksums: https://h/pub/MD5SUMS
          tasks:
            - download: https://h/pub/a.iso
            - download: https://h/pub/b.iso
            - download: https://h/pub/c.iso
      """, ["https://h/pub/MD5SUMS": .success("\(md5a)  a.iso\n\(md5b)  b.iso\nnot a checksum line\n")])
    let a = try #require(task(plan, "a.iso"))
    #expect(plan.expectation(of: a)?.digest == ExpectedDigest(algorithm: .md5, hex: md5a))
    #expect(warnings.filter { $0.contains("which is weak") }.count == 1, "\(warnings)")
    let broken = plan.warnings.first { $0.mark.file == "https://h/pub/MD5SUMS" && $0.mark.line == 3 }
    #expect(broken != nil, "\(plan.warnings.map(\.description))")
    #expect(refusal(plan, "c.iso")?.code == .checksumMissing)
  }
}

extension ChecksumCoverageTests {
  @Test func theMirroredChecksumFileWaitsButDoesNotPullItsFilesIntoOneShard() throws {
    let names = (0..<8).map { "f\($0).iso" }
    // Distinct digests: files of one content would be one request.
    let sums = names.enumerated().map { "\(String(repeating: String($0.offset), count: 64))  \($0.element)\n" }.joined()
    let tasks = names.map { "      - download: https://h/pub/\($0)" }.joined(separator: "\n")
    let (plan, _) = try plan(
      """
      version: 1
      sessions:
        s:
          checksums: https://h/pub/SHA256SUMS
          tasks:
      \(tasks)
            - download: https://h/pub/SHA256SUMS
      """, ["https://h/pub/SHA256SUMS": .success(sums)])
    let sums256 = try #require(task(plan, "SHA256SUMS"))
    #expect(plan.requests[Int(sums256.request)].dependencies.count == names.count)
    let keys = names.compactMap { task(plan, $0) }.map { plan.requests[Int($0.request)].shardKey }
    #expect(Set(keys).count == names.count, "each file keeps its own shard key")
  }
}

extension ChecksumCoverageTests {
  @Test func aMirroredChecksumFileWithItsOwnSHA512KeepsIt() throws {
    let own = String(repeating: "e", count: 128)
    let (plan, _) = try plan(
      """
      version: 1
      sessions:
        s:
          checksums: https://h/pub/SHA256SUMS
          tasks:
            - download: https://h/pub/a.iso
            - download: https://h/pub/SHA256SUMS
              sha512: \(own)
      """, ["https://h/pub/SHA256SUMS": .success("\(Self.a)  a.iso\n")])
    let sums = try #require(task(plan, "SHA256SUMS"))
    #expect(plan.expectation(of: sums)?.digest == ExpectedDigest(algorithm: .sha512, hex: own))
  }
}
