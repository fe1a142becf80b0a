import Crypto
import Foundation

/// What `batchdl run` was asked to do besides the manifest.
public struct RunOptions: Sendable {
  /// The state folder; default `.batchdl/` beside the manifest.
  public var statePath: String?
  /// Global cap on transfers at once; default the largest session `max_concurrent`.
  public var jobs: Int?
  public var shard: Shard?
  public var reportPath: String?
  public var junitPath: String?
  public var eventsPath: String?
  public var progress: ProgressMode = .auto
  public var quiet = false
  public var timings = false
  /// Revalidate finished downloads with conditional requests.
  public var refresh = false
  /// Re-hash finished files to decide whether they are unchanged.
  public var verify = false
  /// Only these sessions (by name); nil runs every session.
  public var sessions: Set<String>?
  /// The lock taken in the state folder: `lock` for a run, a worker's own for a background session.
  public var lockName = "lock"

  public init() {}
}

/// A run that could not start.
public enum RunError: Error, CustomStringConvertible {
  case locked(StateLock.Held)
  /// The state folder's database is damaged, or its disk is full: nothing was sent.
  case state(StateError)
  case setup(String)

  public var description: String {
    switch self {
    case .locked(let held): return held.description
    case .state(let error): return error.description
    case .setup(let message): return message
    }
  }

  public var status: ExitStatus {
    switch self {
    case .locked: return .locked
    case .state: return .stateUnusable
    case .setup: return .taskFailed
    }
  }
}

/// Ties a plan to the transfer engine: builds one job per request, places each task's file when its
/// request ends (checking `sha256` and `size` first), and reports every task through events.
public final class Runner: TransferObserver {
  /// The most a data task keeps in memory.
  public static let dataMemoryLimit: Int64 = 16 << 20

  private let plan: Plan
  private let options: RunOptions
  private let redactor: Redactor
  private let display: ProgressDisplay
  private var eventLog: EventLog?
  private var report: RunReport
  /// Requests of this run (plan order, this shard).
  private var requests: [Int32] = []
  /// The request of each engine job (requests that are not unchanged).
  private var jobRequests: [Int32] = []
  private var actions: [Int32: RequestAction] = [:]
  private var pendingPerSession: [Int: Int] = [:]
  private var summaries: [Int: RunSummary] = [:]
  private let start = Engine.now()
  private var prior = PriorState()
  private var engine: Engine?
  /// Records results, checkpoints and budgets in the state folder.
  private let recorder: StateRecorder
  /// Set from the signal handler's queue; read on the engine's thread.
  private let interrupted = Flag()
  /// Cached responses being revalidated, by request index: a 304 serves them.
  private var revalidating: [Int32: CachedResponse] = [:]

  public init(plan: Plan, options: RunOptions) {
    self.plan = plan
    self.options = options
    state = StateFolder(option: options.statePath, manifest: plan.manifest, shard: options.shard)
    redactor = Redactor(secrets: plan.manifest.secrets)
    recorder = StateRecorder(plan: plan, redactor: redactor)
    report = RunReport(manifest: plan.manifest.path)
    report.shard = options.shard?.description
    requests = plan.order.filter { index in
      let request = plan.requests[Int(index)]
      if let sessions = options.sessions, !sessions.contains(plan.manifest.sessions[Int(request.session)].name) {
        return false
      }
      return options.shard?.contains(request) ?? true
    }
    let taskCount = requests.reduce(0) { $0 + Int(plan.requests[Int($1)].taskCount) }
    display = ProgressDisplay(mode: options.progress, quiet: options.quiet, totalTasks: taskCount)
  }

  /// The state folder this run uses: each shard has its own sub-folder, so that shards sharing
  /// storage never collide.
  public let state: StateFolder

  public var stateFolder: String { state.path }

  /// Runs every request and writes the reports; returns the exit status.
  public func run() throws(RunError) -> ExitStatus {
    let lock: StateLock
    do {
      lock = try StateLock(folder: stateFolder, name: options.lockName)
    } catch let held as StateLock.Held {
      throw .locked(held)
    } catch let error as SystemError where error.code == ENOSPC {
      throw .state(
        StateError(kind: .diskFull, database: state.database, arguments: state.arguments, detail: error.description))
    } catch {
      throw .setup("cannot use the state folder \(stateFolder): \(error)")
    }
    defer { withExtendedLifetime(lock) {} }
    // Close the databases (their WAL folded back in) when the run ends: the command exits without
    // tearing the runner down.
    defer {
      recorder.close()
      builder.closeCaches()
      placer.close()
    }
    if let path = options.eventsPath {
      do {
        eventLog = try EventLog(path: path)
      } catch {
        throw .setup("cannot write the event log: \(error)")
      }
    }
    if plan.manifest.sessions.contains(where: { $0.kind != .ephemeral }) {
      do throws(StateError) {
        let store = try state.openStore()
        prior = try state.load(store)
        recorder.open(store, prior: prior, warn: { [display] in display.note($0) })
      } catch {
        reportWithoutRunning(error)
        throw .state(error)
      }
    }
    for index in requests {
      for task in plan.tasks(of: plan.requests[Int(index)]) { pendingPerSession[Int(task.session), default: 0] += 1 }
    }
    report.requests = requests.count
    report.results.reserveCapacity(pendingPerSession.values.reduce(0, +))

    var jobs: [TransferJob] = []
    jobs.reserveCapacity(requests.count)
    var jobOfRequest: [Int32: Int] = [:]
    for index in requests {
      let request = plan.requests[Int(index)]
      if let cache = builder.cache(for: request) {
        // Data tasks: the session's HTTP cache and cache.policy decide.
        switch cache.lookup(key: request.key.description, policy: plan.session(of: request).cache.policy) {
        case .useCached(let cached):
          serve(cached, for: request, source: "cache")
          continue
        case .missing(let message):
          for task in plan.tasks(of: request) {
            record(failed(task, TransferFailure(code: .cacheMiss, message: message)))
          }
          continue
        case .revalidate(let cached, _, _):
          revalidating[index] = cached
          actions[index] = .revalidate
        case .fetch:
          actions[index] = .send
        }
        jobOfRequest[index] = jobRequests.count
        jobRequests.append(index)
        continue
      }
      let (action, _) = prior.action(for: request, in: plan, refresh: options.refresh, verify: options.verify)
      actions[index] = action
      if action == .unchanged {
        recordUnchanged(request)
        continue
      }
      jobOfRequest[index] = jobRequests.count
      jobRequests.append(index)
    }
    for index in jobRequests {
      let request = plan.requests[Int(index)]
      // A dependency that is unchanged is already satisfied.
      let dependencies = request.dependencies.compactMap { jobOfRequest[$0] }
      jobs.append(
        builder.job(
          for: request, action: actions[index], cached: revalidating[index], prior: prior, dependencies: dependencies,
          placer: placer))
    }
    let handler = InterruptHandler { [interrupted] in interrupted.set() }
    // The run's bookkeeping (placing files, the report, the state, progress) goes on beside the
    // engine's thread, on the relay's thread, so that the network never waits for the disk.
    let relay = ObserverRelay(self)
    do {
      defer { relay.stop() }
      let engine = try Engine(jobs: jobs, globalLimit: options.jobs ?? builder.globalLimit, observer: relay)
      self.engine = engine
      let canceller = engine.canceller
      handler.onInterrupt = { canceller.cancel() }
      if interrupted.isSet { canceller.cancel() }
      try engine.run()
    } catch {
      throw .setup("the transfer engine failed: \(error)")
    }
    withExtendedLifetime(handler) {}
    let cancelled = engine?.isCancelled == true
    if cancelled, let engine {
      for job in engine.unfinishedJobs {
        for task in plan.tasks(of: plan.requests[Int(jobRequests[job])]) {
          var result = base(task)
          result.outcome = .cancelled
          result.attempts = engine.attempts(job)
          record(result)
        }
        recorder.spent(engine.timeSpent(job), attempts: engine.attempts(job), on: request(ofJob: job))
      }
    }
    recorder.flush(force: true)
    cleanEphemeralPartials()
    report.seconds = Double(Engine.now() &- start) / 1000
    let summary = report.summary
    display.finish(summary: summary)
    eventLog?.flush()
    do {
      if let path = options.reportPath { try AtomicFile.write(report.json(timings: options.timings), to: path) }
      if let path = options.junitPath { try AtomicFile.write(report.junit(timings: options.timings), to: path) }
    } catch {
      throw .setup("cannot write the report: \(error)")
    }
    if cancelled { return .interrupted }
    runFinishedHooks()
    return summary.failed > 0 ? .taskFailed : .success
  }

  /// A run that cannot use its state sends nothing: it reports every task `cancelled`, with why.
  private func reportWithoutRunning(_ error: StateError) {
    for index in requests {
      for task in plan.tasks(of: plan.requests[Int(index)]) {
        var result = base(task)
        result.outcome = .cancelled
        result.error = (FailureCode.state.rawValue, redactor.text(error.description))
        report.results.append(result)
      }
    }
    report.requests = requests.count
    if let path = options.reportPath { try? AtomicFile.write(report.json(timings: options.timings), to: path) }
    if let path = options.junitPath { try? AtomicFile.write(report.junit(timings: options.timings), to: path) }
  }

  /// Sessions of this run, in manifest order.
  private var sessionsInRun: [Session] {
    plan.manifest.sessions.filter { options.sessions?.contains($0.name) ?? true }
  }

  /// `on_finished`: once every task of a session has ended, its command runs with the session's
  /// report (written to the state folder, or a temporary folder for ephemeral sessions).
  private func runFinishedHooks() {
    for session in sessionsInRun {
      guard let command = session.onFinished else { continue }
      var sessionReport = RunReport(manifest: plan.manifest.path)
      sessionReport.results = report.results.filter { $0.session == session.name }
      sessionReport.requests =
        Set(
          requests.filter { plan.manifest.sessions[Int(plan.requests[Int($0)].session)].name == session.name }
        ).count
      let path =
        session.kind == .ephemeral
        ? FileManager.default.temporaryDirectory.path + "/batchdl-\(getpid())/\(session.name).json"
        : state.sessionReport(session: session.name)
      do {
        try AtomicFile.write(sessionReport.json(timings: false), to: path)
      } catch {
        display.note("warning: cannot write the report of session \(session.name) for on_finished: \(error)")
        continue
      }
      let status = Hook.run(
        command, in: plan.manifest.absoluteDirectory,
        environment: ["BATCHDL_SESSION": session.name, "BATCHDL_REPORT": path])
      if status != 0 {
        display.note("warning: on_finished of session \(session.name) exited with status \(status)")
      }
      if session.kind == .ephemeral { unlink(path) }
    }
  }

  /// Reports the tasks of a request whose results still stand, without sending it.
  private func recordUnchanged(_ request: PlannedRequest) {
    for task in plan.tasks(of: request) {
      var result = base(task)
      let stored = prior.results[plan.id(of: task)]
      result.outcome = .unchanged
      result.status = stored?.status
      result.size = stored?.size
      result.sha256 = stored?.sha256
      record(result)
    }
  }

  /// Deletes the partial files of ephemeral sessions: nothing of theirs outlives the run.
  private func cleanEphemeralPartials() {
    for index in jobRequests where plan.session(of: plan.requests[Int(index)]).kind == .ephemeral {
      if let partial = plan.partialPath(of: plan.requests[Int(index)]) { unlink(partial) }
    }
  }

  // MARK: - Jobs

  /// `path` made absolute against the working directory.
  public static func absolute(_ path: String) -> String {
    path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
  }

  /// Absolute path of a destination relative to the manifest's folder.
  private func absolute(_ path: String) -> String { FileAccess.resolve(path, against: plan.manifest.absoluteDirectory) }

  // MARK: - Events

  /// The event is only made when there is an event log.
  private func emit(_ event: @autoclosure () -> RunEvent) {
    eventLog?.record(event())
  }

  private func id(_ task: PlannedTask) -> String { redactor.text(plan.id(of: task)) }

  private func request(ofJob job: Int) -> PlannedRequest { plan.requests[Int(jobRequests[job])] }

  public func transferReceivedResponse(_ job: Int, head: ResponseHead) {
    let resumedFrom = head.status == 206 ? ContentRange(head["content-range"] ?? "")?.start : nil
    for task in plan.tasks(of: request(ofJob: job)) {
      emit(
        .response(
          task: id(task), status: head.status, contentType: head["content-type"], contentLength: head.contentLength))
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

  public func transferWillRetry(_ job: Int, after delay: Interval, failure: TransferFailure) {
    let tasks = plan.tasks(of: request(ofJob: job))
    for task in tasks {
      emit(
        .retrying(
          task: id(task), attempt: failure.attempts, delay: delay, code: failure.code.rawValue,
          message: redactor.text(failure.message)))
    }
    display.note(
      "retrying \(id(tasks[0])) in \(delay) after attempt \(failure.attempts): \(failure.code): \(redactor.text(failure.message))"
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

  public func transferCompleted(_ job: Int, outcome: Result<TransferResult, TransferFailure>, spent: Int64) {
    let request = request(ofJob: job)
    let tasks = plan.tasks(of: request)
    let key = request.key.description
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
      recorder.spent(spent, attempts: failure.attempts, on: request)
      // Keep the partial file only while a checkpoint can continue it.
      if !recorder.hasCheckpoint(request) {
        if let partial = plan.partialPath(of: request) { unlink(partial) }
      }
    case .success(let result) where result.notModified && revalidating[jobRequests[job]] != nil:
      if let cached = revalidating[jobRequests[job]] {
        let refreshed = (try? builder.cache(for: request)?.refresh(key: key, head: result.head)) ?? nil
        serve(refreshed ?? cached, for: request, source: "not-modified", attempts: result.attempts)
      }
    case .success(let result) where result.notModified:
      for task in tasks {
        var unchanged = base(task)
        let stored = prior.results[plan.id(of: task)]
        unchanged.outcome = .unchanged
        unchanged.status = result.head.status
        unchanged.size = stored?.size
        unchanged.sha256 = stored?.sha256
        unchanged.attempts = result.attempts
        unchanged.source = "not-modified"
        record(unchanged)
      }
    case .success(let received):
      let result = received.withDigest()
      if let cache = builder.cache(for: request), let body = result.body {
        var head = result.head
        // The body is stored as received by the task: decoded, at its own length.
        head.fields.removeAll { $0.name == "content-encoding" || $0.name == "content-length" }
        do {
          try cache.store(key: key, url: redactor.url(plan.url(of: request)), head: head, body: body)
        } catch {
          display.note("warning: cannot cache \(redactor.url(plan.url(of: request))): \(error)")
        }
      }
      place(result, for: tasks, request: request)
      recorder.finished(request)
    }
    recorder.flush()
  }

  public func transferCheckpoints(_ checkpoints: [TransferCheckpoint]) {
    recorder.record(checkpoints.map { (request(ofJob: $0.job), $0) })
  }

  /// Makes folders and puts files in place.
  private lazy var placer = FilePlacer(plan: plan)

  /// Builds the engine's jobs, and holds the HTTP caches.
  private lazy var builder = JobBuilder(plan: plan, state: state, redactor: redactor)

  /// Completes a request's tasks from a cached response, without (or after a 304 to) a request.
  private func serve(_ cached: CachedResponse, for request: PlannedRequest, source: String, attempts: Int = 0) {
    let sha256 = SHA256.hash(data: cached.body).hexString
    for task in plan.tasks(of: request) {
      var result = base(task)
      result.outcome = .completed
      result.status = cached.status
      result.size = Int64(cached.body.count)
      result.sha256 = sha256
      result.attempts = attempts
      result.source = source
      if let destination = plan.destination(of: task) {
        do {
          let path = absolute(destination)
          try placer.prepare(path, for: task)
          try AtomicFile.write(cached.body, to: path)
          emit(.finished(task: result.id, to: result.to ?? ""))
        } catch {
          record(failed(task, TransferFailure(code: .write, message: "cannot write \(destination): \(error)")))
          continue
        }
      }
      record(result)
    }
  }

  private func base(_ task: PlannedTask) -> TaskResult {
    TaskResult(
      id: id(task), session: plan.manifest.sessions[Int(task.session)].name, kind: task.kind,
      url: redactor.url(plan.url(of: task)), to: plan.destination(of: task).map { redactor.text($0) }, outcome: .failed,
      seconds: Double(Engine.now() &- start) / 1000)
  }

  private func failed(_ task: PlannedTask, _ failure: TransferFailure, status: Int? = nil) -> TaskResult {
    var result = base(task)
    result.outcome = .failed
    result.attempts = failure.attempts
    result.status = failure.status ?? status
    result.error = (failure.code.rawValue, redactor.text(failure.message))
    return result
  }

  private func record(_ result: TaskResult) {
    report.results.append(result)
    emit(.completed(result))
    display.taskEnded(result)
    guard let sessionIndex = plan.manifest.sessions.firstIndex(where: { $0.name == result.session }) else { return }
    summaries[sessionIndex, default: RunSummary()].add(result)
    pendingPerSession[sessionIndex, default: 1] -= 1
    if pendingPerSession[sessionIndex] == 0 {
      emit(.sessionFinished(session: result.session, summary: summaries[sessionIndex] ?? RunSummary()))
    }
  }

  /// Checks each task's expectations and puts its file in place: other destinations get copies,
  /// then the owner's partial file is renamed into place; the partial file never stays behind.
  private func place(_ result: TransferResult, for tasks: [PlannedTask], request: PlannedRequest) {
    var owner: (task: PlannedTask, path: String, outcome: TaskResult)?
    func record(_ task: PlannedTask, _ outcome: TaskResult, written: (size: Int64, modified: Int64)? = nil) {
      self.record(outcome)
      recorder.remember(task, outcome, request: request, head: result.head, written: written)
    }
    for (index, task) in tasks.enumerated() {
      var outcome = base(task)
      outcome.status = result.head.status
      outcome.size = result.size
      outcome.sha256 = result.sha256
      outcome.attempts = result.attempts
      outcome.source = index == 0 ? "network" : "duplicate"
      outcome.resumedFrom = result.resumedFrom
      outcome.transferred = index == 0 ? result.transferred : 0
      outcome.outcome = .completed
      if let problem = expectationProblem(task, result) {
        let failure = TransferFailure(code: problem.0, message: problem.1, attempts: result.attempts)
        record(task, failed(task, failure, status: result.head.status))
        continue
      }
      guard let destination = plan.destination(of: task) else {
        record(task, outcome)
        continue
      }
      let path = absolute(destination)
      if let source = result.file, source == Plan.partialPath(of: path) {
        owner = (task, path, outcome)
        continue
      }
      do throws(TransferFailure) {
        let folder = try placer.prepare(path, for: task)
        var written: (size: Int64, modified: Int64)?
        if let source = result.file {
          try FilePlacer.copy(source, to: path)
        } else {
          written = try placer.write(result.body ?? [], to: path, folder: folder, naming: destination)
        }
        emit(.finished(task: outcome.id, to: outcome.to ?? ""))
        record(task, outcome, written: written)
      } catch {
        record(task, failed(task, TransferFailure(code: error.code, message: error.message, attempts: result.attempts)))
      }
    }
    guard let source = result.file else { return }
    guard let (task, path, outcome) = owner else {
      unlink(source)
      return
    }
    do throws(TransferFailure) {
      try placer.prepare(path, for: task)
      guard rename(source, path) == 0 else {
        throw FileSink.failure(errno: errno, doing: "rename the finished file into \(path)")
      }
      emit(.finished(task: outcome.id, to: outcome.to ?? ""))
      record(task, outcome)
    } catch {
      unlink(source)
      record(task, failed(task, TransferFailure(code: error.code, message: error.message, attempts: result.attempts)))
    }
  }

  private func expectationProblem(_ task: PlannedTask, _ result: TransferResult) -> (FailureCode, String)? {
    guard case .task(let spec) = plan.entry(of: task) else { return nil }
    if let size = spec.size, size != result.size {
      return (.sizeMismatch, "expected \(size) bytes, received \(result.size); nothing was written to 'to'")
    }
    if let sha256 = spec.sha256, sha256 != result.sha256 {
      return (.checksumMismatch, "expected sha256 \(sha256), received \(result.sha256); nothing was written to 'to'")
    }
    return nil
  }

}
