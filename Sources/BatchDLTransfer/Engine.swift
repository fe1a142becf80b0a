import BatchDLSupport
import CCurl
import Dispatch
import Foundation

/// Runs jobs on one libcurl multi handle on the calling thread (DESIGN.md): admit work up to the
/// caps (`AdmissionControl`), perform, collect finished transfers, and carry out what each job's
/// `JobLife` decides of them (send again, retry, switch source, repair, complete), poll.
///
/// Caps: at most `globalLimit` transfers at once; per session, `sessionLimit`; per session and
/// host, `hostLimit`. Jobs are admitted in the order given (the plan's order) among those whose
/// caps allow it.
public final class Engine {
  /// A job whose turn came: its transfer (changed by retries and redirects), until it ends.
  package final class BuiltJob {
    /// The job as its source made it, kept whole: taking its spec out would copy it.
    private var job: TransferJob
    /// Read in place (`_read`): a getter would copy the whole spec for each field read.
    package var spec: TransferSpec {
      _read { yield job.spec }
      _modify { yield &job.spec }
    }
    package var failure: TransferFailure? { job.failure }
    package var admission: (@Sendable () -> Admission)? { job.admission }
    /// While repairing: the bad ranges, each with the sources (indices in the job's sources) that
    /// sent bytes of it; a range goes to another source when one has room.
    package var repairBlame: [(extent: ByteExtent, sources: Set<Int>)] = []

    /// What the job has been through, and what it may do next (held while the job is in flight:
    /// a plan of a million jobs keeps no life for those not started or ended).
    package var life: JobLife

    package init(_ job: consuming TransferJob) {
      life = JobLife(spec: job.spec)
      self.job = job
    }
  }

  package struct JobState {
    /// Nil before the job's turn and after its end.
    package var built: BuiltJob?
    /// What the job has been through, and what it may do next.
    /// The job has ended (graph bookkeeping: its dependents are told once).
    package var finished = false
    package var waitingOn = 0
    package var dependents: [Int] = []
    package var key = 0
  }

  package let multi: MultiHandle
  private let source: TransferJobSource
  package var jobs: [JobState]
  package var admission: AdmissionControl
  package var timers = MinHeap<Timer>()
  package var active: [UnsafeMutableRawPointer: Transfer] = [:]
  private var remaining: Int
  private var lastTick: UInt64 = 0
  package var lastCheckpoint: UInt64 = 0
  /// The durable offset last reported per job, so that unchanged checkpoints are not resent.
  package var reported: [Int: Int64] = [:]
  /// When each download was last asked to sync (absent: not yet seen by the checkpoint pass).
  package var lastSync: [Int: UInt64] = [:]
  /// When each download was first seen by the checkpoint pass, and its bytes then (its rate).
  package var firstSeen: [Int: (time: UInt64, count: Int64)] = [:]
  /// The connections and TLS sessions of each connection identity, and the cookie store of each
  /// session that keeps cookies (`ShareKey`), shared by their transfers.
  package var shares: [ShareKey: SessionShare] = [:]
  /// Handles of finished transfers, per session, kept for the session's next transfers: a new
  /// easy handle and its buffers cost more than a reset.
  package var spareHandles: [Int: [EasyHandle]] = [:]
  package let cancelled = AtomicFlag()
  /// Whether the observer wants each response head (else only completions carry it).
  private var reportsResponses = true
  /// Downloads fetched in segments, by job.
  package var segmented: [Int: SegmentedDownload] = [:]
  package weak var observer: TransferObserver?
  /// How often (ms) each download is asked to sync its bytes to disk for a checkpoint.
  public var syncInterval: UInt64 = 1000
  /// HTTP requests sent so far: every transfer that sent one (retries, pieces, probes,
  /// revalidations), and each redirect libcurl followed on the way.
  public internal(set) var requestsSent = 0
  /// Whether `requestsSentByJob` is kept.
  public var countsRequestsPerJob = false
  /// `requestsSent` by job, when `countsRequestsPerJob` (jobs that sent none are absent).
  public internal(set) var requestsSentByJob: [Int: Int] = [:]

  package struct Timer: Comparable {
    package var due: UInt64
    package var job: Int
    package static func < (a: Timer, b: Timer) -> Bool { (a.due, a.job) < (b.due, b.job) }
  }

  public init(jobs source: TransferJobSource, globalLimit: Int, observer: TransferObserver) throws(CurlSetupError) {
    multi = try MultiHandle()
    self.source = source
    self.observer = observer
    jobs = Array(repeating: JobState(), count: source.count)
    remaining = jobs.count
    var maxHost = 0
    for index in jobs.indices { maxHost = max(maxHost, source.queue(of: index).hostLimit) }
    admission = AdmissionControl(
      globalLimit: globalLimit, connectionCap: maxHost > 0 ? maxHost : TransferDefaults.connectionsPerHost)
    // Jobs of one host tend to come together: the last queue is checked before the table.
    var previous: (session: Int, host: String, key: Int)?
    for index in jobs.indices {
      let queue = source.queue(of: index)
      let key: Int
      if let previous, previous.session == queue.session, previous.host == queue.host {
        key = previous.key
      } else {
        key = admission.queue(queue)
      }
      jobs[index].key = key
      let dependencies = source.dependencies(of: index)
      jobs[index].waitingOn = dependencies.count
      for dependency in dependencies { jobs[dependency].dependents.append(index) }
      previous = (queue.session, queue.host, key)
    }
    try multi.set(CURLMOPT_MAX_HOST_CONNECTIONS, admission.connectionCap)
    try multi.set(CURLMOPT_MAXCONNECTS, max(32, min(admission.globalLimit, Limits.count) * 2))
  }

  package var globalLimit: Int { admission.globalLimit }

  /// A job's transfer, built when first needed.
  package func built(_ job: Int) -> BuiltJob {
    if let built = jobs[job].built { return built }
    let built = BuiltJob(source.makeJob(job))
    jobs[job].built = built
    return built
  }

  /// Stops admitting work and aborts transfers in flight at the next turn of the loop.
  public func cancel() {
    canceller.cancel()
  }

  /// What another thread (a signal handler) holds to cancel the run.
  public var canceller: Canceller { Canceller(flag: cancelled, multi: multi.raw) }

  public var isCancelled: Bool { cancelled.isSet }

  /// Runs every job to its end (or until `cancel()`), then saves the sessions' cookies.
  public func run() throws(CurlSetupError) {
    defer { for share in shares.values { share.save() } }
    reportsResponses = observer?.wantsResponses ?? false
    for index in jobs.indices where jobs[index].waitingOn == 0 { enqueue(index) }
    var now = Self.now()
    fireTimers(now: now)
    admit(now: now)
    while remaining > 0 {
      if cancelled.isSet {
        abortAll()
        return
      }
      _ = try multi.perform()
      for (handle, code) in multi.finished() { finish(handle: handle, code: code) }
      announce()
      if remaining == 0 { break }
      // Refill before waiting: a new handle's first step is due at once, so the poll below
      // returns immediately instead of sleeping while slots are free.
      now = Self.now()
      fireTimers(now: now)
      admit(now: now)
      checkpoint(now: now)
      if now &- lastTick >= 100 {
        lastTick = now
        expireIdle(now: now)
        // Progress starts after the response (URLSession's order: response, then data).
        var ticks = active.values.filter { $0.announced && $0.piece == nil }.map {
          ActiveTransfer(job: $0.job, received: $0.received, expected: $0.expected)
        }
        for (job, download) in segmented {
          ticks.append(ActiveTransfer(job: job, received: download.written, expected: download.total))
        }
        observer?.transferTick(active: ticks)
      }
      if active.isEmpty && timers.isEmpty && !admission.hasWaiting && remaining > 0 {
        // Nothing can run: every remaining job waits on a dependency that will never finish.
        failStuckJobs()
        break
      }
      var wait: UInt64 = 100
      if let next = timers.peek { wait = min(wait, next.due > now ? next.due - now : 0) }
      if resumePaused(now: now) { wait = min(wait, 10) }
      try multi.poll(milliseconds: Int(wait))
    }
  }

  // MARK: - Admission

  package func enqueue(_ job: Int) {
    admission.push(job, queue: jobs[job].key)
  }

  private func admit(now: UInt64) {
    for job in segmented.keys { fillPieces(job, now: now) }
    while let job = admission.next() { start(job, now: now) }
  }

  package func start(_ job: Int, now: UInt64) {
    let built = built(job)
    let onDisk = !built.spec.extents.isEmpty && built.spec.resume?.total != nil && built.spec.target.path != nil
    perform(
      self.built(job).life.turnCame(
        now: now, refused: built.failure, policy: built.admission?(), segmentsOnDisk: onDisk),
      job, now: now)
  }

  /// Sends a job's request: a transfer added to the multi handle, counted against its caps.
  package func send(_ job: Int, budget: Interval?, interface: String?, now: UInt64) {
    let built = built(job)
    if let interface { built.spec.interface = interface }
    do {
      launch(try makeTransfer(job, spec: built.spec, timeout: budget), now: now)
    } catch let failure as TransferFailure {
      perform(self.built(job).life.couldNotStart(failure), job, now: now)
    } catch {
      perform(
        self.built(job).life.couldNotStart(TransferFailure(code: .internal, message: "\(error)")), job, now: now)
    }
  }

  /// A transfer made by `makeTransfer` starts: its session's rate budget, its idle clock, and the
  /// caps it counts against (a request or a piece alike).
  package func launch(_ transfer: Transfer, now: UInt64) {
    if let rate = transfer.spec.rateLimit {
      transfer.bucket = admission.bucket(session: transfer.spec.sessionKey, bytesPerSecond: rate)
    }
    transfer.lastMoved = 0
    transfer.lastMoveTime = now
    active[transfer.easy.raw] = transfer
    admission.started(session: transfer.spec.sessionKey, host: transfer.spec.hostKey)
  }

  /// A transfer leaves the multi handle and its caps (`launch` undone).
  package func land(_ transfer: Transfer) {
    multi.remove(transfer.easy)
    guard active.removeValue(forKey: transfer.easy.raw) != nil else { return }
    countRequests(of: transfer)
    admission.ended(session: transfer.spec.sessionKey, host: transfer.spec.hostKey)
  }

  /// Refills the sessions' rate budgets and continues the transfers that waited for them; returns
  /// whether any transfer is still waiting.
  private func resumePaused(now: UInt64) -> Bool {
    var any = false
    for bucket in admission.rateBuckets {
      bucket.refill(now: now)
      any = true
    }
    guard any else { return false }
    var waiting = false
    for transfer in active.values where transfer.paused {
      if let bucket = transfer.bucket, bucket.hasBudget {
        transfer.resume()
      } else {
        waiting = true
      }
    }
    return waiting
  }

  /// Milliseconds a job has spent, across runs (for the store).
  public func timeSpent(_ job: Int) -> Int64 {
    self.built(job).life.spent(now: Self.now())
  }

  /// Attempts a job has made in this run.
  public func attempts(_ job: Int) -> Int { jobs[job].built?.life.attempts ?? 0 }

  /// When the job's turn came in this run (`Engine.now()`), nil before it came.
  public func startTime(_ job: Int) -> UInt64? { jobs[job].built?.life.startedAt }

  /// Fails the attempts that moved no byte for their `timeouts.request` (checked ten times a
  /// second; a transfer paused by its session's rate limit is not idle).
  private func expireIdle(now: UInt64) {
    var idle: [(UnsafeMutableRawPointer, Interval)] = []
    for (handle, transfer) in active {
      // A transfer libcurl holds back for a connection or a stream (the host's connections or
      // the server's streams are all in use) has sent nothing yet: its idle time starts when it
      // starts. (Connecting and the TLS handshake have libcurl's own limit, CONNECTTIMEOUT.)
      if transfer.moved == 0, transfer.easy.info(offset: CURLINFO_PRETRANSFER_TIME_T) == 0 {
        transfer.lastMoveTime = now
        continue
      }
      if transfer.moved != transfer.lastMoved || transfer.paused {
        transfer.lastMoved = transfer.moved
        transfer.lastMoveTime = now
        continue
      }
      let limit = transfer.spec.requestTimeout
      if now &- transfer.lastMoveTime >= UInt64(clamping: limit.milliseconds) { idle.append((handle, limit)) }
    }
    for (handle, limit) in idle {
      active[handle]?.fail(
        TransferFailure(code: .timeout, message: "no data moved for \(limit) (timeouts.request)"))
      finish(handle: handle, code: CURLE_OPERATION_TIMEDOUT)
    }
  }

  /// A transfer with the share of its connection identity (`ShareKey`), added to the multi handle:
  /// on a spare handle of the session when one takes the receive buffer (`EasyHandle.accepts`),
  /// else on a new one.
  package func makeTransfer(_ job: Int, spec: consuming TransferSpec, timeout: Interval?) throws -> Transfer {
    let key = spec.sessionKey
    let buffer = Transfer.receiveBuffer(for: spec)
    let multiplexed = admission.multiplexedHosts.contains(spec.hostKey)
    let spare = spareHandles[key]?.popLast().flatMap {
      $0.accepts(receiveBuffer: buffer, multiplexed: multiplexed) ? $0 : nil
    }
    let cookieJar = spec.cookieJar
    let shareKey = ShareKey(spec)
    let transfer = try Transfer(
      job: job, spec: spec, timeout: timeout, easy: spare ?? EasyHandle(receiveBuffer: buffer))
    let share = shares[shareKey] ?? SessionShare(cookieJar: cookieJar)
    shares[shareKey] = share
    try share.attach(transfer.easy)
    try multi.add(transfer.easy)
    return transfer
  }

  package func complete(_ job: Int, _ outcome: Result<TransferResult, TransferFailure>) {
    guard !jobs[job].finished else { return }
    jobs[job].finished = true
    let life = self.built(job).life
    remaining -= 1
    let now = Self.now()
    observer?.transferCompleted(
      job, outcome: outcome, spent: life.spent(now: now), started: life.startedAt, ended: now)
    jobs[job].built = nil
    var settled = false
    for dependent in jobs[job].dependents where !jobs[dependent].finished {
      switch outcome {
      case .success:
        jobs[dependent].waitingOn -= 1
        guard jobs[dependent].waitingOn == 0 else { continue }
        // A job that waits for others starts only once the relay has placed what they fetched:
        // one wait when it becomes ready, not one for each job it waits for (a mirrored checksum
        // file waits for thousands).
        if !settled {
          observer?.settle()
          settled = true
        }
        enqueue(dependent)
      case .failure(let failure):
        complete(
          dependent,
          .failure(TransferFailure(code: .dependency, message: "a task it comes after failed (\(failure.code))")))
      }
    }
  }

  private func fireTimers(now: UInt64) {
    while let timer = timers.peek, timer.due <= now {
      _ = timers.pop()
      enqueue(timer.job)
    }
  }

  private func announce() {
    var candidates: [Transfer] = []
    for transfer in active.values {
      if transfer.piece != nil, !transfer.announced, transfer.parser.complete, let download = segmented[transfer.job] {
        // A piece's response is reported only when no stream before it was (a resumed download).
        if download.head != nil {
          transfer.announced = true
          continue
        }
        if transfer.head.isSuccess { download.head = transfer.head }
      }
      announce(transfer)
      if transfer.spec.segments > 1, transfer.piece == nil, transfer.admission != nil { candidates.append(transfer) }
    }
    for transfer in candidates { considerSegments(transfer) }
  }

  /// Reports a transfer's response head and its switch to a download, once each.
  package func announce(_ transfer: Transfer) {
    if !transfer.announced && transfer.parser.complete && transfer.head.isSuccess {
      transfer.announced = true
      if reportsResponses { observer?.transferReceivedResponse(transfer.job, head: transfer.head) }
    }
    noteProtocol(transfer)
    if transfer.becameDownload && !transfer.announcedDownload {
      transfer.announcedDownload = true
      observer?.transferBecameDownload(transfer.job)
    }
  }

  /// Keeps a finished transfer's handle for the session's next one (at most `globalLimit` each).
  package func recycle(_ easy: EasyHandle, session: Int) {
    guard spareHandles[session, default: []].count < globalLimit else { return }
    easy.reset()
    spareHandles[session, default: []].append(easy)
  }

  /// Once per transfer, when its final response head is complete: a host that answered a session
  /// over HTTP/2 carries that session's requests as streams of shared connections, and its queue
  /// is no longer held to `max_connections_per_host` requests at once (`AdmissionControl`).
  package func noteProtocol(_ transfer: Transfer) {
    guard !transfer.versionSeen, transfer.parser.complete else { return }
    transfer.versionSeen = true
    guard transfer.head.version == "HTTP/2" else { return }
    admission.multiplexed(session: transfer.spec.sessionKey, host: transfer.spec.hostKey)
  }

  /// Jobs that had not finished when the run was cancelled.
  public var unfinishedJobs: [Int] {
    jobs.indices.filter { !jobs[$0].finished }
  }

  private func failStuckJobs() {
    for index in jobs.indices where !jobs[index].finished {
      complete(index, .failure(TransferFailure(code: .dependency, message: "waits on a task that never ran")))
    }
  }

  package static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds / 1_000_000 }
}
