import Foundation
import TestSupport
import Testing

/// The nightly job around the run, end to end with the built binary: a one-night override of the
/// prune guard (`run --max-delete`), deletions and refusals in a quiet run's mail, the report
/// history a nightly job diffs (`report diff MANIFEST`, `report show MANIFEST`), and the words an
/// operator reads.
@Suite struct NightlyOperationsTests {
  static func command(_ fixture: RunFixture, _ arguments: [String]) throws -> BinaryRunner.Outcome {
    try BinaryRunner.run(arguments, in: fixture.folder.path)
  }

  static func exists(_ fixture: RunFixture, _ name: String) -> Bool { PruneTests.exists(fixture, name) }

  // MARK: - run --max-delete

  @Test func maxDeleteLetsOneRunDeleteWhatTheGuardRefused() throws {
    let fixture = try PruneTests.fixture(["a", "b", "c", "d", "e", "f", "g", "h"], prune: "{max_delete: 1}")
    #expect(try fixture.run().status == 0)
    // Upstream cleaned up: seven files went away, more than max_delete allows.
    PruneTests.list(fixture, ["a"])
    let refused = try fixture.run(["--quiet"])
    #expect(refused.status == 6, "\(refused.stderr)")
    // The message names the pending deletions (the first few) and how to accept them once.
    #expect(refused.stderr.contains("would delete 7 of the 8 files"), "\(refused.stderr)")
    #expect(refused.stderr.contains("m/b, m/c, m/d, m/e, m/f and 2 more"), "\(refused.stderr)")
    #expect(refused.stderr.contains("--max-delete 7"), "\(refused.stderr)")
    #expect(Self.exists(fixture, "m/h"))
    // plan lists every file the run would delete, and with --max-delete, what that run would do.
    let plan = try Self.command(fixture, ["plan", "manifest.yaml"])
    #expect(plan.stdout.contains("would delete, but for the above, m/h"), "\(plan.stdout)")
    #expect(plan.stdout.contains("--max-delete 7"), "\(plan.stdout)")
    let accepted = try Self.command(fixture, ["plan", "manifest.yaml", "--max-delete", "7"])
    #expect(accepted.stdout.contains("prune session mirror (--max-delete 7): the run would delete 7 files"))
    #expect(accepted.stdout.contains("    delete m/h"), "\(accepted.stdout)")
    // The override, for this run only; the diff against the refused night says what went.
    try FileManager.default.copyItem(
      atPath: fixture.folder.path + "/report.json", toPath: fixture.folder.path + "/refused.json")
    let once = try fixture.run(["--max-delete", "7"])
    #expect(once.status == 0, "\(once.stderr)")
    let diff = try Self.command(fixture, ["report", "diff", "refused.json", "report.json"])
    #expect(diff.status == 0, "\(diff.stdout)")
    #expect(diff.stdout.contains("- m/h: pruned"), "\(diff.stdout)")
    #expect(!Self.exists(fixture, "m/b") && !Self.exists(fixture, "m/h"))
    #expect(fixture.folder.read("m/a") == "a\n")
    // The next night, the manifest's limit holds again.
    PruneTests.list(fixture, ["b", "c", "d"])
    #expect(try fixture.run().status == 0)
    PruneTests.list(fixture, ["b"])
    #expect(try fixture.run().status == 6)
    #expect(Self.exists(fixture, "m/c") && Self.exists(fixture, "m/d"))
    // A share works too; a limit that is neither is a usage error before anything is sent.
    #expect(try fixture.run(["--max-delete", "75%"]).status == 0)
    #expect(!Self.exists(fixture, "m/c"))
    let bad = try fixture.run(["--max-delete", "lots"])
    #expect(bad.status == 2)
    #expect(bad.stderr.contains("--max-delete must be a count of files (50) or a share"), "\(bad.stderr)")
  }

  // MARK: - The quiet mail, and report diff after a prune

  @Test func aQuietRunPrintsWhatItDeletedAndARefusedPrune() throws {
    let fixture = try PruneTests.fixture(["a", "b", "c", "d", "e", "f", "g", "h", "i"], prune: "{max_delete: 8}")
    #expect(try fixture.run().status == 0)
    try FileManager.default.copyItem(
      atPath: fixture.folder.path + "/report.json", toPath: fixture.folder.path + "/night1.json")
    PruneTests.list(fixture, ["a", "b"])
    let night = try fixture.run(["--quiet"])
    #expect(night.status == 0, "\(night.stderr)")
    // Off a terminal, --quiet still says what was deleted: a count and the first names.
    #expect(
      night.stdout.contains(
        "session mirror: pruned 7 files no task names any more: m/c, m/d, m/e, m/f, m/g and 2 more"),
      "\(night.stdout)")
    // report diff says pruned, not removed.
    let diff = try Self.command(fixture, ["report", "diff", "night1.json", "report.json"])
    #expect(diff.status == 0, "\(diff.stdout)")
    #expect(diff.stdout.contains("- m/c: pruned"), "\(diff.stdout)")
    #expect(!diff.stdout.contains("removed (was"), "\(diff.stdout)")
    #expect(!diff.stdout.contains("missing from the new one"), "\(diff.stdout)")
    // A refused prune: printed with --quiet, and the diff says nothing of the files it left.
    try FileManager.default.copyItem(
      atPath: fixture.folder.path + "/report.json", toPath: fixture.folder.path + "/night2.json")
    PruneTests.manifest(fixture, prune: "{max_delete: 0}")
    PruneTests.list(fixture, ["a"])
    let refused = try fixture.run(["--quiet"])
    #expect(refused.status == 6)
    #expect(refused.stderr.contains("error: prune of session mirror would delete 1 of the 2 files"))
    #expect(refused.stderr.contains(": m/b; nothing was deleted"), "\(refused.stderr)")
    #expect(Self.exists(fixture, "m/b"))
    let after = try Self.command(fixture, ["report", "diff", "night2.json", "report.json"])
    #expect(after.status == 1, "\(after.stdout)")
    #expect(after.stdout.contains("(prune mirror): prune refused (prune-limit)"), "\(after.stdout)")
    #expect(!after.stdout.contains("m/b:"), "\(after.stdout)")
  }

  // MARK: - Report history

  @Test func everyRunKeepsItsReportAndDiffComparesTheLastTwo() throws {
    let fixture = try PruneTests.fixture(["a", "b", "c"])
    let manifest = try #require(fixture.folder.read("manifest.yaml"))
    fixture.folder.write(
      "manifest.yaml", manifest.replacingOccurrences(of: "version: 1\n", with: "version: 1\nreport_history: 3\n"))
    // No run yet: the commands say so.
    let none = try Self.command(fixture, ["report", "diff", "manifest.yaml"])
    #expect(none.status == 2)
    #expect(none.stderr.contains("no run is kept yet"), "\(none.stderr)")
    // Without --report: the state folder keeps each run's report all the same.
    for _ in 0..<3 {
      let run = try BinaryRunner.run(["run", "manifest.yaml", "--quiet"], in: fixture.folder.path)
      #expect(run.status == 0, "\(run.stderr)")
    }
    var diff = try Self.command(fixture, ["report", "diff", "manifest.yaml"])
    #expect(diff.status == 0, "\(diff.stderr)")
    #expect(diff.stdout.contains("comparing the last two runs of manifest.yaml"), "\(diff.stdout)")
    #expect(diff.stdout.contains("no changes"), "\(diff.stdout)")
    // Upstream drops c and b fails: the diff of the last two nights says so, and fails.
    PruneTests.list(fixture, ["a", "b"])
    fixture.server.route("/f/b", .status(500))
    #expect(try fixture.run(["--quiet", "--refresh"]).status == 1)
    diff = try Self.command(fixture, ["report", "diff", "manifest.yaml"])
    #expect(diff.status == 1, "\(diff.stdout)\(diff.stderr)")
    #expect(diff.stdout.contains("m/b: unchanged → failed"), "\(diff.stdout)")
    #expect(diff.stdout.contains("m/c: removed"), "\(diff.stdout)")
    // report show prints one run's report: the last by default, --run -N counting back.
    let last = try Self.command(fixture, ["report", "show", "manifest.yaml"])
    #expect(last.status == 0)
    #expect(last.stdout == fixture.folder.read("report.json"), "\(last.stdout)")
    let before = try Self.command(fixture, ["report", "show", "manifest.yaml", "--run", "-3"])
    #expect(before.status == 0, "\(before.stderr)")
    #expect(before.stdout.contains("\"format\": \"batchdl-report/1\""), "\(before.stdout)")
    // Three are kept (report_history: 3), the oldest removed.
    let runs = try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path + "/.batchdl/runs")
    let kept = try FileManager.default.contentsOfDirectory(
      atPath: fixture.folder.path + "/.batchdl/runs/" + (try #require(runs.first)))
    #expect(kept.sorted() == ["run-000002.json", "run-000003.json", "run-000004.json"], "\(kept)")
    let gone = try Self.command(fixture, ["report", "show", "manifest.yaml", "--run", "-4"])
    #expect(gone.status == 2)
    #expect(gone.stderr.contains("there is no run -4: 3 runs are kept"), "\(gone.stderr)")
  }

  // MARK: - Words for operators

  @Test func reportDiffOfAMissingFileSaysWhy() throws {
    let fixture = try RunFixture()
    fixture.folder.write("old.json", "{}")
    let diff = try Self.command(fixture, ["report", "diff", "missing.json", "old.json"])
    #expect(diff.status == 2)
    #expect(diff.stderr.contains("missing.json: cannot read the report: No such file or directory"), "\(diff.stderr)")
  }
}
