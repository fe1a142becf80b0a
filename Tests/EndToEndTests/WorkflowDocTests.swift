import Foundation
import TestServer
import TestSupport
import Testing

/// The worked examples of docs/workflows.md are what batchdl prints: the cron mail of a bad night
/// and a CI job's report diff, run here and compared line by line with the document.
@Suite struct WorkflowDocTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
  static var document: [String] {
    ((try? String(contentsOfFile: root + "/docs/workflows.md", encoding: .utf8)) ?? "")
      .components(separatedBy: "\n")
  }

  /// The lines of the document's fenced block that contains `marker`, without their indentation.
  static func block(containing marker: String) -> [String] {
    let lines = document
    guard let hit = lines.firstIndex(where: { $0.contains(marker) }),
      let open = lines[..<hit].lastIndex(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("```") }),
      let close = lines[(hit + 1)...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "```" })
    else { return [] }
    return lines[(open + 1)..<close].map { $0.trimmingCharacters(in: .whitespaces) }
  }

  @Test func theCronMailOfABadNightIsWhatTheDocumentShows() throws {
    let expected = Self.block(containing: "error: on_finished of session nightly")
    #expect(expected.count == 2, "\(expected)")
    let fixture = try RunFixture()
    fixture.server.route("/app.tar.gz", .status(404))
    fixture.manifest(
      """
      version: 1
      sessions:
        nightly:
          retry: {attempts: 1}
          on_finished: 'exit 7'
          tasks:
            - download: BASE/app.tar.gz
              to: mirror/app.tar.gz
      """, name: "mirror.yaml")
    // As the crontab line runs it: standard output thrown away, standard error mailed.
    let outcome = try BinaryRunner.run(
      ["run", "mirror.yaml", "--report", "reports/last.json"], in: fixture.folder.path)
    #expect(outcome.status == 1)
    #expect(outcome.stderr.split(separator: "\n").map(String.init) == expected, "\(outcome.stderr)")
  }

  @Test func theReportDiffOfACIJobIsWhatTheDocumentShows() throws {
    let expected = Self.block(containing: "$ batchdl report diff reports/expected.json report.json")
    let command = try #require(expected.first)
    #expect(command == "$ batchdl report diff reports/expected.json report.json")
    let folder = TemporaryDirectory()
    func task(_ id: String, _ outcome: String, sha: String, size: Int, error: String? = nil) -> String {
      var fields = [
        "\"attempts\":1", "\"id\":\"\(id)\"", "\"kind\":\"download\"", "\"outcome\":\"\(outcome)\"",
        "\"resumed_from\":0", "\"session\":\"nightly\"", "\"url\":\"https://example.org/\(id)\"",
      ]
      if let error {
        fields.append("\"error\":{\"code\":\"http-404\",\"message\":\"\(error)\"}")
        fields.append("\"status\":404")
      } else {
        fields += ["\"sha256\":\"\(sha)\"", "\"size\":\(size)", "\"status\":200"]
      }
      return "{" + fields.joined(separator: ",") + "}"
    }
    func report(_ tasks: [String]) -> String {
      "{\"format\":\"batchdl-report/1\",\"manifest\":\"mirror.yaml\",\"summary\":{},\"tasks\":[\n"
        + tasks.joined(separator: ",\n") + "\n]}\n"
    }
    let same = String(repeating: "ab", count: 32)
    let names = (0..<274).map { String(format: "mirror/pkg-%03d.tar.gz", $0) }
    let old = report(
      [
        task(
          "mirror/app.tar.gz", "completed", sha: "4f1c7a0e2b9d" + String(repeating: "0", count: 52), size: 1_048_576),
        task("mirror/gone.tar.gz", "completed", sha: same, size: 10),
      ] + names.map { task($0, "completed", sha: same, size: 10) })
    let new = report(
      [
        task(
          "mirror/app.tar.gz", "completed", sha: "9b71d224bd62" + String(repeating: "0", count: 52), size: 1_050_112),
        task("mirror/gone.tar.gz", "failed", sha: "", size: 0, error: "HTTP 404 Not Found"),
      ] + names.map { task($0, "unchanged", sha: same, size: 10) })
    _ = folder.write("reports/expected.json", old)
    _ = folder.write("report.json", new)
    let diff = try BinaryRunner.run(["report", "diff", "reports/expected.json", "report.json"], in: folder.path)
    let printed = diff.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let shown = Array(expected.dropFirst().prefix { !$0.hasPrefix("$ ") })
    #expect(printed.dropLast() == ArraySlice(shown), "\(diff.stdout)")
    #expect(expected.last == String(diff.status), "the document's exit status")
    let markdown = try BinaryRunner.run(
      ["report", "diff", "reports/expected.json", "report.json", "--markdown"], in: folder.path)
    let documented = Self.block(containing: "### batchdl report diff: mirror.yaml")
    #expect(
      markdown.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        == documented, "\(markdown.stdout)")
  }
}
