import BatchDLPlan
import BatchDLStore
import BatchDLTransfer

/// A run's task results, kept for the report: a fixed row per task and the text of digests and
/// error messages in one arena. A task's id, session, kind, URL and destination are the plan's
/// and are made again when the report is written, so a row holds about 200 bytes where a
/// `TaskResult` held 500 with its strings (a million-task run keeps a million of them).
struct ResultTable {
  private struct Row {
    var task: PlannedTask
    var outcome: TaskOutcome
    /// Short codes (`network`, `http-404`): Swift keeps them inline, without a heap object.
    var source: String?
    var errorCode: String?
    var errorMessage: TextRef
    var sha256: TextRef
    /// `Int32.min`: none.
    var status: Int32
    var attempts: Int32
    /// `Int64.min`: none.
    var size: Int64
    var resumedFrom: Int64
    var transferred: Int64
    /// NaN: none.
    var seconds: Double
    var started: Double
    /// `HTTP/2`, `HTTP/1.1`: short enough for Swift to keep inline.
    var httpVersion: String?
    /// Sources of a download with mirrors (rare: nil for all others).
    var sources: Sources?
  }

  /// What a download with mirrors adds to its result.
  private final class Sources {
    let used: [SourceBytes]
    let errors: [SourceFailure]

    init(used: [SourceBytes], errors: [SourceFailure]) {
      self.used = used
      self.errors = errors
    }
  }

  private var rows: [Row] = []
  private var text = TextArena()
  /// The counts of the summary, kept as rows come (its `requests` is the run's to set).
  private(set) var summary = RunSummary()

  var count: Int { rows.count }

  mutating func reserve(_ count: Int) { rows.reserveCapacity(count) }

  /// Keeps `result`, which must carry its plan task.
  mutating func append(_ result: TaskResult) {
    guard let task = result.task else { return }
    summary.add(result)
    rows.append(
      Row(
        task: task, outcome: result.outcome, source: result.source, errorCode: result.error?.code,
        errorMessage: result.error.map { text.append($0.message) } ?? .none,
        sha256: result.sha256.map { text.append($0) } ?? .none,
        status: result.status.flatMap { Int32(exactly: $0) } ?? .min, attempts: Int32(clamping: result.attempts),
        size: result.size ?? .min, resumedFrom: result.resumedFrom, transferred: result.transferred,
        seconds: result.seconds ?? .nan, started: result.started ?? .nan, httpVersion: result.httpVersion,
        sources: result.sources.isEmpty && result.sourceErrors.isEmpty
          ? nil : Sources(used: result.sources, errors: result.sourceErrors)))
  }

  /// The row's result made whole: `base` gives the plan's part (id, session, kind, URL, `to`).
  private func result(_ row: Row, base: (PlannedTask) -> TaskResult) -> TaskResult {
    var result = base(row.task)
    result.outcome = row.outcome
    result.source = row.source
    if let code = row.errorCode { result.error = (code, text.string(row.errorMessage)) }
    result.sha256 = text.optionalString(row.sha256)
    result.status = row.status == .min ? nil : Int(row.status)
    result.attempts = Int(row.attempts)
    result.size = row.size == .min ? nil : row.size
    result.resumedFrom = row.resumedFrom
    result.transferred = row.transferred
    result.seconds = row.seconds.isNaN ? nil : row.seconds
    result.started = row.started.isNaN ? nil : row.started
    result.httpVersion = row.httpVersion
    result.sources = row.sources?.used ?? []
    result.sourceErrors = row.sources?.errors ?? []
    return result
  }

  /// The results sorted by id (as `RunReport` sorts them), made whole one at a time as the
  /// sequence is read; `session` keeps one session's (by index).
  func sorted(
    by id: (PlannedTask) -> String, session: Int32? = nil, base: @escaping (PlannedTask) -> TaskResult
  ) -> LazyMapSequence<[Int], TaskResult> {
    var order: [(id: String, row: Int)] = []
    order.reserveCapacity(rows.count)
    for (index, row) in rows.enumerated() where session == nil || row.task.session == session {
      order.append((id(row.task), index))
    }
    order.sort { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
    return order.map(\.row).lazy.map { [rows] in result(rows[$0], base: base) }
  }
}
