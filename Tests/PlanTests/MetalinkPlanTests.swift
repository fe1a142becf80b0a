import TestSupport
import Testing

@testable import BatchDL

/// A `metalink:` entry never runs without its hashes and sources: until the run side uses them,
/// planning refuses it, after listing the document's own problems.
@Suite struct MetalinkPlanTests {
  @Test func aLocalDocumentIsReadAndTheEntryRefused() {
    let found = ManifestFixture.problems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - metalink: doc.meta4
              to: isos/
      """,
      files: [
        "doc.meta4": """
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="a.iso"><url>https://example.org/a.iso</url></file>
          <file name="../evil"><url>https://example.org/evil</url></file>
        </metalink>
        """
      ])
    #expect(found.count == 2, "\(found)")
    #expect(found.last?.hasPrefix("5:9: error: metalink: entries are not supported by this batchdl yet") == true)
    #expect(found.last?.contains("its 1 file would download without their Metalink hashes and mirrors") == true)
    #expect(
      found.first
        == "doc.meta4:3:3: error: file name '../evil' contains '..'; it could escape 'to:'; this file is left out"
    )
  }

  @Test func aMissingDocumentIsReported() {
    let found = ManifestFixture.problems(
      "version: 1\nsessions:\n  main:\n    tasks:\n      - metalink: missing.meta4\n")
    #expect(found.count == 2, "\(found)")
    #expect(found.contains { $0.hasPrefix("missing.meta4:1:1: error: cannot read the Metalink document") })
  }

  @Test func aDocumentByURLIsRefused() {
    expectProblemsPlanned(
      "version: 1\nsessions:\n  main:\n    tasks:\n      - metalink: https://example.org/a.meta4\n",
      "5:19: error: metalink: documents fetched by URL are not supported by this batchdl yet")
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

private func expectProblemsPlanned(_ yaml: String, _ prefix: String, sourceLocation: SourceLocation = #_sourceLocation)
{
  let found = ManifestFixture.problems(yaml)
  #expect(found.count == 1 && found.first?.hasPrefix(prefix) == true, "\(found)", sourceLocation: sourceLocation)
}
