import BatchDLManifest
import BatchDLSupport
import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLStore

/// The deciding values of the nightly job's operations, without sockets: `--max-delete` read as
/// `prune.max_delete` is, the names a message shows, what `report diff` says of a file prune
/// deleted or left, which report of the history a run offset picks, and the words of exit 4.
@Suite struct NightlyOperationsUnitTests {
  @Test func aMaxDeleteIsACountOrAShare() {
    let cases: [(String, PruneLimit?)] = [
      ("0", .count(0)), ("50", .count(50)), (" 7 ", .count(7)), ("10%", .percent(10)), ("2.5%", .percent(2.5)),
      ("100%", .percent(100)), ("0%", .percent(0)),
      ("", nil), ("lots", nil), ("-1", nil), ("+3", nil), ("101%", nil), ("-5%", nil), ("%", nil), ("1e3", nil),
      ("nan%", nil), ("1000001", nil), ("0x10", nil),
    ]
    for (text, expected) in cases {
      let parsed = try? PruneLimit.parse(text, what: "--max-delete").get()
      #expect(parsed == expected, "'\(text)'")
    }
    if case .failure(let problem) = PruneLimit.parse("lots", what: "--max-delete") {
      #expect(problem.message.hasPrefix("--max-delete must be a count of files (50) or a share"))
    } else {
      Issue.record("'lots' is not a limit")
    }
  }

  @Test func messagesShowTheFirstFiveNamesAndHowManyMore() {
    #expect(PrunePlan.firstNames([]) == "")
    #expect(PrunePlan.firstNames(["a"]) == "a")
    #expect(PrunePlan.firstNames(["a", "b", "c", "d", "e"]) == "a, b, c, d, e")
    #expect(PrunePlan.firstNames(["a", "b", "c", "d", "e", "f"]) == "a, b, c, d, e and 1 more")
    #expect(PrunePlan.firstNames((0..<100).map { "f\($0)" }, shown: 2) == "f0, f1 and 98 more")
  }

  func report(_ tasks: [(id: String, to: String, outcome: TaskOutcome)], prune: [PruneOutcome] = []) -> RunReport {
    var report = RunReport(manifest: "m.yaml")
    report.results = tasks.map {
      TaskResult(id: $0.id, session: "s", kind: .download, url: "", to: $0.to, outcome: $0.outcome)
    }
    report.prune = prune
    return report
  }

  @Test func aFilePruneDeletedIsPrunedAndOneItRefusedToDeleteIsNotSaid() {
    let old = report([("s/a", "m/a", .unchanged), ("s/b", "m/b", .completed), ("s/c", "m/c", .unchanged)])
    var pruned = PruneOutcome(session: "s", outcome: .pruned)
    pruned.deleted = ["m/b"]
    // b's file was deleted by prune, c's just left the manifest (its file was never recorded).
    let diff = ReportDiff(old: old, new: report([("s/a", "m/a", .unchanged)], prune: [pruned]))
    #expect(diff.changes.map(\.id) == ["s/b", "s/c"])
    #expect(diff.changes.map(\.kinds) == [["pruned"], ["removed"]])
    #expect(diff.text.contains("- s/b: pruned (no task names it any more: prune deleted its file)"))
    #expect(diff.text.contains("- s/c: removed (was unchanged)"))
    #expect(diff.regressions.isEmpty)
    #expect(ReportDiff(old: old, new: diff.new, rules: [.removed]).regressions.count == 2)
    // Names are bytes: a deleted `café` in NFD does not make the NFC task pruned.
    let nfc = report([("s/x", "m/caf\u{E9}", .completed)])
    var nfd = PruneOutcome(session: "s", outcome: .pruned)
    nfd.deleted = ["m/cafe\u{301}"]
    #expect(ReportDiff(old: nfc, new: report([], prune: [nfd])).changes.first?.kinds == ["removed"])
    // A refused prune left b and c: no line of theirs, the prune-limit line alone.
    var refused = PruneOutcome(session: "s", outcome: .refused)
    refused.reason = "prune of session s would delete 2 ..."
    refused.wouldDelete = 2
    refused.pending = ["m/b", "m/c"]
    let left = ReportDiff(old: old, new: report([("s/a", "m/a", .unchanged)], prune: [refused]))
    #expect(left.changes.map(\.id) == ["(prune s)"])
    #expect(left.regressions.map(\.regression) == [.pruneLimit])
    // The next night's run (`--max-delete 2`) deletes them: pruned, by path, though their tasks
    // were gone from the night before's report already.
    var accepted = PruneOutcome(session: "s", outcome: .pruned)
    accepted.deleted = ["m/b", "m/c"]
    let next = ReportDiff(old: left.new, new: report([("s/a", "m/a", .unchanged)], prune: [accepted]))
    #expect(next.changes.map(\.id) == ["m/b", "m/c"])
    #expect(next.changes.map(\.kinds) == [["pruned"], ["pruned"]])
    #expect(next.text.contains("- m/b: pruned (no task names it any more: prune deleted its file)"))
    #expect(next.regressions.isEmpty)
  }

  @Test func aRefusedPruneKeepsItsPendingFilesInTheReport() throws {
    var refused = PruneOutcome(session: "s", outcome: .refused)
    refused.wouldDelete = 2
    refused.pending = ["m/b", "m/c"]
    var report = RunReport(manifest: "m.yaml")
    report.prune = [refused]
    let folder = TemporaryDirectory()
    let path = folder.write("r.json", report.json(timings: false))
    let read = try RunReport.read(path: path)
    #expect(read.prune.first?.pending == ["m/b", "m/c"])
    #expect(read.prune.first?.wouldDelete == 2)
  }

  @Test func theHistoryKeepsTheLastRunsAndCountsBack() throws {
    let folder = TemporaryDirectory()
    let history = RunHistory(folder: folder.path + "/runs/m.yaml-1234")
    #expect(history.entries().isEmpty)
    #expect(history.entry(run: -1) == nil)
    for night in 1...5 { try history.add(keep: 3) { $0.write("night \(night)") } }
    #expect(history.entries().map(\.number) == [3, 4, 5])
    #expect(history.entry(run: -1).flatMap { try? String(contentsOfFile: $0.path, encoding: .utf8) } == "night 5")
    #expect(history.entry(run: -3)?.number == 3)
    #expect(history.entry(run: -4) == nil)
    #expect(history.entry(run: 0) == nil)
    #expect(history.entry(run: 1) == nil)
    #expect(history.summary.hasPrefix("3 runs are kept in "))
    #expect(history.summary.hasSuffix("(run-000003.json to run-000005.json)"))
    // Files that are not reports are left alone and not counted; a smaller history trims.
    folder.write("runs/m.yaml-1234/notes.txt", "mine")
    folder.write("runs/m.yaml-1234/run-x.json", "mine")
    try history.add(keep: 2) { $0.write("night 6") }
    #expect(history.entries().map(\.number) == [5, 6])
    #expect(folder.exists("runs/m.yaml-1234/notes.txt"))
    // 0 keeps none.
    #expect(try history.add(keep: 0) { $0.write("night 7") } == nil)
    #expect(history.entries().isEmpty)
    #expect(RunHistory.number(in: "run-000012.json") == 12)
    #expect(RunHistory.number(in: "run-.json") == nil)
    #expect(RunHistory.number(in: "run-12.json.batchdl-part") == nil)
  }

  @Test func exit4SaysWhoHoldsTheLockSinceWhenAndNeverAnotherState() {
    let since = Date(timeIntervalSince1970: 1_800_000_000)
    let held = StateLock.Held(
      folder: "/srv/mirror/.batchdl", pid: 4242, since: since, command: "batchdl run mirror.yaml --quiet")
    let text = held.runDescription
    #expect(text.hasPrefix("batchdl run mirror.yaml --quiet (pid 4242), since "))
    #expect(text.contains(StateLock.localTime(since)))
    #expect(text.contains("holds the lock of the state folder /srv/mirror/.batchdl"))
    #expect(text.contains("the next timer or cron run will pick up"))
    #expect(!text.contains("--state"))
    #expect(!held.description.contains("--state"))
    #expect(StateLock.Held(folder: "/x", pid: nil).holder == "another batchdl run")
    let now = Date(timeIntervalSince1970: 1_000_000)
    let ages: [(Double, String)] = [
      (0, "0 s"), (59, "59 s"), (60, "1 min"), (3599, "59 min"), (3600, "1 h 0 min"), (3 * 3600 + 120, "3 h 2 min"),
      (86_400, "1 day"), (3 * 86_400 + 5, "3 days"), (-30, "0 s"),
    ]
    for (seconds, expected) in ages {
      #expect(StateLock.age(now.addingTimeInterval(-seconds), now: now) == expected, "\(seconds)")
    }
    // The holder's command line, as the system shows it: this test's own process.
    #expect(StateLock.commandLine(of: getpid())?.isEmpty == false)
    #expect(StateLock.commandLine(of: Int32.max) == nil)
  }

  @Test func reportHistoryIsATopLevelKey() throws {
    func manifest(_ top: String) -> (Manifest?, [Diagnostic]) {
      ManifestLoader.read(
        Array("version: 1\n\(top)sessions:\n  s:\n    tasks:\n      - download: https://example.org/a\n".utf8),
        path: "m.yaml", environment: [:])
    }
    #expect(manifest("").0?.reportHistory == 10)
    #expect(manifest("report_history: 30\n").0?.reportHistory == 30)
    #expect(manifest("report_history: 0\n").0?.reportHistory == 0)
    for bad in ["report_history: -1\n", "report_history: lots\n", "report_history: 10001\n"] {
      let errors = manifest(bad).1.filter { $0.severity == .error }
      #expect(errors.first?.message.hasPrefix("report_history must be") == true, "\(bad): \(errors)")
      #expect(errors.first?.mark.line == 2, "\(bad)")
    }
  }
}
