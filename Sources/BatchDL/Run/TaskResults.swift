import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
import Crypto
import Foundation

/// Each task's result: made from the plan, recorded in the report, the events, the progress display
/// and its session's summary; and results served from the HTTP cache.
extension RunBookkeeper {
  /// Completes a request's tasks from a cached response, without (or after a 304 to) a request.
  func serve(_ cached: CachedResponse, for request: PlannedRequest, source: String, attempts: Int = 0) {
    let sha256 = SHA256.hash(data: cached.body).hexString
    for task in plan.tasks(of: request) {
      var result = base(task)
      result.outcome = .completed
      result.status = cached.status
      result.size = Int64(cached.body.count)
      result.sha256 = sha256
      result.attempts = attempts
      result.source = source
      // A body stored before the manifest lowered max_size is held to it all the same.
      if let failure = tooLarge(task, size: Int64(cached.body.count), attempts: attempts) {
        record(failed(task, failure, status: cached.status))
        continue
      }
      if let destination = plan.destination(of: task) {
        do {
          let path = plan.absolute(destination)
          try placer.prepare(path, for: task)
          try AtomicFile.write(cached.body, to: path)
          emit(.finished(task: result.id, to: result.to ?? ""))
          recorder.placed(task, request: request, at: path)
        } catch {
          record(failed(task, TransferFailure(code: .write, message: "cannot write \(destination): \(error)")))
          continue
        }
      }
      record(result)
    }
  }

  /// Whether anything reads a task's result for its text (id, URL, destination): the event log, or
  /// the lines on the terminal (a quiet run only prints failures). The report makes them again from
  /// the plan.
  var describesTasks: Bool { eventLog != nil || !options.quiet }

  /// A task's result before its outcome is known; without `described`, its id, URL and `to` are
  /// left empty (see `describesTasks`): a run of 100,000 small files spends less that way.
  func base(_ task: PlannedTask, described: Bool = true) -> TaskResult {
    var result = TaskResult(
      id: described ? id(task) : "", session: plan.manifest.sessions[Int(task.session)].name, kind: task.kind,
      url: described ? redactor.url(plan.url(of: task)) : "",
      to: described ? plan.destination(of: task).map { redactor.text($0) } : nil,
      outcome: .failed, seconds: jobTimes?.ended ?? offset(Engine.now()), task: task)
    result.started = jobTimes?.started
    if task.request >= 0, plan.unverifiedRequests.contains(task.request) { result.verified = false }
    return result
  }

  /// Seconds from the start of the run to `time` (`Engine.now()`).
  func offset(_ time: UInt64) -> Double { Double(time > start ? time - start : 0) / 1000 }

  func offset(_ time: UInt64?) -> Double? { time.map { offset($0) } }

  func failed(_ task: PlannedTask, _ failure: TransferFailure, status: Int? = nil) -> TaskResult {
    var result = base(task)
    result.outcome = .failed
    result.attempts = failure.attempts
    result.status = failure.status ?? status
    result.error = (failure.code.rawValue, redactor.text(failure.message))
    result.sourceErrors = failure.sources.map {
      SourceFailure(url: redactor.url($0.url), code: $0.code, message: redactor.text($0.message))
    }
    return result
  }

  func record(_ result: TaskResult) {
    results.append(result)
    if result.outcome == .failed || result.outcome == .cancelled, let task = result.task, task.request >= 0 {
      failedRequests.insert(task.request)
    }
    emit(.completed(result))
    display.taskEnded(result)
    guard
      let sessionIndex = result.task.map({ Int($0.session) })
        ?? plan.manifest.sessions.firstIndex(where: { $0.name == result.session })
    else { return }
    summaries[sessionIndex, default: RunSummary()].add(result)
    pendingPerSession[sessionIndex, default: 1] -= 1
    if pendingPerSession[sessionIndex] == 0 {
      summaries[sessionIndex, default: RunSummary()].requests = requestsPerSession[sessionIndex] ?? 0
      emit(.sessionFinished(session: result.session, summary: summaries[sessionIndex] ?? RunSummary()))
    }
  }
}
