import TestSupport
import Testing

@testable import BatchDL

/// Positions in less common layouts: escapes, multi-line scalars, aliases, line endings.
@Suite struct PositionTests {
  @Test func escapesBeforeTheDollarAreCountedAsWritten() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          headers:
            X-A: 'it''s ${A}'
            X-B: "\\u00e9\\t${B}"
            X-C: "\\x41 ${C}"
          tasks:
            - download: https://example.org/a.bin
      """,
      [
        Expected("5:19", "environment variable A is not set"),
        Expected("6:21", "environment variable B is not set"),
        Expected("7:18", "environment variable C is not set"),
      ])
  }

  @Test func scalarsOverSeveralLinesPointAtTheirStart() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          headers:
            X-Plain: first
              ${PLAIN}
            X-Quoted: "first
              ${QUOTED}"
            X-Block: |
              ${BLOCK}
          tasks:
            - download: https://example.org/a.bin
      """,
      [
        Expected("5:16", "environment variable PLAIN is not set"),
        Expected("7:17", "environment variable QUOTED is not set"),
        Expected("9:16", "environment variable BLOCK is not set"),
      ])
  }

  @Test func anchoredAndTaggedScalars() {
    // The scalar's mark is at its anchor or tag; the position still points at the '$'.
    expectProblems(
      """
      version: 1
      sessions:
        main:
          headers: {X-A: &a "${A}", X-B: *a}
          tasks:
            - download: https://example.org/a.bin
              to: !!str  &t  sub/${T}.bin
              body: &b 'x${B}'
      """,
      [
        Expected("4:24", "environment variable A is not set"),
        Expected("7:28", "environment variable T is not set"),
        Expected("8:20", "environment variable B is not set"),
      ])
  }

  @Test func problemsOfASharedValueAreReportedOnce() {
    expectProblems(
      """
      version: 1
      sessions:
        a:
          retry: &retry {attempts: 0, backof: 1s}
          tasks:
            - &task
              download: https://example.org/a.bin
              colour: red
        b:
          retry: *retry
          tasks:
            - *task
        c:
          retry: *retry
          tasks:
            - download: https://example.org/c.bin
      """,
      [
        Expected("4:30", "retry.attempts", "at least 1"),
        Expected("4:33", "unknown key 'backof' in retry", "did you mean 'backoff'?"),
        Expected("8:9", "unknown key 'colour' in a download task"),
      ])
  }

  @Test func windowsLineEndings() {
    expectValid(minimal.replacingOccurrences(of: "\n", with: "\r\n"))
    let crlf = minimal(adding: "headers: {X-A: \"${A}\"}\ncache: {policy: relaod}").replacingOccurrences(
      of: "\n", with: "\r\n")
    expectProblems(
      crlf,
      [
        Expected("6:21", "environment variable A is not set"),
        Expected("7:21", "unknown cache.policy 'relaod'"),
      ])
  }

  @Test func byteOrderMark() {
    expectValid("\u{FEFF}" + minimal)
    // The mark is not counted as a column.
    expectProblems(
      "\u{FEFF}sessions: {main: {headers: {X-A: \"${A}\"}, tasks: []}}\nversion: 1\n",
      [
        Expected("1:35", "environment variable A is not set"),
        Expected("1:50", "session 'main' has no tasks", severity: "warning"),
      ])
  }

  @Test func environmentValuesCannotSplitAHeader() {
    let found = ManifestFixture.problems(
      minimal(adding: "headers: {X-A: \"${A}\"}"), environment: ["A": "value\r\nX-Injected: 1"])
    expectMatch(found, [Expected("6:20", "header 'X-A' contains a line break")])
    #expect(!render(found).contains("X-Injected"))
  }

  @Test func everyProblemOfManifestAndListFileIsReported() {
    let found = ManifestFixture.problems(
      """
      version: 1
      sessions:
        main:
          cache: {policy: relaod}
          tasks:
            - list: urls.txt
      """, files: ["urls.txt": "https://example.org/a.bin\nnot a url\n"])
    #expect(found.count == 2, "\(found)")
    #expect(found.contains { $0.hasPrefix("4:21: error: unknown cache.policy 'relaod'") })
    #expect(found.contains { $0.hasPrefix("urls.txt:2:1: error:") })
  }
}
