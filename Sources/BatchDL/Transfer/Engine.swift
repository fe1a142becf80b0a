import CCurl
import Dispatch
import Foundation

/// A request for the engine: what to send, and which jobs must succeed first.
public struct TransferJob: Sendable {
  public var spec: TransferSpec
  /// Indices of jobs that must complete successfully before this one starts.
  public var dependencies: [Int]
  /// A reason found before sending (an unsafe destination): the job fails with it when its turn
  /// comes, without a request.
  public var failure: TransferFailure?
  /// Asked when the job's turn comes (the network policy): go (maybe bound to an interface), wait
  /// and ask again, or end deferred.
  public var admission: (@Sendable () -> Admission)?

  public init(spec: TransferSpec, dependencies: [Int] = [], failure: TransferFailure? = nil) {
    self.spec = spec
    self.dependencies = dependencies
    self.failure = failure
  }
}

/// The engine's jobs: how many there are, which queue each waits in and what it waits for, all
/// known at the start; each job's transfer is built only when its turn comes, so that a run of
/// 100,000 requests holds the transfers of the jobs in flight, not 100,000 of them.
public protocol TransferJobSource: AnyObject {
  var count: Int { get }
  /// The session and host a job counts against, with their caps.
  func queue(of job: Int) -> TransferQueue
  /// Jobs that must succeed before this one starts.
  func dependencies(of job: Int) -> [Int]
  /// The job's transfer: asked once, on the engine's thread, when the job's turn comes (or when it
  /// ends without one: a failed dependency, a cancelled run).
  func makeJob(_ job: Int) -> TransferJob
}

/// The caps a job counts against: its session's `max_concurrent`, and per session and host
/// `max_connections_per_host`.
public struct TransferQueue: Sendable {
  public var session: Int
  public var host: String
  public var sessionLimit: Int
  public var hostLimit: Int

  public init(session: Int, host: String, sessionLimit: Int, hostLimit: Int) {
    self.session = session
    self.host = host
    self.sessionLimit = sessionLimit
    self.hostLimit = hostLimit
  }
}

/// What the network policy says when a job's turn comes.
public enum Admission: Sendable {
  case go(interface: String?)
  /// No allowed route now; ask again in a second (within the job's budget).
  case wait(reason: String)
  /// Not now: the job ends with code `policy` (a deferred task, not a failure).
  case `defer`(reason: String)
}

/// A transfer in flight, as progress displays see it.
public struct ActiveTransfer: Sendable {
  public var job: Int
  public var received: Int64
  /// The announced length, or -1.
  public var expected: Int64
}

/// What the engine tells the run about its jobs, on the engine's thread.
public protocol TransferObserver: AnyObject {
  /// The final response's head arrived (after redirects).
  func transferReceivedResponse(_ job: Int, head: ResponseHead)
  /// A data task's body moved to a file.
  func transferBecameDownload(_ job: Int)
  /// An attempt failed and will be tried again after `delay`.
  func transferWillRetry(_ job: Int, after delay: Interval, failure: TransferFailure)
  /// A source of a download with mirrors failed and was set aside (the job goes on from the next
  /// one, or fails when it was the last).
  func transferSourceFailed(_ job: Int, url: String, failure: TransferFailure)
  /// A segmented download started fetching bytes `start..<start+length` from `url` on a connection
  /// of its own.
  func transferSegmentStarted(_ job: Int, start: Int64, length: Int64, url: String)
  /// A complete download's pieces failed their digests (`message` says which); they are fetched
  /// again, the good ones stay.
  func transferPiecesFailed(_ job: Int, pieces: [Int], urls: [String], message: String)
  /// The job ended: it succeeded, or failed for good. `spent` is the time charged to it against
  /// `timeouts.resource`, across runs (ms); `started` is when its turn came in this run and `ended`
  /// now (`Engine.now()`), `started` nil when its turn never came.
  func transferCompleted(
    _ job: Int, outcome: Result<TransferResult, TransferFailure>, spent: Int64, started: UInt64?, ended: UInt64)
  /// Called about ten times a second with the transfers in flight.
  func transferTick(active: [ActiveTransfer])
  /// Bytes that reached the disk since the last call, for checkpoints (about once a second, and
  /// for every transfer in flight when the run is cancelled).
  func transferCheckpoints(_ checkpoints: [TransferCheckpoint])
  /// Returns once every earlier call has taken effect. The engine calls it before it starts the
  /// jobs that come after one that succeeded, so that they find its file in place.
  func settle()
  /// Whether `transferReceivedResponse` is wanted at all (read once, when the engine starts).
  var wantsResponses: Bool { get }
}

extension TransferObserver {
  public var wantsResponses: Bool { true }
  public func transferSourceFailed(_ job: Int, url: String, failure: TransferFailure) {}
  public func transferSegmentStarted(_ job: Int, start: Int64, length: Int64, url: String) {}
  public func transferPiecesFailed(_ job: Int, pieces: [Int], urls: [String], message: String) {}
}

/// A download's progress on disk, as a checkpoint records it.
public struct TransferCheckpoint: Sendable {
  public var job: Int
  /// The partial file.
  public var path: String
  public var durable: Int64
  /// What guards continuing its bytes (`If-Range`).
  public var validator: ResumeValidator
  public var etag: String?
  public var lastModified: String?
  public var total: Int64?
  public var effectiveURL: String
  /// A segmented download's extents on disk (`durable` is then the part from byte 0 without a gap).
  public var extents: [ByteExtent] = []
}

/// Runs jobs on one libcurl multi handle on the calling thread (DESIGN.md): admit work up to the
/// caps (`AdmissionControl`), perform, collect finished transfers, and carry out what each job's
/// `JobLife` decides of them (send again, retry, switch source, repair, complete), poll.
///
/// Caps: at most `globalLimit` transfers at once; per session, `sessionLimit`; per session and
/// host, `hostLimit`. Jobs are admitted in the order given (the plan's order) among those whose
/// caps allow it.
public final class Engine {
  /// A job whose turn came: its transfer (changed by retries and redirects), until it ends.
  final class BuiltJob {
    /// The job as its source made it, kept whole: taking its spec out would copy it.
    private var job: TransferJob
    var spec: TransferSpec {
      get { job.spec }
      _modify { yield &job.spec }
    }
    var failure: TransferFailure? { job.failure }
    var admission: (@Sendable () -> Admission)? { job.admission }
    /// While repairing: the bad ranges, each with the sources (indices in the job's sources) that
    /// sent bytes of it; a range goes to another source when one has room.
    var repairBlame: [(extent: ByteExtent, sources: Set<Int>)] = []

    init(_ job: consuming TransferJob) {
      self.job = job
    }
  }

  struct JobState {
    /// Nil before the job's turn and after its end.
    var built: BuiltJob?
    /// What the job has been through, and what it may do next.
    var life = JobLife(
      rules: JobLife.Rules(
        retry: RetryPolicy(attempts: 1, backoff: Interval(milliseconds: 0), maxBackoff: Interval(milliseconds: 0))))
    var waitingOn = 0
    var dependents: [Int] = []
    var key = 0
  }

  let multi: MultiHandle
  private let source: TransferJobSource
  var jobs: [JobState]
  var admission: AdmissionControl
  private var timers = MinHeap<Timer>()
  var active: [UnsafeMutableRawPointer: Transfer] = [:]
  private var remaining: Int
  private var lastTick: UInt64 = 0
  private var lastCheckpoint: UInt64 = 0
  /// The durable offset last reported per job, so that unchanged checkpoints are not resent.
  private var reported: [Int: Int64] = [:]
  /// When each download was last asked to sync (absent: not yet seen by the checkpoint pass).
  private var lastSync: [Int: UInt64] = [:]
  /// When each download was first seen by the checkpoint pass, and its bytes then (its rate).
  private var firstSeen: [Int: (time: UInt64, count: Int64)] = [:]
  /// Each session's cookie jar, DNS and TLS sessions, shared by its transfers.
  var shares: [Int: SessionShare] = [:]
  /// Handles of finished transfers, per session, kept for the session's next transfers: a new
  /// easy handle and its buffers cost more than a reset.
  var spareHandles: [Int: [EasyHandle]] = [:]
  let cancelled = Flag()
  /// Whether the observer wants each response head (else only completions carry it).
  private var reportsResponses = true
  /// Downloads fetched in segments, by job.
  var segmented: [Int: SegmentedDownload] = [:]
  weak var observer: TransferObserver?
  /// How often (ms) each download is asked to sync its bytes to disk for a checkpoint.
  public var syncInterval: UInt64 = 1000

  private struct Timer: Comparable {
    var due: UInt64
    var job: Int
    static func < (a: Timer, b: Timer) -> Bool { (a.due, a.job) < (b.due, b.job) }
  }

  public init(jobs source: TransferJobSource, globalLimit: Int, observer: TransferObserver) throws(CurlSetupError) {
    multi = try MultiHandle()
    self.source = source
    self.observer = observer
    jobs = Array(repeating: JobState(), count: source.count)
    remaining = jobs.count
    var maxHost = 0
    for index in jobs.indices { maxHost = max(maxHost, source.queue(of: index).hostLimit) }
    admission = AdmissionControl(globalLimit: globalLimit, connectionCap: maxHost > 0 ? maxHost : 6)
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

  var globalLimit: Int { admission.globalLimit }

  /// A job's transfer, built when first needed.
  func built(_ job: Int) -> BuiltJob {
    if let built = jobs[job].built { return built }
    let built = BuiltJob(source.makeJob(job))
    jobs[job].built = built
    jobs[job].life.learn(built.spec)
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

  func enqueue(_ job: Int) {
    admission.push(job, queue: jobs[job].key)
  }

  private func admit(now: UInt64) {
    for job in segmented.keys { fillPieces(job, now: now) }
    while let job = admission.next() { start(job, now: now) }
  }

  private func start(_ job: Int, now: UInt64) {
    let built = built(job)
    let spec = built.spec
    let onDisk = !spec.extents.isEmpty && spec.resume?.total != nil && spec.target.path != nil
    perform(
      jobs[job].life.turnCame(now: now, refused: built.failure, policy: built.admission?(), segmentsOnDisk: onDisk),
      job, now: now)
  }

  /// Sends a job's request: a transfer added to the multi handle, counted against its caps.
  private func send(_ job: Int, budget: Interval?, interface: String?, now: UInt64) {
    let built = built(job)
    if let interface { built.spec.interface = interface }
    do {
      launch(try makeTransfer(job, spec: built.spec, timeout: budget), now: now)
    } catch let failure as TransferFailure {
      perform(jobs[job].life.couldNotStart(failure), job, now: now)
    } catch {
      perform(
        jobs[job].life.couldNotStart(TransferFailure(code: .internal, message: "\(error)")), job, now: now)
    }
  }

  /// A transfer made by `makeTransfer` starts: its session's rate budget, its idle clock, and the
  /// caps it counts against (a request or a piece alike).
  func launch(_ transfer: Transfer, now: UInt64) {
    if let rate = transfer.spec.rateLimit {
      transfer.bucket = admission.bucket(session: transfer.spec.sessionKey, bytesPerSecond: rate)
    }
    transfer.lastMoved = 0
    transfer.lastMoveTime = now
    active[transfer.easy.raw] = transfer
    admission.started(session: transfer.spec.sessionKey, host: transfer.spec.hostKey)
  }

  /// A transfer leaves the multi handle and its caps (`launch` undone).
  func land(_ transfer: Transfer) {
    multi.remove(transfer.easy)
    guard active.removeValue(forKey: transfer.easy.raw) != nil else { return }
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
    jobs[job].life.spent(now: Self.now())
  }

  /// Attempts a job has made in this run.
  public func attempts(_ job: Int) -> Int { jobs[job].life.attempts }

  /// When the job's turn came in this run (`Engine.now()`), nil before it came.
  public func startTime(_ job: Int) -> UInt64? { jobs[job].life.startedAt }

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

  // MARK: - Completion

  private func finish(handle: UnsafeMutableRawPointer, code: CURLcode) {
    guard let transfer = active[handle] else { return }
    land(transfer)
    defer { recycle(transfer.easy, session: transfer.spec.sessionKey) }
    noteProtocol(transfer)
    let job = transfer.job
    lastSync[job] = nil
    firstSeen[job] = nil
    if let piece = transfer.piece {
      // A piece of a download that ended already (it failed, or went on as one stream) is dropped.
      if let download = segmented[job] {
        finishPiece(job, transfer, piece, download, code: code)
        return
      }
      if transfer.isRangedPiece { return }
    }
    let cancelled = cancelled.isSet
    var end: JobLife.AttemptEnd
    if code == CURLE_OK, !cancelled, let location = transfer.redirect {
      end = JobLife.AttemptEnd(.failure(TransferFailure(code: .tooManyRedirects, message: "")))
      end.redirect = (location, transfer.head.status)
    } else {
      jobs[job].life.received(transfer.bodyBytesReceived)
      let life = jobs[job].life
      end = JobLife.AttemptEnd(transfer.outcome(code, attempts: life.attempts, transferred: life.transferred))
      end.cancelled = cancelled
      end.bodyBytes = transfer.bodyBytesReceived
      end.responseComplete = transfer.parser.complete
      end.multiplexed = Self.mayMultiplex(transfer.spec) || admission.multiplexedHosts.contains(transfer.spec.hostKey)
      end.retryAfterSeconds = Int64(transfer.easy.info(offset: CURLINFO_RETRY_AFTER))
      end.resumePoint = transfer.resumePoint
      end.wroteFile = transfer.fileSink != nil
    }
    perform(jobs[job].life.attemptEnded(end, now: Self.now()), job, now: Self.now(), transfer: transfer, end: end)
  }

  /// Carries out what a job's life decided, in order. `transfer` and `end`: the attempt of one
  /// stream the decision came from.
  func perform(
    _ actions: [JobLife.Action], _ job: Int, now: UInt64, transfer: Transfer? = nil, end: JobLife.AttemptEnd? = nil,
    writers: [PieceWriter] = [], validator: ResumeValidator = .digest
  ) {
    for action in actions {
      switch action {
      case .sourceFailed(let url, let failure):
        observer?.transferSourceFailed(job, url: url, failure: failure)
      case .piecesFailed(let pieces, let urls, let message):
        observer?.transferPiecesFailed(job, pieces: pieces, urls: urls, message: message)
      case .willRetry(let delay, let failure):
        observer?.transferWillRetry(job, after: delay, failure: failure)
      case .send(let budget, let interface):
        send(job, budget: budget, interface: interface, now: now)
      case .resumeSegments:
        let spec = built(job).spec
        guard let resume = spec.resume, let total = resume.total, let path = spec.target.path else { continue }
        continueSegmented(job, path: path, total: total, validator: resume.validator, now: now)
      case .askPolicyAgain(let due):
        timers.push(Timer(due: due, job: job))
      case .follow(let location, let status):
        let built = built(job)
        switch built.spec.following(location, status: status) {
        case .success(let next):
          built.spec = next
          start(job, now: Self.now())
        case .failure(let failure):
          perform(jobs[job].life.redirectRefused(failure), job, now: now)
        }
      case .sendAgain(let fromStart):
        if fromStart { built(job).spec.resume = nil }
        enqueue(job)
      case .restartWhole:
        let built = built(job)
        built.spec.resume = nil
        built.spec.extents = []
        enqueue(job)
      case .check(let result):
        let spec = built(job).spec
        let writers =
          end != nil
          ? [PieceWriter(extent: ByteExtent(start: 0, end: result.size), source: jobs[job].life.sources?.current ?? 0)]
          : writers
        let pieces =
          cancelled.isSet
          ? PieceVerdict.unchecked
          : PieceVerdict(result, spec: spec, writers: writers, validator: transfer?.validator ?? validator)
        var problem: TransferFailure?
        if case .failed = pieces {
        } else if case .bad = pieces {
        } else {
          problem = SourceList.contentProblem(result, spec: spec)
        }
        perform(
          jobs[job].life.contentChecked(result, pieces: pieces, problem: problem, end: end, now: Self.now()), job,
          now: now, transfer: transfer, end: end)
      case .retry(let due, let resume):
        let built = built(job)
        built.spec.resume = resume
        built.spec.conditional = nil
        timers.push(Timer(due: due, job: job))
      case .switchSource(let next, let resume, let extents):
        let built = built(job)
        built.spec.resume = resume
        if let extents {
          built.spec.extents = extents
          built.spec.rangeEnd = nil
        }
        switchSource(job, to: next)
      case .repair(let repair):
        let built = built(job)
        if let next = repair.source {
          built.spec.url = next.url
          built.spec.hostKey = next.hostKey
          built.spec.sourceHeaders = next.headers
        }
        built.spec.extents = repair.kept
        built.spec.rangeEnd = nil
        built.spec.conditional = nil
        built.spec.resume = repair.resume
        built.repairBlame = repair.blame
        requeue(job)
      case .keepPartial:
        if let transfer, let sink = transfer.fileSink, let point = checkpoint(transfer, durable: sink.syncNow()) {
          observer?.transferCheckpoints([point])
        }
      case .complete(let outcome):
        if case .success = outcome, let transfer, end != nil { announce(transfer) }
        complete(job, outcome)
      }
    }
  }

  /// Goes on from the next source: its own retries and the caps of its host (the kept bytes are
  /// the life's to decide: `JobLife`).
  func switchSource(_ job: Int, to next: TransferSource) {
    let built = built(job)
    built.spec.conditional = nil
    built.spec.url = next.url
    built.spec.hostKey = next.hostKey
    built.spec.sourceHeaders = next.headers
    requeue(job)
  }

  /// Whether a request may go over HTTP/2 and be sent again safely: before the first response of
  /// its host says so, its first requests may already have shared a connection that a GOAWAY
  /// ended. Only a GET or HEAD: whether an unknown server processed anything else is not known.
  static func mayMultiplex(_ spec: TransferSpec) -> Bool {
    let method = spec.method.uppercased()
    guard method == "GET" || method == "HEAD" else { return false }
    return spec.httpVersion == .http2 || (spec.httpVersion == .auto && spec.url.utf8.starts(with: "https:".utf8))
  }

  /// Queues a job again on the host of its spec's URL.
  func requeue(_ job: Int) {
    let built = built(job)
    jobs[job].key = admission.queue(
      TransferQueue(
        session: built.spec.sessionKey, host: built.spec.hostKey, sessionLimit: built.spec.sessionLimit,
        hostLimit: built.spec.hostLimit))
    enqueue(job)
  }

  /// A transfer with its session's share, added to the multi handle: on a spare handle of the
  /// session when one takes the receive buffer (`EasyHandle.accepts`), else on a new one.
  func makeTransfer(_ job: Int, spec: TransferSpec, timeout: Interval?) throws -> Transfer {
    let key = spec.sessionKey
    let buffer = Transfer.receiveBuffer(for: spec)
    let multiplexed = admission.multiplexedHosts.contains(spec.hostKey)
    let spare = spareHandles[key]?.popLast().flatMap {
      $0.accepts(receiveBuffer: buffer, multiplexed: multiplexed) ? $0 : nil
    }
    let transfer = try Transfer(
      job: job, spec: spec, timeout: timeout, easy: spare ?? EasyHandle(receiveBuffer: buffer))
    let share = shares[key] ?? SessionShare(cookieJar: spec.cookieJar)
    shares[key] = share
    try share.attach(transfer.easy)
    try multi.add(transfer.easy)
    return transfer
  }

  func complete(_ job: Int, _ outcome: Result<TransferResult, TransferFailure>) {
    guard jobs[job].life.finish() else { return }
    remaining -= 1
    let now = Self.now()
    observer?.transferCompleted(
      job, outcome: outcome, spent: jobs[job].life.spent(now: now), started: jobs[job].life.startedAt, ended: now)
    jobs[job].built = nil
    if case .success = outcome, !jobs[job].dependents.isEmpty { observer?.settle() }
    for dependent in jobs[job].dependents where !jobs[dependent].life.finished {
      switch outcome {
      case .success:
        jobs[dependent].waitingOn -= 1
        if jobs[dependent].waitingOn == 0 { enqueue(dependent) }
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
  private func announce(_ transfer: Transfer) {
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
  private func recycle(_ easy: EasyHandle, session: Int) {
    guard spareHandles[session, default: []].count < globalLimit else { return }
    easy.reset()
    spareHandles[session, default: []].append(easy)
  }

  /// Once per transfer, when its final response head is complete: a host that answered a session
  /// over HTTP/2 carries that session's requests as streams of shared connections, and its queue
  /// is no longer held to `max_connections_per_host` requests at once (`AdmissionControl`).
  private func noteProtocol(_ transfer: Transfer) {
    guard !transfer.versionSeen, transfer.parser.complete else { return }
    transfer.versionSeen = true
    guard transfer.head.version == "HTTP/2" else { return }
    admission.multiplexed(session: transfer.spec.sessionKey, host: transfer.spec.hostKey)
  }

  /// Keeps checkpoints close behind the network: each resumable download is asked to sync every
  /// `syncInterval` ms, and what reached the disk is reported at most every 250 ms, so that a kill
  /// loses about a second of transfer at most. A sync is left out when the download should end
  /// within a quarter of the interval: its result will replace the checkpoint. (A trigger on
  /// unsynced bytes would sync without pause at loopback speeds, and cost more than it saves.)
  private func checkpoint(now: UInt64) {
    var points: [TransferCheckpoint] = []
    var downloads: [SegmentedDownload] = []
    for (job, download) in segmented {
      _ = download.applySynced()
      if now &- download.lastHash >= 20 {
        download.lastHash = now
        download.advanceHash()
      }
      let extents = download.syncedExtents
      if extents != download.reported {
        points.append(checkpoint(job, download, extents: extents))
        downloads.append(download)
      }
      if now &- download.lastSync >= syncInterval {
        download.lastSync = now
        download.requestSync(positions: download.pieces.map { $0.transfer?.fileSink?.handedOver ?? $0.next })
      }
    }
    for transfer in active.values where transfer.piece == nil {
      guard let sink = transfer.fileSink, transfer.validator != nil else { continue }
      let durable = sink.durable
      if durable > (reported[transfer.job] ?? 0), let point = checkpoint(transfer, durable: durable) {
        points.append(point)
      }
      // The first sync comes one interval after the transfer starts: a file that finishes sooner
      // never pays for one.
      guard let last = lastSync[transfer.job] else {
        lastSync[transfer.job] = now
        firstSeen[transfer.job] = (now, sink.count)
        continue
      }
      if sink.count > durable, now &- last >= syncInterval, !endsSoon(transfer, sink: sink, now: now) {
        lastSync[transfer.job] = now
        sink.requestSync()
      }
    }
    guard !points.isEmpty, now &- lastCheckpoint >= 250 else { return }
    lastCheckpoint = now
    for point in points { reported[point.job] = point.durable }
    for download in downloads { download.reported = download.syncedExtents }
    observer?.transferCheckpoints(points)
  }

  /// Whether, at its rate so far, a download of known length ends within a quarter of `syncInterval`.
  private func endsSoon(_ transfer: Transfer, sink: FileSink, now: UInt64) -> Bool {
    guard let total = transfer.totalLength, let seen = firstSeen[transfer.job], now > seen.time else { return false }
    let rate = Double(sink.count - seen.count) / Double(now - seen.time)
    guard rate > 0 else { return false }
    return Double(total - sink.count) / rate < Double(syncInterval) / 4
  }

  private func checkpoint(_ transfer: Transfer, durable: Int64) -> TransferCheckpoint? {
    guard let sink = transfer.fileSink, let validator = transfer.validator, durable > 0 else { return nil }
    let head = transfer.head
    return TransferCheckpoint(
      job: transfer.job, path: sink.path, durable: durable, validator: validator, etag: head.strongETag,
      lastModified: head["last-modified"], total: transfer.totalLength,
      effectiveURL: transfer.easy.info(string: CURLINFO_EFFECTIVE_URL) ?? transfer.spec.url)
  }

  /// Stops every transfer in flight, after syncing what each wrote and reporting it as a checkpoint.
  private func abortAll() {
    var points: [TransferCheckpoint] = []
    for transfer in active.values {
      multi.remove(transfer.easy)
      if let piece = transfer.piece {
        // A segmented download's first stream: its buffers go to the file before the sync below.
        if let sink = transfer.fileSink {
          _ = sink.syncNow()
          piece.next = max(piece.next, min(sink.count, piece.end))
        }
        continue
      }
      if let sink = transfer.fileSink, let point = checkpoint(transfer, durable: sink.syncNow()) {
        points.append(point)
      }
    }
    for (job, download) in segmented {
      download.syncNow()
      points.append(checkpoint(job, download, extents: download.syncedExtents))
    }
    if !points.isEmpty { observer?.transferCheckpoints(points) }
    active.removeAll()
    admission.endedAll()
  }

  /// Jobs that had not finished when the run was cancelled.
  public var unfinishedJobs: [Int] {
    jobs.indices.filter { !jobs[$0].life.finished }
  }

  private func failStuckJobs() {
    for index in jobs.indices where !jobs[index].life.finished {
      complete(index, .failure(TransferFailure(code: .dependency, message: "waits on a task that never ran")))
    }
  }

  static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds / 1_000_000 }
}
