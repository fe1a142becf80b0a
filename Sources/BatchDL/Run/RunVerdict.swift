/// What a night means, decided once: a run is a success only when every document it needed was
/// read fresh, every task it ran ended well (a file placed was checked, a task unchanged stayed so)
/// and every `on_finished` command succeeded. The exit code, the metrics' `batchdl_exit_code` and
/// last-success time, a background worker's status and `wait`'s message all come from this one
/// value.
struct RunVerdict: Equatable, Sendable {
  /// A signal stopped the run (exit 3).
  var cancelled = false
  /// Tasks that failed (the one task a document that failed stands as included).
  var failedTasks = 0
  /// Documents fetched before planning that failed, masked, each with why (upstream did not give
  /// it, and its stored copy was used; or it cannot be read): each also fails tasks.
  var failedDocuments: [String] = []
  /// Sessions whose `on_finished` command failed, with its exit status.
  var failedHooks: [(session: String, status: Int32)] = []
  /// Sessions whose prune its `max_delete` refused.
  var refusedPrunes: [String] = []
  /// Results the state folder could not record (its disk is full): the run's work is done, but
  /// the next run cannot know it (exit 5).
  var unrecorded: String?

  /// The exit status: interrupted (3) before a state folder that cannot record (5), before
  /// failures (1), before a refused prune (6).
  var status: ExitStatus {
    if cancelled { return .interrupted }
    if unrecorded != nil { return .stateUnusable }
    if failedTasks > 0 || !failedDocuments.isEmpty || !failedHooks.isEmpty { return .taskFailed }
    if !refusedPrunes.isEmpty { return .pruneLimit }
    return .success
  }

  var isSuccess: Bool { status == .success }

  /// Why the run is not a success, one line each (empty for a success): what `wait` prints for a
  /// background session's worker.
  var reasons: [String] {
    var lines: [String] = []
    if cancelled { lines.append("the run was interrupted") }
    if let unrecorded { lines.append("the state folder cannot record results: \(unrecorded)") }
    lines.append(contentsOf: failedDocuments)
    if failedTasks > 0 { lines.append("\(failedTasks) task\(failedTasks == 1 ? "" : "s") failed") }
    for hook in failedHooks {
      lines.append("on_finished of session \(hook.session) exited with status \(hook.status)")
    }
    for session in refusedPrunes {
      lines.append("the prune of session \(session) was refused: it would delete more than prune.max_delete allows")
    }
    return lines
  }

  static func == (a: RunVerdict, b: RunVerdict) -> Bool {
    a.cancelled == b.cancelled && a.failedTasks == b.failedTasks && a.failedDocuments == b.failedDocuments
      && a.failedHooks.map(\.session) == b.failedHooks.map(\.session)
      && a.failedHooks.map(\.status) == b.failedHooks.map(\.status) && a.refusedPrunes == b.refusedPrunes
      && a.unrecorded == b.unrecorded
  }
}
