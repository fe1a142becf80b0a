import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
import Crypto
import Foundation

/// Everything a run writes down while it goes: the report, the events, the progress display, the
/// files it places and the state it records. The engine's calls reach it through the
/// `ObserverRelay`, on the relay's thread; before and after the engine runs, the `Runner` holds it.
/// It is never shared: the runner sends it to the relay (`ObserverRelay.init(_:)` takes it as
/// `sending`) and gets it back from `stop()`, so the compiler sees that one thread at a time owns it.
final class RunBookkeeper: TransferObserver {
  let plan: Plan
  let options: RunOptions
  let state: StateFolder
  let redactor: Redactor
  let display: ProgressDisplay
  var eventLog: EventLog?
  /// The report's head (manifest, shard, requests, time); its tasks are in `results`.
  private var report: RunReport
  /// Every task's result so far, compact until the report is written.
  var results = ResultTable()
  /// Requests of this run (plan order, this shard).
  private let requests: [Int32]
  /// The request of each engine job (requests that are not unchanged).
  var jobRequests: [Int32] = []
  var pendingPerSession: [Int: Int] = [:]
  var summaries: [Int: RunSummary] = [:]
  /// Requests each session sends in this run (`RunSummary.requests`): those neither unchanged nor
  /// answered by the HTTP cache.
  var requestsPerSession: [Int: Int] = [:]
  let start = Engine.now()
  /// Seconds into the run when the turn of the job whose end is being recorded came, and when the
  /// engine saw it end: `base` gives them to the job's tasks (the report's `started` and
  /// `seconds`), so that a report's times are the engine's, not those of this thread, which takes
  /// the engine's calls a few milliseconds late.
  var jobTimes: (started: Double?, ended: Double)?
  var prior = PriorState()
  /// Records results, checkpoints and budgets in the state folder.
  let recorder: StateRecorder
  /// Cached responses being revalidated, by request index: a 304 serves them.
  var revalidating: [Int32: CachedResponse] = [:]
  /// Makes folders and puts files in place.
  let placer: FilePlacer
  /// The sessions' HTTP caches (data tasks).
  let caches: SessionCaches
  /// Requests with a task that failed or was cancelled in this run: a document that covers one
  /// is not published (`Publication`).
  var failedRequests = Set<Int32>()
  /// What the run means, once `finish` has decided it.
  var verdict: RunVerdict?
  /// Publish groups (`PublishGroups.swift`): the members that have not ended yet, why a group
  /// failed, and the results held until it is complete.
  var groupWaiting: [Int32: Set<Int32>] = [:]
  var groupFailure: [Int32: String] = [:]
  var heldResults: [Int32: [HeldResult]] = [:]

  init(plan: Plan, options: RunOptions, state: StateFolder, requests: [Int32]) {
    self.plan = plan
    self.options = options
    self.state = state
    self.requests = requests
    redactor = Redactor(secrets: plan.manifest.secrets)
    recorder = StateRecorder(plan: plan, redactor: redactor)
    placer = FilePlacer(plan: plan, stateFolder: state.path)
    caches = SessionCaches(plan: plan, state: state)
    report = RunReport(manifest: plan.manifest.path)
    report.shard = options.shard?.description
    let taskCount = requests.reduce(0) { $0 + Int(plan.requests[Int($1)].taskCount) }
    display = ProgressDisplay(
      mode: options.progress, quiet: options.quiet, verbose: options.verbose, totalTasks: taskCount)
  }

  /// Where the progress bars are drawn (the signal handler prints there too).
  var terminal: LiveArea { display.area }

  /// The global cap when `--jobs` is not given.
  var globalLimit: Int { JobBuilder.globalLimit(of: plan) }

  /// Opens the event log, when one is asked for.
  func openEventLog() throws(RunError) {
    guard let path = options.eventsPath else { return }
    do {
      eventLog = try EventLog(path: path)
    } catch {
      throw .usage("cannot write the event log (--events): \(error); nothing was sent")
    }
  }

  /// Reads what earlier runs recorded and starts recording this one (unless every session is
  /// ephemeral).
  func openState() throws(StateError) {
    guard plan.manifest.sessions.contains(where: { $0.kind != .ephemeral }) else { return }
    let store = try state.openStore()
    prior = try state.load(store)
    recorder.open(store, prior: prior, warn: { [display] in display.problem($0) })
  }

  /// Closes the databases (their write-ahead logs folded back in) and the open folder: the
  /// command exits without tearing the run down.
  func close() {
    display.close()
    recorder.close()
    caches.close()
    placer.close()
  }

  /// Decides what each request needs (the HTTP cache and the last run's results may answer it
  /// without a request: those tasks are recorded now) and returns the engine's jobs for the rest,
  /// as the builder that makes each job's transfer when its turn comes (the engine's from now on).
  func jobs() -> sending JobBuilder {
    for index in requests {
      for task in plan.tasks(of: plan.requests[Int(index)]) { pendingPerSession[Int(task.session), default: 0] += 1 }
    }
    // Documents fetched before planning: listed once (a sharded run lists them in shard 0), and an
    // entry whose document failed fails here, as one task, with `descriptor`.
    // Only the sessions of this run: a background session's worker lists (and fails on) its own.
    let documents = plan.descriptors.filter { isInRun(session: Int($0.session)) }
    let failedDescriptors = (options.shard?.index ?? 0) == 0 ? documents.compactMap(\.task) : []
    if (options.shard?.index ?? 0) == 0 { report.descriptors = documents.filter { $0.outcome != .missing } }
    // So do the files of documents that the plan left out.
    let refused =
      (options.shard?.index ?? 0) == 0 ? plan.refusedFiles.filter { isInRun(session: Int($0.task.session)) } : []
    for task in failedDescriptors + refused.map(\.task) { pendingPerSession[Int(task.session), default: 0] += 1 }
    results.reserve(pendingPerSession.values.reduce(0, +))
    for descriptor in documents where (options.shard?.index ?? 0) == 0 {
      guard let task = descriptor.task else { continue }
      record(failed(task, TransferFailure(code: .descriptor, message: descriptor.failure ?? "cannot fetch it")))
    }
    for file in refused { record(failed(file.task, TransferFailure(code: file.code, message: file.message))) }

    let blocked = blockedRequests()
    var actions: [RequestAction] = []
    /// The job of each request (by request index), -1 for none.
    var jobOfRequest = [Int32](repeating: -1, count: plan.requests.count)
    for index in requests {
      let request = plan.requests[Int(index)]
      if let failure = blocked[index] {
        for task in plan.tasks(of: request) { record(failed(task, failure)) }
        continue
      }
      let action: RequestAction
      if let cache = caches.cache(for: request) {
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
          action = .revalidate
        case .fetch:
          action = .send
        }
      } else {
        action = prior.action(for: request, in: plan, refresh: options.refresh, verify: options.verify).action
        if action == .unchanged {
          recordUnchanged(request)
          continue
        }
      }
      jobOfRequest[Int(index)] = Int32(jobRequests.count)
      jobRequests.append(index)
      actions.append(action)
      requestsPerSession[Int(request.session), default: 0] += 1
    }
    // What the run sends: a request the state or the HTTP cache answered is not one.
    report.requests = jobRequests.count + plan.descriptorRequests + options.earlierRequests.requests
    // A session's documents are its requests too (`session_finished`, `--metrics`, on_finished).
    for (session, sent) in plan.descriptorRequestsPerSession { requestsPerSession[session, default: 0] += sent }
    report.descriptorRequests = plan.descriptorRequests + options.earlierRequests.descriptors
    display.plannedBytes = expectedBytes(of: jobRequests)
    // Before the first byte: the partial files this run may make are batchdl's, for prune.
    recorder.recordStarts(jobRequests.map { plan.requests[Int($0)] })
    prepareGroups(jobs: Set(jobRequests), blocked: blocked)
    // A dependency that is unchanged is already satisfied.
    let waits = jobRequests.map { index in
      plan.requests[Int(index)].dependencies.compactMap {
        jobOfRequest[Int($0)] >= 0 ? Int(jobOfRequest[Int($0)]) : nil
      }
    }
    return JobBuilder(
      plan: plan, state: state, redactor: redactor, prior: prior, requests: jobRequests, actions: actions, waits: waits,
      revalidating: revalidating)
  }

  /// The requests of this run that must fail with `dependency` before anything is sent, and why:
  /// those waiting for an id a failed document may have listed (`Plan.unresolvedAfter`), and
  /// whatever waits for them.
  func blockedRequests() -> [Int32: TransferFailure] {
    guard !plan.unresolvedAfter.isEmpty || !plan.refusedRequests.isEmpty else { return [:] }
    var blocked: [Int32: TransferFailure] = [:]
    for index in requests {
      if let refusal = plan.refusedRequests[index] {
        blocked[index] = TransferFailure(code: refusal.code, message: redactor.text(refusal.message))
        continue
      }
      guard let missing = plan.unresolvedAfter[index] else { continue }
      blocked[index] = TransferFailure(
        code: .dependency,
        message: redactor.text(
          "after: no task has the id '\(missing.id)', and \(missing.why)"
        ))
    }
    // Waiting is transitive: go round until no request joins (each round adds one at least).
    var changed = true
    while changed {
      changed = false
      for index in requests where blocked[index] == nil {
        if plan.requests[Int(index)].dependencies.contains(where: { blocked[$0] != nil }) {
          blocked[index] = TransferFailure(code: .dependency, message: "a task it comes after failed (dependency)")
          changed = true
        }
      }
    }
    return blocked
  }

  /// The bytes `requests` are expected to bring (their owners' pinned or listed sizes); nil when
  /// one has none.
  private func expectedBytes(of requests: [Int32]) -> Int64? {
    var total: Int64 = 0
    for index in requests {
      let request = plan.requests[Int(index)]
      guard let size = plan.expectedSize(of: plan.owner(of: request) ?? plan.tasks(of: request).firstTask) else {
        return nil
      }
      total = total.addingReportingOverflow(size.bytes).overflow ? .max : total + size.bytes
    }
    return total
  }

  /// The run's engine sent `sent` requests: with the descriptors', the report's `requests`.
  func countSent(_ sent: Int) {
    report.requests = sent + plan.descriptorRequests + options.earlierRequests.requests
  }

  /// The report's `requests` and `descriptor_requests` (`Runner.requestsSent`).
  var requestsSent: (requests: Int, descriptors: Int) { (report.requests, report.descriptorRequests) }

  /// Records the tasks of the jobs a signal stopped as `cancelled`, with the time they spent.
  func recordCancelled(_ engine: Engine) {
    for job in engine.unfinishedJobs {
      jobTimes = (offset(engine.startTime(job)), offset(Engine.now()))
      defer { jobTimes = nil }
      for task in plan.tasks(of: request(ofJob: job)) {
        var result = base(task)
        result.outcome = .cancelled
        result.attempts = engine.attempts(job)
        record(result)
      }
      recorder.spent(engine.timeSpent(job), attempts: engine.attempts(job), on: request(ofJob: job))
    }
  }

  /// Records the last results, writes the reports and (unless the run was cancelled) runs the
  /// sessions' `on_finished` commands; returns the run's exit status.
  func finish(cancelled: Bool) throws(RunError) -> ExitStatus {
    abandonGroups()
    recorder.flush(force: true)
    cleanEphemeralPartials()
    // Every file is in place: sessions with `prune:` remove what no task names any more.
    report.prune = prune(cancelled: cancelled)
    report.seconds = offset(Engine.now())
    let summary = self.summary
    display.finish(summary: summary)
    eventLog?.flush()
    // The hooks run before the reports are written, which record how each ended; a hook that
    // failed fails the run (exit 1), as a task that failed does.
    if !cancelled { report.hooks = runFinishedHooks() }
    do {
      try writeReports()
    } catch {
      throw .setup("cannot write the report: \(error)")
    }
    var verdict = RunVerdict()
    verdict.cancelled = cancelled
    verdict.failedTasks = summary.failed
    verdict.failedDocuments = report.descriptors.filter { $0.outcome == .failed }.map { document in
      document.failure ?? "the document \(document.url) failed"
    }
    verdict.failedHooks = report.hooks.filter { $0.status != 0 }.map { ($0.session, $0.status) }
    verdict.refusedPrunes = report.prune.filter { $0.outcome == .refused }.map(\.session)
    // The state could not record the run (its disk is full): the next run would not know it.
    recorder.flush(force: true)
    verdict.unrecorded = recorder.unrecorded.map { redactor.text($0) }
    if let unrecorded = verdict.unrecorded {
      display.problem(
        "error: the state folder \(state.path) cannot record this run's results (\(unrecorded)); free some space and run again"
      )
    }
    self.verdict = verdict
    do {
      try writeMetrics(verdict)
    } catch {
      throw .setup("cannot write the metrics: \(error)")
    }
    return verdict.status
  }

  /// `--metrics`: the run's figures, and the last success carried over from the file's last version.
  private func writeMetrics(_ verdict: RunVerdict) throws(SystemError) {
    guard let path = options.metricsPath else { return }
    var metrics = RunMetrics(manifest: plan.manifest.path, shard: options.shard?.description)
    for session in sessionsInRun {
      let index = plan.manifest.sessions.firstIndex { $0.name == session.name } ?? -1
      var summary = summaries[index] ?? RunSummary()
      summary.requests = requestsPerSession[index] ?? 0
      metrics.sessions.append((session.name, summary))
    }
    metrics.seconds = report.seconds ?? 0
    metrics.exitCode = verdict.status.rawValue
    metrics.ended = Date().timeIntervalSince1970
    let earlier = (try? String(contentsOfFile: path, encoding: .utf8)).map(metrics.lastSuccess(in:)) ?? 0
    metrics.lastSuccess = verdict.isSuccess ? metrics.ended : earlier
    try AtomicFile.writeOutput(metrics.text, to: path)
  }

  /// A run that cannot use its state sends nothing: it reports every task `cancelled`, with why.
  func reportWithoutRunning(_ error: StateError) {
    for index in requests {
      for task in plan.tasks(of: plan.requests[Int(index)]) {
        var result = base(task)
        result.outcome = .cancelled
        result.error = (FailureCode.state.rawValue, redactor.text(error.description))
        results.append(result)
      }
    }
    report.requests = plan.descriptorRequests + options.earlierRequests.requests
    report.descriptorRequests = plan.descriptorRequests + options.earlierRequests.descriptors
    report.notRun = (ExitStatus.stateUnusable.rawValue, redactor.text(error.description))
    try? writeReports()
  }

  /// The summary of the tasks recorded so far.
  private var summary: RunSummary {
    var summary = results.summary
    summary.requests = report.requests
    summary.descriptorRequests = report.descriptorRequests
    return summary
  }

  /// The results sorted by id (one session's, by name), each made whole as it is read.
  private func sortedResults(session name: String? = nil) -> LazyMapSequence<[Int], TaskResult> {
    let session = name.map { name in Int32(plan.manifest.sessions.firstIndex { $0.name == name } ?? -1) }
    return results.sorted(by: id, session: session, base: { [self] in base($0) })
  }

  /// `--report` and `--junit`, written task by task, and the report kept in the state folder's
  /// history (`report_history`; not for a background worker's passes, nor when no session keeps
  /// state).
  private func writeReports() throws(SystemError) {
    let summary = self.summary
    if let path = options.reportPath {
      try AtomicFile.writeOutput(to: path) {
        report.writeJSON(tasks: sortedResults(), summary: summary, timings: options.timings, to: &$0)
      }
    }
    if options.lockName == nil && plan.manifest.sessions.contains(where: { $0.kind != .ephemeral }) {
      do {
        try state.runHistory.add(keep: plan.manifest.reportHistory) {
          report.writeJSON(tasks: sortedResults(), summary: summary, timings: options.timings, to: &$0)
        }
      } catch {
        display.problem("warning: cannot keep this run's report in \(state.runHistory.folder): \(error)")
      }
    }
    if let path = options.junitPath {
      try AtomicFile.writeOutput(to: path) {
        report.writeJUnit(tasks: { sortedResults(session: $0) }, timings: options.timings, to: &$0)
      }
    }
  }

  /// Sessions of this run, in manifest order.
  private var sessionsInRun: [Session] {
    plan.manifest.sessions.filter { options.sessions?.contains($0.name) ?? true }
  }

  /// Whether session `index` runs in this run (`RunOptions.sessions`).
  func isInRun(session index: Int) -> Bool {
    guard let names = options.sessions else { return true }
    return plan.manifest.sessions.indices.contains(index) && names.contains(plan.manifest.sessions[index].name)
  }

  /// `on_finished`: once every task of a session has ended, its command runs with the session's
  /// report (written to the state folder, or a temporary folder for ephemeral sessions).
  private func runFinishedHooks() -> [HookResult] {
    var results: [HookResult] = []
    for session in sessionsInRun {
      guard let command = session.onFinished else { continue }
      var sessionReport = RunReport(manifest: plan.manifest.path)
      sessionReport.results = Array(sortedResults(session: session.name))
      let index = plan.manifest.sessions.firstIndex { $0.name == session.name } ?? -1
      sessionReport.requests = requestsPerSession[index] ?? 0
      let path =
        session.kind == .ephemeral
        ? FileManager.default.temporaryDirectory.path + "/batchdl-\(getpid())/\(session.name).json"
        : state.sessionReport(session: session.name)
      do {
        try AtomicFile.write(sessionReport.json(timings: false), to: path)
      } catch {
        display.problem("error: cannot write the report of session \(session.name) for on_finished: \(error)")
        results.append(HookResult(session: session.name, status: 127))
        continue
      }
      let status = Hook.run(
        command, in: plan.manifest.absoluteDirectory,
        environment: ["BATCHDL_SESSION": session.name, "BATCHDL_REPORT": path])
      if status != 0 {
        display.problem("error: on_finished of session \(session.name) exited with status \(status)")
      }
      results.append(HookResult(session: session.name, status: status))
      if session.kind == .ephemeral { unlink(path) }
    }
    return results
  }

  /// Reports the tasks of a request whose results still stand, without sending it.
  private func recordUnchanged(_ request: PlannedRequest) {
    // Nobody reads the task's text (id, URL, destination) when no line and no event is written:
    // the report makes it again from the plan. A re-run of 100,000 tasks spends less that way.
    let described = describesTasks
    for task in plan.tasks(of: request) {
      var result = base(task, described: described)
      let stored = prior.results.entry(for: task, in: plan)
      result.outcome = .unchanged
      result.status = stored?.status
      result.size = stored?.size
      result.sha256 = stored.flatMap(prior.results.sha256(of:))
      record(result)
    }
  }

  /// Deletes the partial files of ephemeral sessions: nothing of theirs outlives the run.
  private func cleanEphemeralPartials() {
    for index in jobRequests where plan.session(of: plan.requests[Int(index)]).kind == .ephemeral {
      if let partial = plan.partialPath(of: plan.requests[Int(index)]) { unlink(partial) }
    }
  }
}
