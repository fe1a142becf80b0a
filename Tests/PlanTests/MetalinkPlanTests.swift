import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLPlan
@testable import BatchDLSupport

/// A `metalink:` entry expands to one download per `<file>` of its document: sources in priority
/// order (the first is the task's URL, the others its mirrors), `<size>` and the strongest `<hash>`
/// its expectation. A problem inside the document leaves only its file out.
@Suite struct MetalinkPlanTests {
  static let sha = String(repeating: "ab", count: 32)
  static let otherSHA = String(repeating: "cd", count: 32)

  @Test func aDocumentsFileThatClashesIsLeftOutAndTheManifestStaysValid() throws {
    // Another task's destination or id, a file where another file needs a folder, in either
    // order: only the document's file is left out, as a refused file that fails with `conflict`.
    let result = try planned(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/d
              to: d/x
            - metalink: doc.meta4
            - download: https://example.org/own
              to: own.bin
            - download: https://example.org/named
              to: other.bin
              id: named.bin
      """,
      files: [
        "doc.meta4": """
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="d"><url>https://example.org/1</url></file>
          <file name="own.bin"><url>https://example.org/2</url></file>
          <file name="named.bin"><url>https://example.org/3</url></file>
          <file name="e"><url>https://example.org/4</url></file>
          <file name="e/f"><url>https://example.org/5</url></file>
          <file name="fine.bin"><url>https://example.org/6</url></file>
        </metalink>
        """
      ])
    let plan = result.plan
    #expect(
      plan.tasks.map { plan.id(of: $0) } == ["d/x", "e", "fine.bin", "own.bin", "named.bin"], "\(result.warnings)")
    #expect(
      plan.refusedFiles.map { plan.text.string($0.task.id) } == [
        "doc.meta4#d", "doc.meta4#own.bin", "doc.meta4#named.bin", "doc.meta4#e/f",
      ])
    #expect(plan.refusedFiles.allSatisfy { $0.code == .conflict && $0.task.request == -1 })
    #expect(
      result.warnings.contains {
        $0.hasPrefix("doc.meta4:3:3: warning: file 'own.bin' is left out: 'own.bin' is also")
      }, "\(result.warnings)")
  }

  @Test func anUnsafeNameLeavesOnlyItsFileOut() throws {
    let result = try planned(
      """
      version: 1
      sessions:
        main:
          dest: out
          tasks:
            - metalink: doc.meta4
              to: isos/
              priority: high
      """,
      files: [
        "doc.meta4": """
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="a.iso"><size>3</size><hash type="sha-256">\(Self.sha)</hash><url priority="2">https://two.example.org/a.iso</url><url priority="1">https://one.example.org/a.iso</url></file>
          <file name="../evil"><url>https://example.org/evil</url></file>
          <file name="sub/b.iso"><hash type="sha-512">\(String(repeating: "0f", count: 64))</hash><url>https://example.org/b.iso</url></file>
        </metalink>
        """
      ])
    let plan = result.plan
    #expect(plan.tasks.map { plan.destination(of: $0) } == ["out/isos/a.iso", "out/isos/sub/b.iso"])
    #expect(
      result.warnings.contains(
        "doc.meta4:3:3: error: file name '../evil' contains '..'; it could escape 'to:'; this file is left out"
          .replacingOccurrences(of: ": error:", with: ": warning:")), "\(result.warnings)")
    let first = plan.tasks[0]
    #expect(plan.url(of: first) == "https://one.example.org/a.iso")
    let request = plan.requests[Int(first.request)]
    #expect(request.mirrors.map { plan.text.string($0) } == ["https://two.example.org/a.iso"])
    #expect(request.priority == .high)
    #expect(
      plan.expectation(of: first) == TaskExpectation(size: 3, digest: ExpectedDigest(algorithm: .sha256, hex: Self.sha))
    )
    #expect(plan.expectation(of: plan.tasks[1])?.digest?.algorithm == .sha512)
    #expect(plan.expectation(of: plan.tasks[1])?.sha256 == nil)
  }

  @Test func tasksDeclaredInTheManifestKeepTheirOwnExpectation() throws {
    let result = try planned(
      manifest(
        "- download: https://example.org/a.iso\n  sha256: \(Self.sha)\n  size: 5\n- download: https://example.org/b"))
    let plan = result.plan
    #expect(
      plan.expectation(of: plan.tasks[0])
        == TaskExpectation(size: 5, digest: ExpectedDigest(algorithm: .sha256, hex: Self.sha)))
    #expect(plan.expectation(of: plan.tasks[1]) == nil)
    #expect(plan.expectations.isEmpty)
  }

  @Test func metalinkFilesWithOneSHA256AreOneRequest() throws {
    let result = try planned(
      manifest(
        "- metalink: doc.meta4\n- download: https://third.example.org/c.iso\n  to: third.iso\n  sha256: \(Self.sha)"),
      files: [
        "doc.meta4": """
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="a.iso"><hash type="sha-256">\(Self.sha)</hash><url>https://one.example.org/a.iso</url></file>
          <file name="b.iso"><hash type="sha-256">\(Self.sha)</hash><url>https://two.example.org/b.iso</url></file>
          <file name="c.iso"><hash type="sha-256">\(Self.otherSHA)</hash><url>https://two.example.org/c.iso</url></file>
        </metalink>
        """
      ])
    let plan = result.plan
    #expect(plan.tasks.count == 4)
    #expect(plan.requests.count == 2)
    let shared = plan.requests[Int(plan.tasks[0].request)]
    #expect(shared.taskCount == 3)
    #expect(
      shared.mirrors.map { plan.text.string($0) } == [
        "https://two.example.org/b.iso", "https://third.example.org/c.iso",
      ])
  }

  @Test func aDocumentThatIsNotMetalinkIsAnError() {
    let found = problems(manifest("- metalink: doc.meta4"), files: ["doc.meta4": "<html></html>"])
    #expect(found.count == 1, "\(found)")
    #expect(found.first?.hasPrefix("doc.meta4:1:1: error: not a Metalink document") == true, "\(found)")
  }

  @Test func aMissingDocumentIsReported() {
    let found = problems("version: 1\nsessions:\n  main:\n    tasks:\n      - metalink: missing.meta4\n")
    #expect(found.count == 1, "\(found)")
    // At the manifest's value that names it, not at the document's first line.
    #expect(found == ["5:19: error: cannot read the Metalink document: No such file or directory"])
  }

  @Test func aDocumentByURLWithoutACopyListsNoTasks() throws {
    let result = try planned(
      manifest("- metalink: https://example.org/a.meta4\n- download: https://example.org/x\n  after: [b.iso]"))
    #expect(result.plan.tasks.count == 1)
    #expect(
      result.warnings.contains {
        $0.contains("warning: no stored copy of the Metalink document https://example.org/a.meta4")
      }, "\(result.warnings)")
  }

  @Test func aDocumentByURLThatFailedStandsAsOneFailingTask() throws {
    let (folder, outcome) = planWith(
      manifest("- metalink: https://user:pw@example.org/a.meta4\n- download: https://example.org/x"),
      descriptors: DescriptorSet(documents: [
        "https://user:pw@example.org/a.meta4": FetchedDocument(outcome: .failed, problem: "cannot fetch it: HTTP 500")
      ]))
    _ = folder
    let plan = try outcome.get()
    #expect(plan.tasks.count == 1)
    let descriptor = try #require(plan.descriptors.first)
    #expect(descriptor.outcome == .failed)
    #expect(!descriptor.url.contains("pw"))
    let task = try #require(descriptor.task)
    #expect(task.request == -1)
    #expect(!plan.id(of: task).contains("pw"))
    #expect(plan.destination(of: task) == nil)
  }

  @Test func aFetchedDocumentIsExpanded() throws {
    let body = """
      <metalink xmlns="urn:ietf:params:xml:ns:metalink">
        <file name="a.iso"><url>https://one.example.org/a.iso</url></file>
      </metalink>
      """
    let (_, outcome) = planWith(
      manifest("- metalink: https://example.org/a.meta4\n  to: m/"),
      descriptors: DescriptorSet(documents: [
        "https://example.org/a.meta4": FetchedDocument(outcome: .fetched, body: Array(body.utf8))
      ]))
    let plan = try outcome.get()
    #expect(plan.tasks.map { plan.destination(of: $0) } == ["m/a.iso"])
    #expect(plan.descriptors.first?.outcome == .fetched)
    #expect(plan.descriptors.first?.sha256?.count == 64)
  }

  @Test func nfcAndNFDSpellingsOfANameAreTwoTasksWritingTwoFiles() throws {
    // "é" as U+00E9 and as "e" + U+0301: one String to Swift, two files on Linux.
    let nfc = "caf\u{E9}"
    let nfd = "cafe\u{301}"
    let result = try planned(
      manifest("- metalink: doc.meta4\n  to: m/"),
      files: [
        "doc.meta4": """
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="\(nfc).txt"><url>https://example.org/1</url></file>
          <file name="\(nfd).txt"><url>https://example.org/2</url></file>
          <file name="\(nfc)/a.txt"><url>https://example.org/3</url></file>
          <file name="\(nfd)/b.txt"><url>https://example.org/4</url></file>
        </metalink>
        """
      ])
    let plan = result.plan
    #expect(result.warnings.isEmpty, "\(result.warnings)")
    #expect(
      plan.tasks.map { Array((plan.destination(of: $0) ?? "").utf8) }
        == ["m/\(nfc).txt", "m/\(nfd).txt", "m/\(nfc)/a.txt", "m/\(nfd)/b.txt"].map { Array($0.utf8) })
    #expect(plan.requests.count == 4)
  }

  @Test func aNameFromTheDocumentIsShownEscapedByThePlanner() throws {
    // U+009B is a C1 control (CSI on some terminals): no name holds it, and the message shows it
    // escaped.
    let result = try planned(
      manifest("- metalink: doc.meta4"),
      files: [
        "doc.meta4": """
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="a&#x9B;2J.batchdl-part"><url>https://example.org/a</url></file>
          <file name="b"><url>https://example.org/b</url></file>
        </metalink>
        """
      ])
    #expect(result.plan.tasks.count == 1)
    #expect(result.warnings.count == 1, "\(result.warnings)")
    #expect(
      result.warnings.first?.contains(#"'a\u{9B}2J.batchdl-part' contains a control character (U+009B)"#) == true,
      "\(result.warnings)")
    #expect(
      !result.warnings.contains { $0.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) } })
  }

  @Test func aFileNamedLikeAFolderInTheOtherSpellingIsNoClashButTheSameBytesAre() throws {
    let nfc = "caf\u{E9}"
    let nfd = "cafe\u{301}"
    let yaml = manifest(
      """
      - download: https://example.org/1
        to: \(nfc)/a.txt
      - download: https://example.org/2
        to: \(nfd)/b.txt
      - download: https://example.org/3
        to: \(nfd)
      """)
    expectProblems(yaml, [Expected("9:9", "is a file here but a folder for the task at")])
    let distinct = yaml.replacingOccurrences(of: "to: \(nfd)\n", with: "to: \(nfd)x\n")
    #expect(problems(distinct).isEmpty)
  }

  @Test func aDocumentWithManyURLsPlansItsFirstThousand() throws {
    var urls = ""
    for index in 0..<40_000 { urls += "<url>https://m\(index).example.org/a.iso</url>" }
    let result = try planned(
      manifest("- metalink: doc.meta4"),
      files: [
        "doc.meta4":
          "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a.iso\">\(urls)</file></metalink>"
      ])
    let request = try #require(result.plan.requests.first)
    #expect(request.mirrors.count == Metalink.maxURLsPerFile - 1)
    #expect(result.warnings.count == 1, "\(result.warnings)")
  }

  @Test func sourceKeysDoNotChangeThePlan() throws {
    let plain = """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.iso
      """
    let withSources = """
      version: 1
      sessions:
        main:
          network: {segments: 4, min_segment_size: 1MB}
          mirrors: {"https://example.org/": ["https://m.example.net/"]}
          tasks:
            - download: https://example.org/a.iso
              mirrors: [https://m2.example.net/a.iso]
              segments: 2
      """
    let first = try ManifestFixture.plan(plain).result.get()
    let second = try ManifestFixture.plan(withSources).result.get()
    #expect(first.requests.map(\.key) == second.requests.map(\.key))
    #expect(first.tasks.map { first.destination(of: $0) } == second.tasks.map { second.destination(of: $0) })
  }
}

/// Plans `yaml` with `descriptors` as the documents fetched before planning.
private func planWith(
  _ yaml: String, descriptors: DescriptorSet
) -> (folder: TemporaryDirectory, result: Result<Plan, ManifestError>) {
  let folder = TemporaryDirectory()
  let path = folder.write("manifest.yaml", yaml)
  let (manifest, diagnostics) = ManifestLoader.read(path: path, environment: [:])
  guard let manifest else { return (folder, .failure(ManifestError(diagnostics: diagnostics))) }
  do {
    return (folder, .success(try Planner().plan(manifest, warnings: diagnostics, descriptors: descriptors)))
  } catch {
    return (folder, .failure(error))
  }
}
