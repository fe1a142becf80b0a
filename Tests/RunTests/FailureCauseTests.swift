import Testing

@testable import BatchDL
@testable import BatchDLStore

/// One line per cause: failures told apart by code and the shape of their message
/// (`FailureCause`), printed once with a count (`FailureGroups`), and said once by `report diff`.
@Suite struct FailureCauseTests {
  @Test func theShapeSetsAsideTheTasksNamesAndNumbers() {
    let table: [(message: String, names: [String], shape: String)] = [
      ("HTTP 404 Not Found", ["a.bin"], "HTTP # Not Found"),
      ("expected 100 bytes, got 120", [], "expected # bytes, got #"),
      ("https://h/x/a.bin: bad signature", ["https://h/x/a.bin", "a.bin"], "*: bad signature"),
      ("out/a.bin leads outside dest", ["a.bin", "out/a.bin"], "* leads outside dest"),
      ("no names at all", [""], "no names at all"),
    ]
    for row in table {
      #expect(FailureCause.shape(of: row.message, names: row.names) == row.shape, "\(row)")
    }
  }

  @Test func oneLinePerCauseWithACountAndTheFirstNames() {
    var groups = FailureGroups()
    for number in 0..<5 {
      groups.add(
        name: "f\(number)", code: "signature", message: "the signature of SHA256SUMS is bad",
        names: ["f\(number)"])
    }
    groups.add(name: "g", code: "http-404", message: "HTTP 404", names: ["g"])
    groups.add(name: "s1", code: "size", message: "expected 10 bytes, got 12", names: ["s1"])
    groups.add(name: "s2", code: "size", message: "expected 20 bytes, got 22", names: ["s2"])
    #expect(
      groups.lines == [
        "failed    5 tasks  signature: the signature of SHA256SUMS is bad (f0, f1, f2 and 2 more)",
        "failed    g  http-404: HTTP 404",
        "failed    2 tasks  size: expected # bytes, got # (s1, s2)",
      ], "\(groups.lines)")
  }

  func result(_ id: String, _ outcome: TaskOutcome, error: (String, String)? = nil) -> TaskResult {
    var result = TaskResult(
      id: id, session: "s", kind: .download, url: "https://h/\(id)", to: "out/\(id)", outcome: outcome, status: nil,
      size: outcome == .failed ? nil : 1, sha256: nil, resumedFrom: 0, attempts: 1, source: nil)
    result.error = error
    return result
  }

  @Test func reportDiffSaysChangesOfOneCauseOnce() {
    var old = RunReport(manifest: "m.yaml")
    var new = RunReport(manifest: "m.yaml")
    for number in 0..<4 {
      old.results.append(result("f\(number)", .failed, error: ("signature", "bad signature over SHA256SUMS")))
      new.results.append(result("f\(number)", .unchanged))
    }
    old.results.append(result("g", .completed))
    new.results.append(result("g", .failed, error: ("http-404", "HTTP 404 for https://h/g")))
    let text = ReportDiff(old: old, new: new).text
    let lines = text.split(separator: "\n").map(String.init)
    #expect(
      lines.contains(
        "~ 4 tasks: failed (signature: bad signature over SHA256SUMS) → unchanged (f0, f1, f2 and 1 more)"), "\(text)")
    #expect(lines.contains { $0.hasPrefix("! g: completed → failed (http-404: HTTP 404 for https://h/g)") }, "\(text)")
    #expect(!lines.contains { $0.hasPrefix("~ f1") }, "\(text)")
    let markdown = ReportDiff(old: old, new: new).markdown()
    #expect(markdown.contains("| 4 tasks |"), "\(markdown)")
  }

  @Test func theTotalLineSaysOfThePlannedBytesWhenEveryFilesSizeIsKnown() {
    let display = ProgressDisplay(
      mode: .always, quiet: true, totalTasks: 2, area: FakeTerminal(columns: 100, rows: 10).area())
    let active = [ProgressDisplay.Line(name: "a.bin", received: 1024, expected: 2048)]
    #expect(display.frame(active: active, size: LiveArea.Size(columns: 100, rows: 10)).last?.contains(" of ") == false)
    display.plannedBytes = 4096
    let total = display.frame(active: active, size: LiveArea.Size(columns: 100, rows: 10)).last ?? ""
    #expect(total.contains("0 B of 4.0 KB"), "\(total)")
  }
}
