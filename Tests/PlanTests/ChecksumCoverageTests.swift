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
      """, ["https://h/pub/SHA256SUMS": .success("\(Self.a)  iso/a.iso\n\(Self.b)  other/b.iso\n")])
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
            - download: https://h/pub/own.iso
              sha256: \(Self.b)
      """, ["https://h/pub/SUMS": .success("\(Self.a)  one/twice.iso\n\(Self.a)  two/twice.iso\n")])
    #expect(refusal(plan, "missing.iso")?.code == .checksumMissing)
    #expect(refusal(plan, "missing.iso")?.message.contains("no name ends in 'missing.iso'") == true)
    let twice = refusal(plan, "twice.iso")
    #expect(twice?.code == .checksumMissing)
    #expect(twice?.message.contains("ambiguous") == true, "\(twice?.message ?? "")")
    #expect(refusal(plan, "own.iso") == nil)
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
