import Foundation
import TestSupport
import Testing

/// `report diff --markdown`, rendered by GitHub's own Markdown renderer (`cmark-gfm` with the table,
/// autolink and strikethrough extensions, which scripts/setup installs) to check what a job summary or a comment would show.
@Suite struct ReportMarkdownTests {
  /// A report of `tasks` (id, outcome, size, sha256, error message) in the `batchdl-report/1` form.
  func report(_ tasks: [(id: String, outcome: String, size: Int, sha: String, error: String?)]) -> String {
    let entries = tasks.map { task -> [String: Any] in
      var entry: [String: Any] = [
        "id": task.id, "session": "main", "kind": "download", "url": "http://127.0.0.1:1/\(task.id)",
        "outcome": task.outcome, "size": task.size, "sha256": task.sha, "attempts": 1, "resumed_from": 0,
      ]
      if let error = task.error { entry["error"] = ["code": "http-404", "message": error] }
      return entry
    }
    let object: [String: Any] = [
      "format": "batchdl-report/1", "manifest": "mirror.yaml", "summary": ["requests": tasks.count],
      "tasks": entries,
    ]
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    return String(decoding: data, as: UTF8.self)
  }

  /// The Markdown diff of two reports, and its exit status.
  func markdown(_ old: String, _ new: String, _ extra: [String] = []) throws -> (status: Int32, text: String) {
    let folder = TemporaryDirectory()
    _ = folder.write("old.json", old)
    _ = folder.write("new.json", new)
    let result = try BinaryRunner.run(
      ["report", "diff", "old.json", "new.json", "--markdown"] + extra, in: folder.path)
    #expect(result.stderr.isEmpty, "\(result.stderr)")
    return (result.status, result.stdout)
  }

  /// `markdown` as GitHub renders it (cmark-gfm with tables), or nil when cmark-gfm is missing.
  func rendered(_ markdown: String) throws -> String? {
    guard let cmark = ExternalTool.find("cmark-gfm") else {
      print("skipped: cmark-gfm is not installed (scripts/setup installs it)")
      return nil
    }
    let result = try ExternalTool.run(
      cmark, ["--extension", "table", "--extension", "autolink", "--extension", "strikethrough"], input: markdown)
    #expect(result.status == 0)
    return result.output
  }

  func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

  @Test func regressionsComeFirstInATableWithTheCountsBeforeAndAfter() throws {
    let sha = String(repeating: "a", count: 64)
    let old = report([("out/a", "completed", 2, sha, nil), ("out/b", "completed", 2, sha, nil)])
    let new = report([
      ("out/a", "completed", 2, sha, nil), ("out/b", "failed", 0, sha, "HTTP 404 Not Found"),
      ("out/0-new", "completed", 3, sha, nil),
    ])
    let (status, text) = try markdown(old, new)
    #expect(status == 1, "a regression still fails the step")
    #expect(text.hasPrefix("### batchdl report diff: mirror.yaml\n"))
    #expect(text.contains("**1 regression** · 2 changes"))
    let rows = text.split(separator: "\n").filter { $0.hasPrefix("| ❌") || $0.hasPrefix("| ➕") }
    #expect(rows.count == 2)
    #expect(rows.first?.contains("out/b") == true, "the regression comes before the added task: \(text)")
    #expect(rows.first?.hasSuffix("| failure |") == true)
    #expect(text.contains("| **failed** | 0 | **1** |"))
    guard let html = try rendered(text) else { return }
    #expect(count("<table>", in: html) == 2)
    #expect(count("<tr>", in: html) == 3 + 8, "header and two changes; header and seven counts: \(html)")
    #expect(html.contains("completed → failed (http-404: HTTP 404 Not Found)"))
    #expect(html.contains("<h3>batchdl report diff: mirror.yaml</h3>"))
  }

  @Test func noRegressionSaysSoAndExitsZero() throws {
    let sha = String(repeating: "b", count: 64)
    let same = report([("out/a", "completed", 2, sha, nil)])
    let (status, text) = try markdown(same, same)
    #expect(status == 0)
    #expect(text.contains("**No regressions** · 0 changes"))
    #expect(!text.contains("| task |"), "no empty table of changes")
  }

  /// Task ids and server messages are the servers' and the manifest's words: a job summary must
  /// show them as text, never as markup, links, HTML or a broken table.
  @Test func hostileTextStaysLiteralText() throws {
    let sha = String(repeating: "c", count: 64)
    let id = "out/<script>alert(1)</script>|**x**"
    let message =
      "<img src=x onerror=alert(1)> | [link](http://evil.example/) www.evil.example `code` $x$ ~~gone~~ &amp; _em_\nsecond line"
    let old = report([(id, "completed", 1, sha, nil)])
    let new = report([(id, "failed", 0, sha, message)])
    let (status, text) = try markdown(old, new)
    #expect(status == 1)
    guard let html = try rendered(text) else { return }
    #expect(!html.contains("<script"), "\(html)")
    #expect(!html.contains("<img"), "\(html)")
    #expect(!html.contains("<a "), "\(html)")
    #expect(!html.contains("<code>"), "\(html)")
    #expect(!html.contains("<em>"), "\(html)")
    #expect(!html.contains("<del>"), "\(html)")
    #expect(
      count("<strong>", in: html) == 5,
      "only the regression count and the changed counts (completed, failed; name and value): \(html)")
    #expect(html.contains("out/&lt;script&gt;alert(1)&lt;/script&gt;|**x**"), "\(html)")
    #expect(
      html.contains(
        "&lt;img src=x onerror=alert(1)&gt; | [link](http://evil.example/) www.evil.example `code` $x$ ~~gone~~ &amp;amp; _em_ second line"
      ))
    let changeRows = html.components(separatedBy: "<tr>").filter { $0.contains("failure") }
    #expect(changeRows.count == 1)
    #expect(count("<td", in: changeRows.first ?? "") == 4, "one row of four cells: \(html)")
  }

  @Test func aLongDiffStopsAtTheRowLimitAndSaysHowManyMore() throws {
    let sha = String(repeating: "d", count: 64)
    let new = report((0..<250).map { ("out/\($0)", "completed", 1, sha, nil) })
    let (status, text) = try markdown(report([]), new)
    #expect(status == 0)
    #expect(text.split(separator: "\n").filter { $0.hasPrefix("| ➕") }.count == 200)
    #expect(text.contains("50 more changes are not shown: `batchdl report diff --json` lists them all."))
    #expect(text.contains("**No regressions** · 250 changes"))
  }

  @Test func markdownAndJSONExcludeEachOther() throws {
    let same = report([])
    let folder = TemporaryDirectory()
    _ = folder.write("a.json", same)
    let result = try BinaryRunner.run(["report", "diff", "a.json", "a.json", "--markdown", "--json"], in: folder.path)
    #expect(result.status != 0)
    #expect(result.stderr.contains("--json and --markdown exclude each other"))
  }
}
