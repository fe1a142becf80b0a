import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLSupport

/// Every problem of a manifest is reported at once, in order of position.
@Suite struct MultipleProblemTests {
  @Test func everyProblemIsReportedSortedByPosition() {
    expectProblems(
      """
      version: 1
      defaults:
        retry: {attempts: 0}
      sessions:
        bg:
          kind: background
          timeouts: {request: -5s}
          tasks:
            - data: https://example.org/a.json
              prority: high
        Fast:
          kind: default
          kind: ephemeral
          cache: {policy: relaod}
          headers: {Authorization: "Bearer ${TOKEN}"}
          tasks:
            - upload: https://example.org/up
            - download: https://example.org/b.bin
              sha256: 1234
      unknown: 1
      """,
      [
        Expected("3:21", "retry.attempts", "at least 1"),
        Expected("5:3", "background session 'bg' needs an 'identifier:'"),
        Expected("7:25", "bad duration '-5s' for timeouts.request"),
        Expected("9:9", "data tasks are not supported in background sessions"),
        Expected("10:9", "unknown key 'prority' in a data task", "did you mean 'priority'?"),
        Expected("11:3", "session name 'Fast'"),
        Expected("13:5", "duplicate key 'kind'", "first defined at line 12, column 5"),
        Expected("14:21", "unknown cache.policy 'relaod'", "did you mean 'reload'?"),
        Expected("15:38", "environment variable TOKEN is not set"),
        Expected("17:9", "an upload needs what to send"),
        Expected("19:17", "sha256 must be 64 hexadecimal digits", "found 4 characters"),
        Expected("20:1", "unknown key 'unknown' in the manifest"),
      ])
  }

  @Test func problemsInSeveralSessionsAndTasksAllCount() throws {
    var yaml = "version: 1\nsessions:\n"
    for session in 0..<5 {
      yaml += "  s\(session):\n    tasks:\n"
      for task in 0..<4 { yaml += "      - download: https://example.org/\(session)/\(task).bin\n        to: [x]\n" }
    }
    let found = ManifestFixture.problems(yaml)
    #expect(found.count == 20)
    #expect(found.allSatisfy { $0.contains("to must be a string, found a list") })
    #expect(found.first?.hasPrefix("6:13: error:") == true)
    #expect(found.last?.hasPrefix("\(2 + 5 * 10):13: error:") == true)
  }

  @Test func diagnosticsCarryTheFileName() {
    do {
      _ = try load("version: 1\nsessions: []\n")
      Issue.record("expected an error")
    } catch {
      #expect(
        error.description
          == "/virtual/manifest.yaml:2:11: error: sessions must be a mapping (key: value lines), found a list")
    }
  }

  @Test func warningsDoNotFailAManifest() throws {
    let loaded = try ManifestLoader.parse(
      Array("version: 1\nsessions:\n  main:\n    tasks: []\n".utf8), path: "m.yaml", environment: [:])
    #expect(loaded.warnings.map(\.description) == ["m.yaml:4:12: warning: session 'main' has no tasks"])
  }

  @Test func loadReportsAnUnreadableFile() {
    do {
      _ = try ManifestLoader.load(path: "/nonexistent/batchdl/manifest.yaml", environment: [:])
      Issue.record("expected an error")
    } catch {
      #expect(error.diagnostics.count == 1)
      #expect(error.description.hasPrefix("/nonexistent/batchdl/manifest.yaml:1:1: error: cannot read the manifest: "))
    }
  }

  @Test func diagnosticsSortByFileLineColumnAndKeepTies() {
    var diagnostics = Diagnostics()
    diagnostics.error(SourceMark(file: "b", line: 1, column: 1), "b1")
    diagnostics.error(SourceMark(file: "a", line: 2, column: 1), "a2")
    diagnostics.error(SourceMark(file: "a", line: 1, column: 9), "a1-9")
    diagnostics.warning(SourceMark(file: "a", line: 1, column: 2), "first tie")
    diagnostics.error(SourceMark(file: "a", line: 1, column: 2), "second tie")
    diagnostics.error(SourceMark(file: "a", line: 2, column: 1), "a2")
    #expect(diagnostics.sorted.map(\.message) == ["first tie", "second tie", "a1-9", "a2", "b1"])
    #expect(diagnostics.errorCount == 5)
    #expect(diagnostics.hasErrors)
  }
}
