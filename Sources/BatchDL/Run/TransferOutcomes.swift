import BatchDLPlan
import BatchDLSupport
import BatchDLTransfer
import Foundation

/// The engine's calls: what each says about the run's tasks (events, progress, results, checkpoints).
extension RunBookkeeper {
  /// The event is only made when there is an event log.
  func emit(_ event: @autoclosure () -> RunEvent) {
    eventLog?.record(event())
  }

  func id(_ task: PlannedTask) -> String { redactor.text(plan.id(of: task)) }

  func request(ofJob job: Int) -> PlannedRequest { plan.requests[Int(jobRequests[job])] }

  public func transferReceivedResponse(_ job: Int, head: ResponseHead) {
    let resumedFrom = head.status == 206 ? ContentRange(head["content-range"] ?? "")?.start : nil
    for task in plan.tasks(of: request(ofJob: job)) {
      emit(
        .response(
          task: id(task), status: head.status, contentType: head["content-type"], contentLength: head.contentLength,
          proto: head.version))
      if let resumedFrom { emit(.resumed(task: id(task), offset: resumedFrom)) }
    }
  }

  /// Response heads only make events.
  public var wantsResponses: Bool { eventLog != nil }

  public func transferBecameDownload(_ job: Int) {
    for task in plan.tasks(of: request(ofJob: job)) where plan.becomeDownload(of: task) != nil {
      emit(.becameDownload(task: id(task), to: redactor.text(plan.destination(of: task) ?? "")))
    }
  }

  public func transferSourceFailed(_ job: Int, url: String, failure: TransferFailure) {
    let tasks = plan.tasks(of: request(ofJob: job))
    let url = redactor.url(url)
    let message = redactor.text(failure.message)
    for task in tasks {
      emit(.sourceFailed(task: id(task), url: url, code: failure.code.rawValue, message: message))
    }
    display.note("source \(url) of \(id(tasks.firstTask)) set aside: \(failure.code): \(message)")
  }

  public func transferSegmentStarted(_ job: Int, start: Int64, length: Int64, url: String) {
    let url = redactor.url(url)
    for task in plan.tasks(of: request(ofJob: job)) {
      emit(.segment(task: id(task), start: start, length: length, url: url))
    }
  }

  public func transferPiecesFailed(_ job: Int, pieces: [Int], urls: [String], message: String) {
    let tasks = plan.tasks(of: request(ofJob: job))
    let urls = urls.map(redactor.url)
    let message = redactor.text(message)
    for task in tasks {
      emit(.piecesFailed(task: id(task), pieces: pieces, urls: urls, message: message))
    }
    display.note("\(id(tasks.firstTask)): \(message); fetching them again")
  }

  public func transferWillRetry(_ job: Int, after delay: Interval, failure: TransferFailure) {
    let tasks = plan.tasks(of: request(ofJob: job))
    for task in tasks {
      emit(
        .retrying(
          task: id(task), attempt: failure.attempts, delay: delay, code: failure.code.rawValue,
          message: redactor.text(failure.message)))
    }
    display.note(
      "retrying \(id(tasks.firstTask)) in \(delay) after attempt \(failure.attempts): \(failure.code): \(redactor.text(failure.message))"
    )
  }

  /// Every call takes effect before it returns.
  public func settle() {}

  public func transferTick(active: [ActiveTransfer]) {
    recorder.flush()
    display.tick(
      active: active.map {
        .init(name: id(plan.tasks[Int(request(ofJob: $0.job).firstTask)]), received: $0.received, expected: $0.expected)
      })
    if eventLog != nil {
      for transfer in active {
        let task = plan.tasks[Int(request(ofJob: transfer.job).firstTask)]
        emit(
          .progress(
            task: id(task), bytes: transfer.received, expected: transfer.expected >= 0 ? transfer.expected : nil))
      }
    }
  }

  public func transferCompleted(
    _ job: Int, outcome: Result<TransferResult, TransferFailure>, spent: Int64, started: UInt64?, ended: UInt64
  ) {
    jobTimes = (offset(started), offset(ended))
    defer { jobTimes = nil }
    let request = request(ofJob: job)
    let tasks = plan.tasks(of: request)
    switch outcome {
    case .failure(let failure) where failure.code == .policy:
      for task in tasks {
        var result = failed(task, failure)
        result.outcome = .deferred
        record(result)
        recorder.remember(task, result, request: request, head: nil)
      }
    case .failure(let failure):
      for task in tasks {
        let result = failed(task, failure)
        record(result)
        recorder.remember(task, result, request: request, head: nil)
      }
      if let group = publishGroup(of: jobRequests[job]) { memberFailed(jobRequests[job], group: group) }
      recorder.spent(spent, attempts: failure.attempts, on: request)
      // Keep the partial file only while a checkpoint can continue it; a failure that wants
      // nothing kept (`too-large`) drops the checkpoint too, this run's or an earlier one's.
      if failure.code.discardsPartial {
        recorder.finished(request)
        if let partial = plan.partialPath(of: request) { unlink(partial) }
      } else if !recorder.hasCheckpoint(request) {
        if let partial = plan.partialPath(of: request) { unlink(partial) }
      }
    case .success(let result) where result.notModified && revalidating[jobRequests[job]] != nil:
      if let cached = revalidating[jobRequests[job]] {
        let refreshed =
          (try? caches.cache(for: request)?.refresh(key: request.key.description, head: result.head)) ?? nil
        serve(refreshed ?? cached, for: request, source: "not-modified", attempts: result.attempts)
      }
      recorder.notWritten(request)
    case .success(let result) where result.notModified:
      for task in tasks {
        var unchanged = base(task)
        let stored = prior.results.entry(for: task, in: plan)
        unchanged.outcome = .unchanged
        unchanged.status = result.head.status
        unchanged.httpVersion = result.head.version
        unchanged.size = stored?.size
        unchanged.sha256 = stored.flatMap(prior.results.sha256(of:))
        unchanged.attempts = result.attempts
        unchanged.source = "not-modified"
        record(unchanged)
        recorder.rechecked(task, request: request)
      }
      recorder.notWritten(request)
      if let group = publishGroup(of: jobRequests[job]) { memberDone(jobRequests[job], group: group) }
    case .success(let received):
      if let refusal = Publication.refusal(
        of: jobRequests[job], plan: plan, failed: failedRequests, attempts: received.attempts)
      {
        // A mirrored document whose covered files failed: nothing is placed, the old copy stays.
        discard(received, tasks: tasks, request: request, failure: refusal)
        if let group = publishGroup(of: jobRequests[job]) { memberFailed(jobRequests[job], group: group) }
        break
      }
      let result = received.withDigest()
      if let cache = caches.cache(for: request), let body = result.body {
        var head = result.head
        // The body is stored as received by the task: decoded, at its own length.
        head.fields.removeAll { $0.name == "content-encoding" || $0.name == "content-length" }
        do {
          try cache.store(
            key: request.key.description, url: redactor.url(plan.url(of: request)), head: head, body: body)
        } catch {
          display.problem("warning: cannot cache \(redactor.url(plan.url(of: request))): \(error)")
        }
      }
      if let group = publishGroup(of: jobRequests[job]) {
        hold(result, for: tasks, request: request, index: jobRequests[job], group: group)
      } else {
        place(result, for: tasks, request: request)
        recorder.finished(request)
      }
    }
    recorder.flush()
  }

  public func transferCheckpoints(_ checkpoints: [TransferCheckpoint]) {
    recorder.record(checkpoints.map { (request(ofJob: $0.job), $0) })
  }
}
