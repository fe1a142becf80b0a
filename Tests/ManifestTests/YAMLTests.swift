import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest

/// Problems of the YAML itself: duplicates, key types, documents, syntax, emptiness and aliases.
@Suite struct YAMLTests {
  @Test func duplicateKeysNameTheFirstPosition() {
    expectProblems(
      """
      version: 1
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.bin
              to: a.bin
              to: b.bin
        main:
          tasks:
            - download: https://example.org/c.bin
      """,
      [
        Expected("2:1", "duplicate key 'version'", "first defined at line 1, column 1"),
        Expected("8:9", "duplicate key 'to'", "first defined at line 7, column 9"),
        Expected("9:3", "duplicate key 'main'", "first defined at line 4, column 3"),
      ])
  }

  @Test func duplicateKeysInFlowMappingsAreReportedOnce() {
    expectProblems(
      minimal(adding: "headers: {Accept: a, Accept: b}"),
      [Expected("6:26", "duplicate key 'Accept'", "first defined at line 6, column 15")])
    expectProblems(
      minimal(adding: "cache: {memory: 1MB, memory: 2MB}"),
      [Expected("6:26", "duplicate key 'memory'", "first defined at line 6, column 13")])
  }

  @Test func nonStringKeys() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          headers:
            [a, b]: c
            {x: y}: z
          tasks:
            - download: https://example.org/a.bin
      ? [not, a, name]
      : value
      """,
      [
        Expected("5:7", "mapping keys must be strings, found a list"),
        Expected("6:7", "mapping keys must be strings, found a mapping"),
        Expected("9:3", "mapping keys must be strings, found a list"),
      ])
  }

  @Test func oneDocumentOnly() {
    expectProblems(
      minimal + "---\nversion: 1\n",
      [Expected("6:1", "a manifest holds one YAML document", "remove this `---`")])
    expectProblems(
      "---\n" + minimal + "...\n---\n",
      [Expected("8:1", "a manifest holds one YAML document")])
    // An explicit start marker on the only document is fine.
    expectValid("---\n" + minimal + "...\n")
  }

  @Test func emptyManifests() {
    for text in ["", "\n\n", "   \n", "# nothing here\n# at all\n"] {
      expectProblems(text, [Expected("1:1", "the manifest is empty", "'version: 1'", "'sessions:'")])
    }
  }

  @Test func nullDocumentIsEmptyToo() {
    expectProblems("---\n", [Expected("1:1", "the manifest is empty")])
    expectProblems("~\n", [Expected("1:1", "the manifest is empty")])
  }

  @Test func syntaxErrorsGiveTheirPosition() {
    expectProblems(
      "version: 1\nsessions: [a, b\n",
      [Expected("3:1", "YAML syntax error", "did not find expected ',' or ']'", "flow sequence at line 2, column 11")])
    expectProblems(
      "version: 1\nsessions: a: b\n",
      [Expected("2:12", "YAML syntax error", "mapping values are not allowed in this context")])
    expectProblems(
      "version: 1\nsessions:\n\tmain: {}\n",
      [Expected("3:1", "YAML syntax error", "found character that cannot start any token")])
    expectProblems(
      "version: 1\nsessions:\n  main:\n    tasks: []\n   bad: 1\n",
      [Expected("5:4", "YAML syntax error", "did not find expected key", "block mapping at line 3, column 3")])
    expectProblems(
      "version: 1\nsessions:\n  main:\n    dest: \"out\n",
      [Expected("5:1", "YAML syntax error", "found unexpected end of stream", "quoted scalar at line 4, column 11")])
  }

  @Test func problemsBeforeASyntaxErrorAreKept() {
    expectProblems(
      "version: 1\nversion: 1\nsessions: [a, b\n",
      [
        Expected("2:1", "duplicate key 'version'"),
        Expected("4:1", "YAML syntax error"),
      ])
  }

  @Test func unknownAlias() {
    expectProblems(
      minimal(adding: "headers: *common"),
      [Expected("6:14", "unknown alias *common", "define the anchor &common before using it")])
  }

  @Test func anAliasCannotReferToItsOwnAnchor() {
    expectProblems(
      minimal(adding: "headers: &loop {X-A: *loop}"),
      [Expected("6:26", "unknown alias *loop", "define the anchor &loop before using it")])
  }

  @Test func anchorsAliasesAndMergeKeys() throws {
    let manifest = try load(
      """
      version: 1
      sessions:
        first:
          headers: &headers {Accept: text/plain, X-Team: web}
          retry: &retry {attempts: 2, backoff: 3s}
          network: &slow {rate_limit: 1MB/s, max_concurrent: 2}
          tasks:
            - &task
              download: https://example.org/a.bin
              priority: high
        second:
          headers: *headers
          retry:
            <<: *retry
            attempts: 7
          network:
            <<: [*slow, {rate_limit: 9MB/s, max_connections_per_host: 1}]
          tasks:
            - <<: *task
              to: copy.bin
      """)
    let first = try #require(manifest.session("first"))
    let second = try #require(manifest.session("second"))
    #expect(second.header("Accept") == "text/plain")
    #expect(second.header("X-Team") == "web")
    // Explicit keys win over merged ones.
    #expect(first.retry.attempts == 2)
    #expect(second.retry.attempts == 7)
    #expect(second.retry.backoff == .seconds(3))
    // Earlier merged mappings win over later ones; keys only in later ones still come in.
    #expect(second.network.rateLimit == 1 << 20)
    #expect(second.network.maxConcurrent == 2)
    #expect(second.network.maxConnectionsPerHost == 1)
    let task = try #require(second.specs.first)
    #expect(task.kind == .download)
    #expect(task.url == "https://example.org/a.bin")
    #expect(task.priority == .high)
    #expect(task.to == "copy.bin")
  }

  @Test func mergedManifestPlans() {
    // The same request written to two places is planned once, not reported as a conflict.
    expectValid(
      """
      version: 1
      sessions:
        main:
          tasks:
            - &t
              download: https://example.org/a.bin
            - <<: *t
              to: again/a.bin
      """)
  }

  @Test func mergeKeyNeedsMappings() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          retry:
            <<: 5
          cache:
            <<: [{policy: reload}, nope]
          tasks:
            - download: https://example.org/a.bin
      """,
      [
        Expected("5:11", "a merge key (<<) takes a mapping or a list of mappings, found a scalar"),
        Expected("7:30", "a merge key (<<) takes mappings, found a scalar"),
      ])
  }

  @Test func mergedKeysAreCheckedLikeWrittenOnes() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          retry:
            <<: &base {attempts: 2, backof: 1s}
          tasks:
            - download: https://example.org/a.bin
      """,
      [Expected("5:31", "unknown key 'backof' in retry", "did you mean 'backoff'?")])
  }

  @Test func quotedMergeKeyIsAnOrdinaryKey() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          retry:
            "<<": {attempts: 2}
          tasks:
            - download: https://example.org/a.bin
      """,
      [Expected("5:7", "unknown key '<<' in retry")])
  }

  /// A "billion laughs" document: each level holds ten aliases of the one before.
  static func billionLaughs(levels: Int) -> String {
    var lines = ["a0: &a0 [\(Array(repeating: "\"lol\"", count: 10).joined(separator: ", "))]"]
    for level in 1..<levels {
      let items = Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", ")
      lines.append("a\(level): &a\(level) [\(items)]")
    }
    return lines.joined(separator: "\n") + "\n"
  }

  @Test(arguments: [9, 10])
  func billionLaughsIsRejected(levels: Int) {
    // Level k (from 0) weighs 1 + 10 * weight(k - 1): 11, 111, 1111, 11111. The aliases of level 4 push
    // the running total (12330 after level 3) past 100000 at the 8th alias: 12330 + 8 * 11111.
    let found = ManifestFixture.problems(Self.billionLaughs(levels: levels))
    expectMatch(found, [Expected("5:45", "aliases expand to more than 100000 nodes", "alias bomb")])
  }

  @Test func billionLaughsAsASessionValue() {
    let bomb = Self.billionLaughs(levels: 9).split(separator: "\n").map { "  x-" + $0 }.joined(separator: "\n")
    let found = ManifestFixture.problems("version: 1\nbombs:\n" + bomb + "\n" + "sessions: {}\n")
    #expect(found.count == 1)
    #expect(found.first?.contains("aliases expand to more than 100000 nodes") == true)
  }

  @Test func aliasesBelowTheBoundAreFine() throws {
    // 4 levels weigh 11111 nodes in all: well under the bound.
    var parser = YAMLParser()
    var diagnostics = Diagnostics()
    let root = parser.parse(Array(Self.billionLaughs(levels: 4).utf8), file: "m.yaml", diagnostics: &diagnostics)
    #expect(root != nil)
    #expect(!diagnostics.hasErrors)
    // A smaller bound rejects the same document.
    parser.maxAliasExpansion = 1000
    diagnostics = Diagnostics()
    #expect(parser.parse(Array(Self.billionLaughs(levels: 4).utf8), file: "m.yaml", diagnostics: &diagnostics) == nil)
    #expect(diagnostics.items.first?.message.contains("more than 1000 nodes") == true)
  }

  @Test func deepFlowNestingIsRejected() {
    // The top mapping is level 1, so the 64th '[' (column 67 after "x: ") is level 65.
    let deep = "version: 1\nx: " + String(repeating: "[", count: 70) + String(repeating: "]", count: 70) + "\n"
    expectProblems(deep, [Expected("2:67", "collections nest more than 64 levels deep")])
  }

  @Test func nestingOf64LevelsIsAllowed() {
    let limit = "version: 1\nx: " + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "\n"
    expectProblems(
      limit,
      [
        Expected("1:1", "missing 'sessions:'"),
        Expected("2:1", "unknown key 'x' in the manifest"),
      ])
  }

  @Test func deepBlockNestingIsRejected() {
    var lines: [String] = []
    for level in 0..<100 { lines.append(String(repeating: "  ", count: level) + "a:") }
    // The 65th mapping starts at line 65, indented by 64 levels of two spaces.
    expectProblems(
      lines.joined(separator: "\n") + " 1\n", [Expected("65:129", "collections nest more than 64 levels deep")])
  }

  @Test func positionsAreCharactersNotBytes() {
    // "é" is two bytes in UTF-8 but one column, in the source and in the value.
    expectProblems(
      minimal(adding: "headers: {X-A: é, X-Bad: \"é ${UNSET}\"}"),
      [Expected("6:33", "environment variable UNSET is not set")])
  }
}
