import Foundation
import TestServer
import TestSupport
import Testing

/// `run --metrics FILE`: checked with Prometheus's own `promtool` (Debian's `prometheus`, which
/// scripts/setup installs), and its numbers against the report.
@Suite struct MetricsTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

  /// Runs `promtool ARGUMENTS...` with `input` on its standard input; its status and output.
  func promtool(_ arguments: [String], input: String = "") throws -> (status: Int32, output: String) {
    let result = try ExternalTool.run("/usr/bin/promtool", arguments, input: input)
    return (result.status, result.output)
  }

  /// The value of the sample `name{labels}` (labels written as in the file), or nil.
  func sample(_ text: String, _ name: String, _ labels: String) -> Double? {
    let prefix = "\(name){\(labels)} "
    return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count)) }
  }

  func manifest(_ fixture: RunFixture) {
    fixture.manifest(
      """
      version: 1
      defaults:
        retry: {attempts: 1}
      sessions:
        main:
          dest: out/
          tasks:
            - download: BASE/a.bin
            - download: BASE/b.bin
        side:
          dest: side/
          tasks:
            - download: BASE/c.bin
      """)
  }

  @Test func metricsPassPromtoolMatchTheReportAndKeepTheLastSuccess() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(TestData.pseudoRandomBytes(count: 1000, seed: 1), etag: .strong("a")))
    fixture.server.route("/b.bin", .file(TestData.pseudoRandomBytes(count: 2000, seed: 2), etag: .strong("b")))
    fixture.server.route("/c.bin", .file(TestData.pseudoRandomBytes(count: 3000, seed: 3), etag: .strong("c")))
    manifest(fixture)
    let before = Date().timeIntervalSince1970
    let first = try fixture.run(["--metrics", "metrics/batchdl.prom"])
    #expect(first.status == 0, "\(first.stderr)")
    let text = fixture.folder.read("metrics/batchdl.prom") ?? ""
    let check = try promtool(["check", "metrics"], input: text)
    #expect(check.status == 0, "\(check.output)\n\(text)")

    // The numbers are the report's.
    let summary = try fixture.summary()
    let label = "manifest=\"manifest.yaml\""
    #expect(sample(text, "batchdl_tasks", "\(label),session=\"main\",outcome=\"completed\"") == 2)
    #expect(sample(text, "batchdl_tasks", "\(label),session=\"side\",outcome=\"completed\"") == 1)
    #expect(sample(text, "batchdl_tasks", "\(label),session=\"main\",outcome=\"failed\"") == 0)
    let bytes = [
      sample(text, "batchdl_transferred_bytes", "\(label),session=\"main\""),
      sample(text, "batchdl_transferred_bytes", "\(label),session=\"side\""),
    ].compactMap { $0 }.reduce(0, +)
    #expect(bytes == Double(summary["bytes"] as? Int ?? -1))
    #expect(bytes == 6000)
    #expect(sample(text, "batchdl_exit_code", label) == 0)
    let success = try #require(sample(text, "batchdl_last_success_timestamp_seconds", label))
    #expect(success >= before.rounded(.down) && success <= Date().timeIntervalSince1970 + 1)
    #expect(sample(text, "batchdl_last_run_timestamp_seconds", label) == success)
    #expect(sample(text, "batchdl_run_duration_seconds", label).map { $0 >= 0 } == true)

    // A run with a failed task: exit 1, and the last success stays the first run's.
    fixture.server.route("/c.bin", .fixed(.init(status: 404, body: Array("gone".utf8))))
    try FileManager.default.removeItem(atPath: fixture.folder.path + "/side/c.bin")
    Thread.sleep(forTimeInterval: 0.01)
    let second = try fixture.run(["--metrics", "metrics/batchdl.prom"])
    #expect(second.status == 1, "\(second.stderr)")
    let after = fixture.folder.read("metrics/batchdl.prom") ?? ""
    #expect(try promtool(["check", "metrics"], input: after).status == 0)
    #expect(sample(after, "batchdl_exit_code", label) == 1)
    #expect(sample(after, "batchdl_tasks", "\(label),session=\"side\",outcome=\"failed\"") == 1)
    #expect(sample(after, "batchdl_last_success_timestamp_seconds", label) == success)
    #expect((sample(after, "batchdl_last_run_timestamp_seconds", label) ?? 0) > success)
    // Written whole, by rename: nothing else in the folder.
    let names = try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path + "/metrics")
    #expect(names == ["batchdl.prom"])
  }

  @Test func theDocumentedAlertRulesAreValid() throws {
    let rules = Self.root + "/docs/examples/batchdl-alerts.yml"
    let check = try promtool(["check", "rules", rules])
    #expect(check.status == 0, "\(check.output)")
    #expect(check.output.contains("3 rules found"), "\(check.output)")
  }

  /// The rules over time, with promtool's unit tests beside them: silent while nightly runs
  /// succeed, and firing 26 hours after the last success, the last run, or the last sample.
  @Test func theDocumentedAlertsFireWhenRunsStopSucceeding() throws {
    let tests = Self.root + "/docs/examples/batchdl-alerts.test.yml"
    let result = try promtool(["test", "rules", tests])
    #expect(result.status == 0, "\(result.output)")
    #expect(result.output.contains("SUCCESS"), "\(result.output)")
  }
}
