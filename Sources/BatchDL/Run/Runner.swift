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
  private var store: StateStore?
  private var prior = PriorState()
  private var engine: Engine?
  private var pendingResults: [StoredResult] = []
  private var pendingRemovals: [String] = []
  private var pendingBudgets: [(key: String, spent: Int64, attempts: Int)] = []
  private var lastFlush = Engine.now()
  /// Set from the signal handler's queue; read on the engine's thread.
  private let interrupted = Flag()
  /// HTTP caches of data tasks, per session index.
  private var caches: [Int: HTTPCache] = [:]
  /// Cached responses being revalidated, by request index: a 304 serves them.
  private var revalidating: [Int32: CachedResponse] = [:]

  public init(plan: Plan, options: RunOptions) {
    self.plan = plan
    self.options = options
    state = StateFolder(option: options.statePath, manifest: plan.manifest, shard: options.shard)
    redactor = Redactor(secrets: plan.manifest.secrets)
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
      store = nil
      caches.removeAll()
      lastFolder = nil
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
        store = try state.openStore()
        prior = try state.load(store)
      } catch {
        store = nil
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
      if let cache = cache(for: request) {
        // Data tasks: the session's HTTP cache and cache.policy decide.
        switch cache.lookup(key: request.key.description, policy: session(of: request).cache.policy) {
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
      var (spec, owner) = spec(for: request)
      var failure: TransferFailure?
      if let owner {
        do throws(TransferFailure) {
          try prepare(owner.path, for: owner.task)
        } catch {
          failure = error
        }
      }
      switch actions[index] {
      case .resume?:
        if let point = prior.resumePoint(for: request, in: plan), let validator = point.validator {
          spec.resume = .init(offset: point.durable, validator: validator, total: point.total)
        }
        spec.spentBefore = spentBefore(request)
      case .revalidate?:
        if let cached = revalidating[index] {
          spec.conditional = .init(etag: cached.etag, lastModified: cached.lastModified)
        } else {
          let stored = plan.tasks(of: request).compactMap { prior.results[plan.id(of: $0)] }.first
          spec.conditional = .init(etag: stored?.etag, lastModified: stored?.lastModified)
        }
      default:
        spec.spentBefore = spentBefore(request)
      }
      var job = TransferJob(spec: spec, dependencies: dependencies, failure: failure)
      job.admission = admission(for: request)
      jobs.append(job)
    }
    let handler = InterruptHandler { [interrupted] in interrupted.set() }
    // The run's bookkeeping (placing files, the report, the state, progress) goes on beside the
    // engine's thread, on the relay's thread, so that the network never waits for the disk.
    let relay = ObserverRelay(self)
    do {
      defer { relay.stop() }
      let engine = try Engine(jobs: jobs, globalLimit: options.jobs ?? globalLimit(), observer: relay)
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
        pendingBudgets.append(
          (plan.requests[Int(jobRequests[job])].key.description, engine.timeSpent(job), engine.attempts(job)))
      }
    }
    flushStore(force: true)
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
    for index in jobRequests where session(of: plan.requests[Int(index)]).kind == .ephemeral {
      if let partial = PriorState.partialPath(for: plan.requests[Int(index)], in: plan) { unlink(partial) }
    }
  }

  // MARK: - State

  private func persists(_ request: PlannedRequest) -> Bool {
    store != nil && session(of: request).kind != .ephemeral
  }

  public func transferCheckpoints(_ checkpoints: [TransferCheckpoint]) {
    guard let store else { return }
    var points: [Checkpoint] = []
    for point in checkpoints {
      checkpointed.insert(point.job)
      let request = self.request(ofJob: point.job)
      guard persists(request) else { continue }
      points.append(
        Checkpoint(
          key: request.key.description, partial: point.path, url: redactor.url(point.effectiveURL), etag: point.etag,
          lastModified: point.lastModified, total: point.total, durable: point.durable))
    }
    do {
      try store.update(checkpoints: points)
    } catch {
      display.note("warning: cannot record checkpoints: \(error)")
    }
  }

  /// Writes results, removed checkpoints and budgets: at most four times a second, and at the end.
  private func flushStore(force: Bool = false) {
    guard let store, force || Engine.now() &- lastFlush >= 250 else { return }
    lastFlush = Engine.now()
    do {
      try store.save(results: pendingResults)
      try store.update(checkpoints: [], removing: pendingRemovals)
      try store.save(budgets: pendingBudgets, removing: pendingRemovals)
    } catch {
      display.note("warning: cannot record results in \(stateFolder): \(error)")
    }
    pendingResults.removeAll()
    pendingRemovals.removeAll()
    pendingBudgets.removeAll()
  }

  /// Remembers a task's result for the next run.
  /// `written`: the file's size and time as the run wrote it, when known (else they are read back).
  private func remember(
    _ task: PlannedTask, _ result: TaskResult, request: PlannedRequest, head: ResponseHead?,
    written: (size: Int64, modified: Int64)? = nil
  ) {
    guard persists(request) else { return }
    let destination = plan.destination(of: task).map(absolute)
    let info = result.outcome == .completed ? written ?? destination.flatMap(FileAccess.status) : nil
    let taskID = plan.id(of: task)
    let previous = prior.results[taskID]
    pendingResults.append(
      StoredResult(
        taskID: taskID, requestKey: request.key.description, destination: destination,
        outcome: result.outcome.rawValue, status: result.status, size: result.size, sha256: result.sha256,
        etag: head?.strongETag ?? (result.outcome == .completed ? previous?.etag : nil),
        lastModified: head?["last-modified"] ?? (result.outcome == .completed ? previous?.lastModified : nil),
        fileSize: info?.size, fileModified: info?.modified, errorCode: result.error?.code,
        errorMessage: result.error?.message))
  }

  private func globalLimit() -> Int {
    plan.manifest.sessions.map(\.network.maxConcurrent).max() ?? 16
  }

  // MARK: - Jobs

  private func session(of request: PlannedRequest) -> Session { plan.manifest.sessions[Int(request.session)] }

  /// `path` made absolute against the working directory.
  public static func absolute(_ path: String) -> String {
    path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
  }

  /// Absolute path of a destination relative to the manifest's folder.
  private func absolute(_ path: String) -> String { FileAccess.resolve(path, against: plan.manifest.absoluteDirectory) }

  static func partialPath(_ destination: String) -> String { destination + ".batchdl-part" }

  /// Time earlier runs charged to a request against `timeouts.resource` (ms).
  private func spentBefore(_ request: PlannedRequest) -> Int64 {
    prior.budgets[request.key.description]?.spent ?? 0
  }

  /// The request's transfer, and the task whose destination its body goes to (with that
  /// destination's absolute path), when it goes to a file.
  private func spec(for request: PlannedRequest) -> (TransferSpec, owner: (task: PlannedTask, path: String)?) {
    let session = session(of: request)
    let tasks = plan.tasks(of: request)
    let first = tasks[0]
    var headers = session.headers
    var body = TransferSpec.Body.none
    if case .task(let spec) = plan.entry(of: first) {
      for header in spec.headers {
        headers.removeAll { $0.name.lowercased() == header.name.lowercased() }
        headers.append(header)
      }
      if let text = spec.body {
        body = .bytes(Array(text.utf8))
      } else if let file = spec.bodyFile ?? spec.from {
        body = .file(absolute(file))
      } else if !spec.form.isEmpty {
        body = .form(spec.form.map { .init(name: $0.name, value: $0.value, file: $0.file.map(absolute)) })
      }
    } else if case .list(let spec) = plan.entry(of: first) {
      for header in spec.headers {
        headers.removeAll { $0.name.lowercased() == header.name.lowercased() }
        headers.append(header)
      }
    }
    let target: TransferSpec.Target
    var owner: (task: PlannedTask, path: String)?
    if let first = tasks.first(where: { $0.kind != .data && !$0.to.isNone }), let to = plan.destination(of: first) {
      let path = absolute(to)
      owner = (first, path)
      target = .file(Self.partialPath(path))
    } else if let spiller = tasks.first(where: { becomeDownload(of: $0) != nil }),
      let rule = becomeDownload(of: spiller),
      let to = plan.destination(of: spiller)
    {
      let path = absolute(to)
      owner = (spiller, path)
      target = .memory(
        limit: Self.dataMemoryLimit,
        spill: .init(contentTypes: rule.contentTypes, largerThan: rule.largerThan, path: Self.partialPath(path)))
    } else {
      target = .memory(limit: Self.dataMemoryLimit, spill: nil)
    }
    var spec = TransferSpec(
      method: request.method, url: plan.url(of: request), headers: headers.map { "\($0.name): \($0.value)" },
      body: body, target: target, requestTimeout: session.timeouts.request, resourceTimeout: session.timeouts.resource,
      retry: session.retry, rateLimit: session.network.rateLimit,
      hostKey: plan.hosts[Int(request.host)], hostLimit: session.network.maxConnectionsPerHost,
      sessionKey: Int(request.session), sessionLimit: session.network.maxConcurrent, insecure: session.insecure)
    spec.originOnlyHeaders = Set(
      headers.lazy.filter {
        Redactor.sensitiveHeaders.contains($0.name.lowercased()) || self.redactor.text($0.value) != $0.value
      }
      .map { $0.name.lowercased() })
    spec.decodeContent = tasks.allSatisfy { $0.kind == .data }
    spec.cookieJar = cookieJars[Int(request.session)]
    spec.waitsForConnectivity = session.network.waitsForConnectivity
    return (spec, owner)
  }

  /// Each session's cookie jar: empty for an ephemeral session (cookies in memory only).
  private lazy var cookieJars: [String] = plan.manifest.sessions.map {
    $0.kind == .ephemeral ? "" : state.cookieJar(session: $0.name)
  }

  private func becomeDownload(of task: PlannedTask) -> BecomeDownload? {
    guard task.kind == .data, case .task(let spec) = plan.entry(of: task) else { return nil }
    return spec.becomeDownload
  }

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
    for task in plan.tasks(of: request(ofJob: job)) where becomeDownload(of: task) != nil {
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
    flushStore()
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
        remember(task, result, request: request, head: nil)
      }
    case .failure(let failure):
      for task in tasks {
        let result = failed(task, failure)
        record(result)
        remember(task, result, request: request, head: nil)
      }
      if persists(request) {
        pendingBudgets.append((key, spent, failure.attempts))
      }
      // Keep the partial file only while a checkpoint can continue it.
      if prior.checkpoints[key] == nil && !hasCheckpoint(job) {
        if let partial = PriorState.partialPath(for: request, in: plan) { unlink(partial) }
      }
    case .success(let result) where result.notModified && revalidating[jobRequests[job]] != nil:
      if let cached = revalidating[jobRequests[job]] {
        let refreshed = (try? caches[Int(request.session)]?.refresh(key: key, head: result.head)) ?? nil
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
      if let cache = cache(for: request), let body = result.body {
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
      // Only a request with a checkpoint or a budget has rows to remove (most have none).
      if prior.checkpoints[key] != nil || prior.budgets[key] != nil || hasCheckpoint(job) {
        pendingRemovals.append(key)
      }
    }
    flushStore()
  }

  /// The network policy's gate for a request (nil when its session restricts nothing).
  private func admission(for request: PlannedRequest) -> (@Sendable () -> Admission)? {
    let settings = session(of: request).network
    let unrestricted =
      settings.allowsCellular && settings.allowsExpensive && settings.allowsConstrained && !settings.discretionary
    guard !unrestricted else { return nil }
    let policy = networkPolicy
    let url = plan.url(of: request)
    return {
      switch policy.decide(url: url, settings: settings, now: Date()) {
      case .allowed(let interface): return .go(interface: interface)
      case .wait(let reason): return .wait(reason: reason)
      case .defer(let reason): return .defer(reason: reason)
      case .unreachable: return .go(interface: nil)  // libcurl reports it, and retries decide
      }
    }
  }

  private let networkPolicy = NetworkPolicy()

  /// The HTTP cache of a request's session, when the request can use one: only data tasks, a GET
  /// without a body, and no task that may become a download.
  private func cache(for request: PlannedRequest) -> HTTPCache? {
    let tasks = plan.tasks(of: request)
    guard request.method == "GET", tasks.allSatisfy({ $0.kind == .data && becomeDownload(of: $0) == nil }) else {
      return nil
    }
    if case .task(let spec) = plan.entry(of: tasks[0]), spec.body != nil || spec.bodyFile != nil { return nil }
    let index = Int(request.session)
    if let cache = caches[index] { return cache }
    let session = plan.manifest.sessions[index]
    let cache = HTTPCache(folder: state.cache(session: session.name), settings: session.cache)
    caches[index] = cache
    return cache
  }

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
          try prepare(path, for: task)
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

  /// Job indices whose checkpoints were recorded in this run.
  private var checkpointed: Set<Int> = []

  private func hasCheckpoint(_ job: Int) -> Bool { checkpointed.contains(job) }

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
      remember(task, outcome, request: request, head: result.head, written: written)
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
      if let source = result.file, source == Self.partialPath(path) {
        owner = (task, path, outcome)
        continue
      }
      do throws(TransferFailure) {
        let folder = try prepare(path, for: task)
        var written: (size: Int64, modified: Int64)?
        if let source = result.file {
          try Self.copy(source, to: path)
        } else {
          do {
            written = try AtomicFile.write(result.body ?? [], to: path, makingParent: false, in: openFolder(folder))
          } catch {
            throw FileSink.failure(errno: error.code, doing: "write \(destination)")
          }
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
      try prepare(path, for: task)
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

  /// Creates the folder of a task's file and checks that it stays inside the session's dest;
  /// returns the folder.
  @discardableResult
  private func prepare(_ path: String, for task: PlannedTask) throws(TransferFailure) -> String {
    // Folders already made and checked in this run need neither again (10,000 files, one folder).
    let parent = FileAccess.directory(of: path)
    if preparedFolders.contains(parent) { return parent }
    let session = plan.manifest.sessions[Int(task.session)]
    try Self.prepare(path: path, root: absolute(session.dest.isEmpty ? "." : session.dest))
    preparedFolders.insert(parent)
    return parent
  }

  /// Folders made and checked (inside their session's dest) in this run.
  private var preparedFolders: Set<String> = []

  /// The folder small files were last written to, held open (relay thread only).
  private var lastFolder: OpenFolder?

  /// A folder `prepare` has made and checked, open: files of one folder mostly come one after
  /// another, so the last one stays open.
  private func openFolder(_ folder: String) -> OpenFolder? {
    if let lastFolder, lastFolder.path == folder { return lastFolder }
    lastFolder = OpenFolder(path: folder)
    return lastFolder
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

  /// Creates the destination's folders and refuses a path that a symbolic link leads outside
  /// `root` (the session's dest).
  static func prepare(path: String, root: String) throws(TransferFailure) {
    let parent = FileAccess.directory(of: path)
    do {
      try FileAccess.makeDirectories(root)
      try FileAccess.makeDirectories(parent)
    } catch {
      throw FileSink.failure(errno: error.code, doing: error.operation)
    }
    guard let realParent = realPath(parent), let realRoot = realPath(root) else {
      throw TransferFailure(code: .write, message: "cannot resolve the folder \(parent)")
    }
    guard realParent == realRoot || realParent.hasPrefix(realRoot.hasSuffix("/") ? realRoot : realRoot + "/") else {
      throw TransferFailure(
        code: .unsafePath,
        message: "\(path) leads outside the session's dest through a symbolic link; nothing was written")
    }
  }

  static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// Copies `source` to `path` through a partial file and a rename.
  static func copy(_ source: String, to path: String) throws(TransferFailure) {
    let partial = partialPath(path)
    let input = open(source, O_RDONLY | O_CLOEXEC)
    guard input >= 0 else { throw FileSink.failure(errno: errno, doing: "read \(source)") }
    defer { close(input) }
    let output = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard output >= 0 else { throw FileSink.failure(errno: errno, doing: "create \(partial)") }
    let failed = copyByReading(input, output, partial)
    close(output)
    if let failed {
      unlink(partial)
      throw failed
    }
    guard rename(partial, path) == 0 else {
      let failure = FileSink.failure(errno: errno, doing: "rename \(partial)")
      unlink(partial)
      throw failure
    }
  }

  private static func copyByReading(_ input: Int32, _ output: Int32, _ partial: String) -> TransferFailure? {
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
      if count == 0 { return nil }
      if count < 0 {
        if errno == EINTR { continue }
        return FileSink.failure(errno: errno, doing: "copy to \(partial)")
      }
      var offset = 0
      while offset < count {
        let written = buffer.withUnsafeBytes { write(output, $0.baseAddress.map { $0 + offset }, count - offset) }
        if written < 0 {
          if errno == EINTR { continue }
          return FileSink.failure(errno: errno, doing: "copy to \(partial)")
        }
        offset += written
      }
    }
  }
}
