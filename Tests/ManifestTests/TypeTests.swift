import TestSupport
import Testing

@testable import BatchDL

/// Values of the wrong shape or type are reported where they are written.
@Suite struct TypeTests {
  @Test func wrongShapesInASession() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          dest: {path: out}
          headers: Accept
          timeouts: 30s
          network:
            allows_cellular: yes
            discretionary: "true"
            max_concurrent: 2.5
            max_connections_per_host: [4]
          retry: {attempts: three}
          tasks:
            - download: [https://example.org/a.bin]
            - https://example.org/b.bin
      """,
      [
        Expected("4:11", "dest must be a string, found a mapping"),
        Expected("5:14", "headers must be a mapping", "found a scalar"),
        Expected("6:15", "timeouts must be a mapping", "found a scalar"),
        Expected("8:24", "network.allows_cellular must be true or false", "'yes' is not a boolean"),
        Expected("9:22", "network.discretionary must be true or false", "found 'true'"),
        Expected("10:23", "network.max_concurrent must be a whole number, found '2.5'"),
        Expected("11:33", "network.max_connections_per_host must be a whole number, found a list"),
        Expected("12:23", "retry.attempts must be a whole number, found 'three'"),
        Expected("14:19", "the URL must be a string, found a list"),
        Expected("15:9", "a task must be a mapping", "found a scalar"),
      ])
  }

  @Test(arguments: ["yes", "no", "on", "off", "Yes", "NO"])
  func yamlOneOneBooleansAreRejected(word: String) {
    expectProblems(
      minimal(
        adding: """
          network:
            waits_for_connectivity: \(word)
          """),
      [Expected("7:31", "network.waits_for_connectivity must be true or false", "'\(word)' is not a boolean")])
  }

  @Test func realBooleansAreAccepted() throws {
    let manifest = try load(
      minimal(
        adding: """
          network:
            allows_cellular: false
            allows_expensive: False
            allows_constrained: FALSE
            waits_for_connectivity: true
          """))
    let network = try #require(manifest.session("main")).network
    #expect(!network.allowsCellular && !network.allowsExpensive && !network.allowsConstrained)
    #expect(network.waitsForConnectivity)
  }

  @Test func rootMustBeAMapping() {
    expectProblems(
      "- version: 1\n- sessions: {}\n", [Expected("1:1", "the manifest must be a mapping", "found a list")])
    expectProblems("just text\n", [Expected("1:1", "the manifest must be a mapping", "found a scalar")])
  }

  @Test func sessionsAndTasksShapes() {
    expectProblems(
      """
      version: 1
      sessions: [main, other]
      """,
      [Expected("2:11", "sessions must be a mapping", "found a list")])
    expectProblems(
      """
      version: 1
      sessions:
        main: fast
        other:
          tasks: {download: https://example.org/a.bin}
      """,
      [
        Expected("3:9", "session 'main' must be a mapping", "found a scalar"),
        Expected("5:12", "tasks must be a list", "found a mapping"),
      ])
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks: https://example.org/a.bin
      """,
      [Expected("4:12", "tasks must be a list (each item starting with '- '), found a scalar")])
  }

  @Test func missingTopLevelKeys() {
    expectProblems(
      """
      # a comment first
      defaults: {}
      """,
      [
        Expected("2:1", "missing 'version: 1'"),
        Expected("2:1", "missing 'sessions:'"),
      ])
    expectProblems(
      """
      version: 1
      sessions: {}
      """,
      [Expected("2:11", "no sessions", "add at least one")])
    expectProblems(
      """
      version: 1
      sessions:
        main:
          kind: default
      """,
      [Expected("3:3", "session 'main' has no 'tasks:' list")])
  }

  @Test func versionMustBeTheIntegerOne() {
    let rest = "sessions:\n  main:\n    tasks:\n      - download: https://example.org/a.bin\n"
    expectProblems("version: 2\n" + rest, [Expected("1:10", "unsupported manifest version 2", "reads version 1")])
    expectProblems("version: one\n" + rest, [Expected("1:10", "version must be a whole number, found 'one'")])
    expectProblems("version: 1.0\n" + rest, [Expected("1:10", "version must be a whole number, found '1.0'")])
    expectProblems("version: [1]\n" + rest, [Expected("1:10", "version must be a whole number, found a list")])
  }

  @Test func countsMustBePositiveWholeNumbers() {
    expectProblems(
      minimal(
        adding: """
          retry: {attempts: 0}
          network: {max_concurrent: 0, max_connections_per_host: -2}
          """),
      [
        Expected("6:23", "retry.attempts", "at least 1", "1 means no retry"),
        Expected("7:31", "network.max_concurrent must be at least 1"),
        Expected("7:60", "network.max_connections_per_host must be at least 1"),
      ])
  }

  @Test func taskFieldTypes() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.bin
              to: ~
              after: {id: x}
              headers: [Accept]
              priority: [high]
            - data: https://example.org/b.json
              method: "GE T"
              become_download: yes
            - upload: https://example.org/up
              form: [a, b]
      """,
      [
        Expected("6:13", "to must be a string, found nothing (null)"),
        Expected("7:16", "after must be a string, found a mapping"),
        Expected("8:18", "headers must be a mapping", "found a list"),
        Expected("9:19", "priority must be a string, found a list"),
        Expected("11:17", "method 'GE T' is not an HTTP method name"),
        Expected("12:26", "become_download must be a mapping", "found a scalar"),
        Expected("14:15", "form must be a mapping", "found a list"),
      ])
  }

  @Test func headerNamesAndValues() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          headers:
            "Bad Header": x
            X-Nested: {a: b}
            X-Split: "one\\r\\ntwo"
            Accept: text/plain
            accept: text/html
          tasks:
            - download: https://example.org/a.bin
      """,
      [
        Expected("5:7", "'Bad Header' is not a valid header name"),
        Expected("6:17", "header 'X-Nested' must be a string, found a mapping"),
        Expected("7:16", "header 'X-Split' contains a line break"),
        Expected("9:7", "header 'accept' is given twice", "also at line 8", "ignore case"),
      ])
  }

  @Test func scalarsOfOtherYAMLTypesAreStringsWhereStringsAreExpected() throws {
    let manifest = try load(
      """
      version: 1
      sessions:
        main:
          headers: {X-Count: 5, X-Flag: true, X-Empty: ""}
          tasks:
            - download: https://example.org/a.bin
              to: 2024
      """)
    let session = try #require(manifest.session("main"))
    #expect(session.header("X-Count") == "5")
    #expect(session.header("X-Flag") == "true")
    #expect(session.header("X-Empty") == "")
    #expect(session.specs.first?.to == "2024")
  }

  @Test func stringListsAcceptOneStringOrAList() throws {
    let manifest = try load(
      """
      version: 1
      sessions:
        main:
          network:
            cellular_interfaces: usb*
            expensive_interfaces: [tether0, hotspot*]
          tasks:
            - data: https://example.org/a.json
              become_download: {content_type: application/zip}
      """)
    let session = try #require(manifest.session("main"))
    #expect(session.network.cellularInterfaces == ["usb*"])
    #expect(session.network.expensiveInterfaces == ["tether0", "hotspot*"])
    #expect(session.network.constrainedInterfaces == [])
    #expect(session.specs.first?.becomeDownload?.contentTypes == ["application/zip"])
    expectProblems(
      minimal(adding: "network: {constrained_interfaces: [a, {b: c}]}"),
      [Expected("6:43", "network.constrained_interfaces must be a string, found a mapping")])
  }
}
