import BatchDLStore
import Testing

@testable import BatchDL
@testable import BatchDLPlan

/// `RunVerdict`: what a night means, decided once, crossed over everything that can spoil it (no
/// sockets): the exit status, whether the metrics' last success moves, and why.
@Suite struct RunVerdictTests {
  /// Every combination of the inputs, and the status each must give.
  @Test func theStatusIsDecidedOnceOverEveryInput() {
    var seen = 0
    for cancelled in [false, true] {
      for unrecorded in [nil, "disk full"] as [String?] {
        for failedTasks in [0, 1] {
          for documents in [[], ["the listing https://h/pub/: cannot fetch it"]] {
            for hooks in [[], [(session: "s", status: Int32(7))]] {
              for prunes in [[], ["s"]] {
                var verdict = RunVerdict()
                verdict.cancelled = cancelled
                verdict.unrecorded = unrecorded
                verdict.failedTasks = failedTasks
                verdict.failedDocuments = documents
                verdict.failedHooks = hooks
                verdict.refusedPrunes = prunes
                let expected: BatchDL.ExitStatus =
                  cancelled
                  ? .interrupted
                  : unrecorded != nil
                    ? .stateUnusable
                    : failedTasks > 0 || !documents.isEmpty || !hooks.isEmpty
                      ? .taskFailed : !prunes.isEmpty ? .pruneLimit : .success
                #expect(verdict.status == expected, "\(verdict)")
                #expect(verdict.isSuccess == (expected == .success))
                // A night that is not a success always says why.
                #expect(verdict.reasons.isEmpty == verdict.isSuccess, "\(verdict.reasons)")
                seen += 1
              }
            }
          }
        }
      }
    }
    #expect(seen == 64)
  }

  /// A document that upstream did not give fails the night although no task failed: the stored
  /// copy planned every task, and they all stayed unchanged.
  @Test func aStaleDocumentAloneFailsTheNight() {
    var verdict = RunVerdict()
    verdict.failedDocuments = ["the listing https://h/pub/: cannot fetch it (connect); the stored copy is used"]
    #expect(verdict.status == .taskFailed)
    #expect(verdict.reasons.contains { $0.contains("https://h/pub/") })
  }

  @Test func aFailedHookIsNamedWithItsStatus() {
    var verdict = RunVerdict()
    verdict.failedHooks = [("nightly", 7)]
    #expect(verdict.status == .taskFailed)
    #expect(verdict.reasons == ["on_finished of session nightly exited with status 7"])
  }
}

/// `ReportDiff`: a task the new run did not finish (`cancelled`) is a `not-run` regression, whatever
/// the old report said of it.
@Suite struct CancelledDiffTests {
  func report(_ outcomes: [String: TaskOutcome]) -> RunReport {
    var report = RunReport(manifest: "m.yaml")
    report.results = outcomes.keys.sorted().map { id in
      TaskResult(id: id, session: "s", kind: .download, url: "", to: nil, outcome: outcomes[id] ?? .failed)
    }
    return report
  }

  @Test func cancelledIsANotRunRegressionFromAnyOldOutcome() {
    let olds: [TaskOutcome?] = [nil, .completed, .unchanged, .failed, .deferred, .cancelled]
    for old in olds {
      for new in [TaskOutcome.completed, .unchanged, .failed, .deferred, .cancelled] {
        let before = report(old.map { ["t": $0] } ?? [:])
        let after = report(["t": new])
        let diff = ReportDiff(old: before, new: after)
        let regression = diff.regressions.first { $0.id == "t" }?.regression
        if new == .cancelled {
          #expect(regression == .notRun, "\(String(describing: old)) → cancelled")
        } else if new == .failed, old == nil || old == .completed || old == .unchanged {
          #expect(regression != nil, "\(String(describing: old)) → failed")
        } else {
          #expect(regression == nil, "\(String(describing: old)) → \(new)")
        }
        // Without the rule, a cancelled task is no regression of its own.
        let lenient = ReportDiff(old: before, new: after, rules: [.failure])
        if new == .cancelled { #expect(lenient.regressions.isEmpty) }
      }
    }
  }
}
