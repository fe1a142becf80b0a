import Foundation
import TestServer
import TestSupport
import Testing

/// Report diffs for CI, shard runs and merged reports.
@Suite struct WorkflowTests {
  static let manifest = """
    version: 1
    sessions:
      main:
        dest: out/
        tasks:
          - download: BASE/a
          - download: BASE/b
          - download: BASE/c
    """

  @Test func aReportDiffedWithItselfHasNoRegression() throws {
    let fixture = try RunFixture()
    for name in ["a", "b", "c"] { fixture.server.route("/\(name)", .text("\(name)\n")) }
    fixture.manifest(Self.manifest)
    #expect(try fixture.run().status == 0)
    let diff = try BinaryRunner.run(["report", "diff", "report.json", "report.json"], in: fixture.folder.path)
    #expect(diff.status == 0, "\(diff.stdout)\(diff.stderr)")
    #expect(diff.stdout.contains("no changes"))
    #expect(diff.stdout.contains("regressions: 0"))
  }

  @Test func aNewFailureIsARegressionNamingTheTask() throws {
    let fixture = try RunFixture()
    for name in ["a", "b", "c"] { fixture.server.route("/\(name)", .text("\(name)\n")) }
    fixture.manifest(Self.manifest)
    #expect(try fixture.run(["--state", "s1"]).status == 0)
    try FileManager.default.moveItem(
      atPath: fixture.folder.path + "/report.json", toPath: fixture.folder.path + "/old.json")
    fixture.server.route("/b", .fixed(.text(404, "gone")))
    fixture.server.route("/c", .text("c, longer now\n"))
    #expect(try fixture.run(["--state", "s2"]).status == 1)
    let diff = try BinaryRunner.run(["report", "diff", "old.json", "report.json"], in: fixture.folder.path)
    #expect(diff.status == 1)
    #expect(diff.stdout.contains("! out/b: completed → failed (http-404: HTTP 404 Not Found)  [regression: failure]"))
    // An updated file is a change, not a regression, unless asked.
    #expect(diff.stdout.contains("~ out/c: sha256 "), "\(diff.stdout)")
    #expect(diff.stdout.contains("size 2 → 14"))
    #expect(diff.stdout.contains("regressions: 1"))
    let strict = try BinaryRunner.run(
      ["report", "diff", "old.json", "report.json", "--fail-on", "default,checksum"], in: fixture.folder.path)
    #expect(strict.stdout.contains("regressions: 2"), "\(strict.stdout)")
    let json = try BinaryRunner.run(
      ["report", "diff", "old.json", "report.json", "--json", "--fail-on", "checksum"], in: fixture.folder.path)
    #expect(json.status == 1)
    let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
    #expect(object?["regressions"] as? Int == 1)
    let relaxed = try BinaryRunner.run(
      ["report", "diff", "old.json", "report.json", "--fail-on", "none"], in: fixture.folder.path)
    #expect(relaxed.status == 0)
    let bad = try BinaryRunner.run(["report", "diff", "old.json", "manifest.yaml"], in: fixture.folder.path)
    #expect(bad.status == 2)
  }

  @Test func threeShardsFetchEveryRequestOnceAndMergeIntoTheUnshardedReport() throws {
    let fixture = try RunFixture()
    let names = (0..<30).map { "f\($0)" }
    for name in names { fixture.server.route("/\(name)", .text("\(name)\n")) }
    let tasks = names.map { "          - download: BASE/\($0)" }.joined(separator: "\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          dest: out/
          tasks:
      \(tasks)
      """)
    for index in 0..<3 {
      let result = try fixture.run(["--shard", "\(index)/3", "--report", "report-{shard}.json"])
      #expect(result.status == 0, "\(result.stderr)")
    }
    let paths = fixture.server.requests.map(\.path)
    #expect(paths.count == 30)
    #expect(Set(paths).count == 30)
    #expect(fixture.folder.exists(".batchdl/shard-0-of-3/state.sqlite"))
    let merge = try BinaryRunner.run(
      ["report", "merge", "report-0.json", "report-1.json", "report-2.json", "-o", "merged.json"],
      in: fixture.folder.path)
    #expect(merge.status == 0, "\(merge.stderr)")
    // An unsharded run of the same manifest, from scratch, writes the same report.
    fixture.server.clearLog()
    try FileManager.default.removeItem(atPath: fixture.folder.path + "/out")
    #expect(try fixture.run(["--state", "fresh"]).status == 0)
    #expect(fixture.folder.read("merged.json") == fixture.folder.read("report.json"))
    // Shards of different manifests do not merge.
    fixture.folder.write(
      "other.json",
      (fixture.folder.read("report-0.json") ?? "").replacingOccurrences(of: "manifest.yaml", with: "other.yaml"))
    let refused = try BinaryRunner.run(
      ["report", "merge", "report-1.json", "other.json", "-o", "x.json"], in: fixture.folder.path)
    #expect(refused.status == 2)
    #expect(refused.stderr.contains("only shards of one manifest merge"))
  }

  @Test func shardAutoReadsKubernetesAndSlurmIndices() throws {
    let fixture = try RunFixture()
    let names = (0..<12).map { "f\($0)" }
    for name in names { fixture.server.route("/\(name)", .text("\(name)\n")) }
    let tasks = names.map { "          - download: BASE/\($0)" }.joined(separator: "\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
      \(tasks)
      """)
    for index in 0..<2 {
      let result = try fixture.run(
        ["--shard", "auto", "--shards", "2"], environment: ["JOB_COMPLETION_INDEX": "\(index)"])
      #expect(result.status == 0, "\(result.stderr)")
    }
    #expect(Set(fixture.server.requests.map(\.path)).count == 12)
    #expect(fixture.server.requests.count == 12)
    fixture.server.clearLog()
    for id in 1...3 {
      let result = try fixture.run(
        ["--shard", "auto", "--state", "slurm"],
        environment: ["SLURM_ARRAY_TASK_ID": "\(id)", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "3"])
      #expect(result.status == 0, "\(result.stderr)")
    }
    #expect(fixture.folder.exists("slurm/shard-2-of-3"))
    let missing = try fixture.run(["--shard", "auto"])
    #expect(missing.status == 2)
    #expect(missing.stderr.contains("JOB_COMPLETION_INDEX"))
  }

  @Test func reportCommandsThatCannotWriteTheirOutputSayWhyAndExit2() throws {
    let folder = TemporaryDirectory()
    folder.write(
      "report.json",
      #"{"format": "batchdl-report/1", "manifest": "m.yaml", "summary": {"requests": 0}, "tasks": []}"#)
    folder.write("blocked", "a file where a folder should be")
    for command in [["merge", "report.json"], ["html", "report.json"]] {
      let result = try BinaryRunner.run(["report"] + command + ["-o", "blocked/out"], in: folder.path)
      #expect(result.status == 2, "\(command): \(result.stderr)")
      #expect(result.stderr.hasPrefix("batchdl: cannot write blocked/out: "), "\(command): \(result.stderr)")
    }
  }
}
