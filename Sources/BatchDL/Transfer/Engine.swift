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
/// caps, perform, collect finished transfers, retry what a retry can fix, poll.
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
    /// The URL and its mirrors, for a download that has mirrors.
    let sources: SourceList?
    /// The URL the job was made with (before redirects): the one source of a download without
    /// mirrors, which `pieces_failed` names.
    let firstURL: String
    /// Attempts made on earlier sources: each source has the retries of `spec.retry`.
    var attemptsBefore = 0
    /// The download is fetched as one stream from now on (too small, no ranges, a source that
    /// answered a range with the whole file or with other bytes, a digest that failed).
    var segmentsOff = false
    /// A segmented file whose digest failed was fetched again whole.
    var refetchedWhole = false
    /// Times pieces that failed their digests were fetched again.
    var pieceRepairs = 0
    /// The pieces that failed are being fetched again: the rest of the file is kept as extents,
    /// whatever `segmentsOff` says.
    var repairing = false
    /// While repairing: the bad ranges, each with the sources (indices in `sources`) that sent
    /// bytes of it; a range goes to another source when one has room.
    var repairBlame: [(extent: ByteExtent, sources: Set<Int>)] = []

    init(_ job: consuming TransferJob) {
      sources =
        job.spec.mirrors.isEmpty
        ? nil : SourceList([TransferSource(url: job.spec.url, hostKey: job.spec.hostKey)] + job.spec.mirrors)
      firstURL = job.spec.url
      self.job = job
    }
  }

  struct JobState {
    /// Nil before the job's turn and after its end.
    var built: BuiltJob?
    var waitingOn = 0
    var dependents: [Int] = []
    var attempts = 0
    var startedAt: UInt64?
    var finished = false
    var key = 0
    /// Body bytes received from the network in this run, over all attempts.
    var transferred: Int64 = 0
    /// Redirects followed by the engine in the current attempt.
    var redirects = 0
    /// Attempts lost with a multiplexed connection before any response, not charged (at most
    /// `connectionLossLimit`).
    var connectionLosses = 0
  }

  let multi: MultiHandle
  private let source: TransferJobSource
  var jobs: [JobState]
  let globalLimit: Int
  weak var observer: TransferObserver?

  private var keyQueues: [MinHeap<Int>] = []
  private var keyHost: [String] = []
  private var keySession: [Int] = []
  private var keyHostLimit: [Int] = []
  private var keySessionLimit: [Int] = []
  private var readyKeys = MinHeap<HeapEntry>()
  private var queuedHead: [Int?] = []
  private var blockedKeys: Set<Int> = []
  var hostActive: [String: Int] = [:]
  /// Hosts that answered any session over HTTP/2: a handle whose receive buffer libcurl kept may
  /// take a transfer to them (`EasyHandle.accepts`).
  var multiplexedHosts: Set<String> = []
  /// The queues (session and host) whose host answered that session over HTTP/2: their requests
  /// share connections as streams, so that `max_connections_per_host` caps connections (libcurl's
  /// `CURLMOPT_MAX_HOST_CONNECTIONS`) and no longer the requests in flight, which `max_concurrent`
  /// caps. Only where libcurl's cap is the session's: libcurl has one cap for all sessions, the
  /// largest, and a session with a smaller one keeps it as a cap on requests.
  private var multiplexedQueues: Set<QueueName> = []
  /// libcurl's cap on connections to one host: the largest `max_connections_per_host` of the run.
  private var connectionCap = 6
  var sessionActive: [Int: Int] = [:]
  private var timers = MinHeap<Timer>()
  var active: [UnsafeMutableRawPointer: Transfer] = [:]
  private var remaining: Int
  private var lastTick: UInt64 = 0
  private var lastCheckpoint: UInt64 = 0
  /// Durable byte counts already reported, per job.
  private var reported: [Int: Int64] = [:]
  /// Milliseconds between syncs of a download.
  public var syncInterval: UInt64 = 1000
  private var lastSync: [Int: UInt64] = [:]
  /// When each download was first seen by `checkpoint(now:)`, and its byte count then (for its rate).
  private var firstSeen: [Int: (time: UInt64, count: Int64)] = [:]
  /// Per-session byte budgets for `rate_limit`.
  var buckets: [Int: RateBucket] = [:]
  /// Per-session libcurl shares: cookies and TLS sessions.
  var shares: [Int: SessionShare] = [:]
  /// Reset easy handles of finished transfers, per session: reusing one spares libcurl setting up
  /// a handle (about 12,000 instructions of a small file's 290,000, bench/callgrind).
  var spareHandles: [Int: [EasyHandle]] = [:]
  let cancelled = Flag()
  /// Whether the observer wants each response head (else only completions carry it).
  private var reportsResponses = true
  /// The downloads being fetched as ranges, by job.
  var segmented: [Int: SegmentedDownload] = [:]

  private struct HeapEntry: Comparable {
    var head: Int
    var key: Int
    static func < (a: HeapEntry, b: HeapEntry) -> Bool { (a.head, a.key) < (b.head, b.key) }
  }

  private struct Timer: Comparable {
    var due: UInt64
    var job: Int
    static func < (a: Timer, b: Timer) -> Bool { (a.due, a.job) < (b.due, b.job) }
  }

  public init(jobs source: TransferJobSource, globalLimit: Int, observer: TransferObserver) throws(CurlSetupError) {
    multi = try MultiHandle()
    self.source = source
    self.globalLimit = max(1, globalLimit)
    self.observer = observer
    jobs = Array(repeating: JobState(), count: source.count)
    remaining = jobs.count
    var maxHost = 0
    // Jobs of one host tend to come together: the last queue is checked before the table.
    var previous: (name: QueueName, key: Int)?
    for index in jobs.indices {
      let queue = source.queue(of: index)
      let name = QueueName(session: queue.session, host: queue.host)
      let key: Int
      if let previous, previous.name == name {
        key = previous.key
      } else {
        key = queueKey(queue)
        maxHost = max(maxHost, queue.hostLimit)
      }
      jobs[index].key = key
      let dependencies = source.dependencies(of: index)
      jobs[index].waitingOn = dependencies.count
      for dependency in dependencies { jobs[dependency].dependents.append(index) }
      previous = (name, key)
    }
    connectionCap = maxHost > 0 ? maxHost : 6
    try multi.set(CURLMOPT_MAX_HOST_CONNECTIONS, connectionCap)
    try multi.set(CURLMOPT_MAXCONNECTS, max(32, min(self.globalLimit, Limits.count) * 2))
  }

  private struct QueueName: Hashable {
    var session: Int
    var host: String
  }

  /// The queue of each session and host.
  private var queueKeys: [QueueName: Int] = [:]

  /// The queue of a session and host, made on first use.
  private func queueKey(_ queue: TransferQueue) -> Int {
    let name = QueueName(session: queue.session, host: queue.host)
    if let key = queueKeys[name] { return key }
    let key = keyQueues.count
    queueKeys[name] = key
    keyQueues.append(MinHeap())
    keyHost.append(name.host)
    keySession.append(name.session)
    keyHostLimit.append(
      multiplexedQueues.contains(name) && queue.hostLimit == connectionCap ? Int.max : queue.hostLimit)
    keySessionLimit.append(queue.sessionLimit)
    queuedHead.append(nil)
    return key
  }

  /// A job's transfer, built when first needed.
  func built(_ job: Int) -> BuiltJob {
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
      if active.isEmpty && timers.isEmpty && readyKeys.isEmpty && blockedKeys.isEmpty && remaining > 0 {
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
    let key = jobs[job].key
    keyQueues[key].push(job)
    if blockedKeys.contains(key) { return }
    if let head = queuedHead[key], head <= job { return }
    queuedHead[key] = job
    readyKeys.push(HeapEntry(head: job, key: key))
  }

  private func isBlocked(_ key: Int) -> Bool {
    guard keyQueues[key].peek != nil else { return false }
    return hostActive[keyHost[key], default: 0] >= keyHostLimit[key]
      || sessionActive[keySession[key], default: 0] >= keySessionLimit[key]
  }

  private func admit(now: UInt64) {
    for job in segmented.keys { fillPieces(job, now: now) }
    while active.count < globalLimit, let entry = readyKeys.pop() {
      let key = entry.key
      guard queuedHead[key] == entry.head, keyQueues[key].peek == entry.head else { continue }
      queuedHead[key] = nil
      if isBlocked(key) {
        blockedKeys.insert(key)
        continue
      }
      guard let job = keyQueues[key].pop() else { continue }
      if let next = keyQueues[key].peek {
        queuedHead[key] = next
        readyKeys.push(HeapEntry(head: next, key: key))
      }
      start(job, now: now)
    }
  }

  func unblock() {
    for key in blockedKeys {
      if let head = keyQueues[key].peek {
        queuedHead[key] = head
        readyKeys.push(HeapEntry(head: head, key: key))
      }
    }
    blockedKeys.removeAll()
  }

  private func start(_ job: Int, now: UInt64) {
    let built = built(job)
    if let failure = built.failure {
      complete(job, .failure(failure))
      return
    }
    if let admission = built.admission {
      switch admission() {
      case .go(let interface):
        built.spec.interface = interface
      case .wait(let reason):
        if jobs[job].startedAt == nil { jobs[job].startedAt = now }
        let limit = built.spec.resourceTimeout?.milliseconds ?? 600_000
        guard spent(job, now: now) < limit else {
          complete(job, .failure(TransferFailure(code: .policy, message: reason + "; stopped waiting")))
          return
        }
        timers.push(Timer(due: now + 1000, job: job))
        return
      case .defer(let reason):
        complete(job, .failure(TransferFailure(code: .policy, message: reason)))
        return
      }
    }
    if jobs[job].startedAt == nil { jobs[job].startedAt = now }
    var budget: Interval?
    if let resource = built.spec.resourceTimeout {
      let left = resource.milliseconds - spent(job, now: now)
      guard left > 0 else {
        complete(job, .failure(Self.resourceTimeout(built.spec, attempts: jobs[job].attempts)))
        return
      }
      budget = Interval(milliseconds: left)
    }
    jobs[job].attempts += 1
    if built.repairing || (!built.spec.extents.isEmpty && !built.segmentsOff), let resume = built.spec.resume,
      let total = resume.total, let path = built.spec.target.path
    {
      continueSegmented(job, path: path, total: total, validator: resume.validator, now: now)
      return
    }
    let transfer: Transfer
    do {
      transfer = try makeTransfer(job, spec: built.spec, timeout: budget)
    } catch let failure as TransferFailure {
      var failure = failure
      failure.attempts = jobs[job].attempts
      complete(job, .failure(failure))
      return
    } catch {
      complete(job, .failure(TransferFailure(code: .internal, message: "\(error)", attempts: jobs[job].attempts)))
      return
    }
    if let rate = built.spec.rateLimit {
      let key = built.spec.sessionKey
      let bucket = buckets[key] ?? RateBucket(bytesPerSecond: rate)
      buckets[key] = bucket
      transfer.bucket = bucket
    }
    transfer.lastMoved = 0
    transfer.lastMoveTime = now
    active[transfer.easy.raw] = transfer
    hostActive[built.spec.hostKey, default: 0] += 1
    sessionActive[built.spec.sessionKey, default: 0] += 1
  }

  /// Refills the sessions' rate budgets and continues the transfers that waited for them; returns
  /// whether any transfer is still waiting.
  private func resumePaused(now: UInt64) -> Bool {
    guard !buckets.isEmpty else { return false }
    for bucket in buckets.values { bucket.refill(now: now) }
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

  /// Whether a job keeps waiting for the network after `failure` (`waits_for_connectivity`): only
  /// for connect and DNS failures, within the resource budget, or ten minutes without one.
  private func waitsForConnectivity(_ job: Int, _ failure: TransferFailure) -> Bool {
    let spec = built(job).spec
    guard spec.waitsForConnectivity, failure.code == .connect || failure.code == .dns else { return false }
    let limit = spec.resourceTimeout?.milliseconds ?? 600_000
    return spent(job, now: Self.now()) < limit
  }

  /// Time charged to a job against `timeouts.resource`: earlier runs plus this one so far.
  private func spent(_ job: Int, now: UInt64) -> Int64 {
    built(job).spec.spentBefore + Int64(now &- (jobs[job].startedAt ?? now))
  }

  /// Milliseconds a job has spent, across runs (for the store).
  public func timeSpent(_ job: Int) -> Int64 {
    spent(job, now: Self.now())
  }

  /// Attempts a job has made in this run.
  public func attempts(_ job: Int) -> Int { jobs[job].attempts }

  /// When the job's turn came in this run (`Engine.now()`), nil before it came.
  public func startTime(_ job: Int) -> UInt64? { jobs[job].startedAt }

  private static func resourceTimeout(_ spec: TransferSpec, attempts: Int) -> TransferFailure {
    TransferFailure(
      code: .timeout,
      message: "timeouts.resource (\(spec.resourceTimeout?.description ?? "")) spent before the task could finish",
      attempts: attempts)
  }

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
    guard let transfer = active.removeValue(forKey: handle) else { return }
    multi.remove(transfer.easy)
    defer { recycle(transfer.easy, session: transfer.spec.sessionKey) }
    noteProtocol(transfer)
    let job = transfer.job
    lastSync[job] = nil
    firstSeen[job] = nil
    let built = built(job)
    hostActive[transfer.spec.hostKey, default: 1] -= 1
    sessionActive[transfer.spec.sessionKey, default: 1] -= 1
    unblock()
    if let piece = transfer.piece {
      // A piece of a download that ended already (it failed, or went on as one stream) is dropped.
      if let download = segmented[job] {
        finishPiece(job, transfer, piece, download, code: code)
        return
      }
      if transfer.isRangedPiece { return }
    }
    if code == CURLE_OK, !cancelled.isSet, let location = transfer.redirect {
      follow(job, to: location, status: transfer.head.status)
      return
    }
    jobs[job].redirects = 0
    jobs[job].transferred += transfer.bodyBytesReceived
    built.sources?.received(transfer.bodyBytesReceived)
    var outcome = transfer.outcome(code, attempts: jobs[job].attempts, transferred: jobs[job].transferred)
    if built.sources != nil || built.spec.pieces != nil, !cancelled.isSet, case .success(var result) = outcome {
      result.sources = built.sources?.used ?? []
      outcome = .success(result)
      let writer = PieceWriter(extent: ByteExtent(start: 0, end: result.size), source: built.sources?.current ?? 0)
      switch checkPieces(job, result, writers: [writer], validator: transfer.validator ?? .digest) {
      case .repairing:
        return
      case .failed(let failure):
        outcome = .failure(failure)
      case .verified, .unchecked:
        if let problem = SourceList.contentProblem(result, spec: built.spec) {
          if built.sources?.refetchWhole(after: problem, result) ?? false {
            // Bytes of two sources that do not make the file: fetch it whole from this one.
            built.spec.resume = nil
            enqueue(job)
            return
          }
          outcome = .failure(problem)
        }
      }
    }
    if case .failure(let failure) = outcome, failure.code == .network, !cancelled.isSet, !transfer.parser.complete,
      transfer.bodyBytesReceived == 0,
      Self.mayMultiplex(transfer.spec) || multiplexedHosts.contains(transfer.spec.hostKey),
      jobs[job].connectionLosses < Self.connectionLossLimit
    {
      // A request refused or lost when the server ended its HTTP/2 connection (GOAWAY past the
      // last stream it took), before any of its response: sent again at once, without an attempt
      // charged, as libcurl does a few times itself before it gives up.
      jobs[job].connectionLosses += 1
      jobs[job].attempts -= 1
      enqueue(job)
      return
    }
    if case .failure(let failure) = outcome, failure.code == .resumeRestart, !cancelled.isSet {
      // The server cannot continue this partial file: start over at once, without an attempt charged.
      built.spec.resume = nil
      jobs[job].attempts -= 1
      enqueue(job)
      return
    }
    // With another source to go to, a failure moves on at once rather than wait out a backoff here.
    if case .failure(let failure) = outcome, FailureClassifier.isRetryable(failure), !cancelled.isSet,
      !(built.sources?.hasNext ?? false),
      jobs[job].attempts - built.attemptsBefore < built.spec.retry.attempts || waitsForConnectivity(job, failure)
    {
      // Continue from what this attempt wrote when the response allows it; else start over.
      built.spec.resume = transfer.resumePoint
      built.spec.conditional = nil
      let retryAfter = Int64(transfer.easy.info(offset: CURLINFO_RETRY_AFTER))
      let delay = backoff(job: job, retryAfterSeconds: retryAfter)
      let now = Self.now()
      if let resource = built.spec.resourceTimeout,
        spent(job, now: now) + delay.milliseconds >= resource.milliseconds
      {
        var failure = failure
        failure.message += "; no time left in timeouts.resource (\(resource)) to try again"
        complete(job, .failure(failure))
        return
      }
      observer?.transferWillRetry(job, after: delay, failure: failure)
      timers.push(Timer(due: now + UInt64(delay.milliseconds), job: job))
      return
    }
    if let sources = built.sources, case .failure(let failure) = outcome, !cancelled.isSet,
      SourceList.isSourceFailure(failure)
    {
      let url = sources.url
      observer?.transferSourceFailed(job, url: url, failure: failure)
      if let next = sources.setAside(failure) {
        switchSource(
          job, to: next,
          keeping: failure.code == .checksumMismatch || failure.code == .sizeMismatch
            ? nil : transfer.resumePoint)
        return
      }
      outcome = .failure(sources.allFailed(attempts: jobs[job].attempts))
    }
    if case .success = outcome { announce(transfer) }
    if case .failure = outcome, let sink = transfer.fileSink, transfer.resumePoint != nil,
      let point = checkpoint(transfer, durable: sink.syncNow())
    {
      // The task failed for good: what this attempt wrote stays for the next run to continue.
      observer?.transferCheckpoints([point])
    }
    complete(job, outcome)
  }

  /// Goes on from the next source: its own retries, the caps of its host, and the kept bytes only
  /// where `If-Range` with a strong ETag guards them (else the file starts over).
  func switchSource(_ job: Int, to next: TransferSource, keeping resume: TransferSpec.Resume?) {
    let built = built(job)
    built.spec.resume = resume.flatMap { SourceList.mayContinue($0) ? $0 : nil }
    built.spec.conditional = nil
    built.spec.url = next.url
    built.spec.hostKey = next.hostKey
    built.spec.sourceHeaders = next.headers
    requeue(job)
  }

  /// Requests lost with a multiplexed connection before any of their response go again free at
  /// most this many times (each after libcurl's own five tries): at many streams against a server
  /// that ends connections every few requests (nginx's `keepalive_requests`), one request can be
  /// among the refused streams many times in a row before its turn comes.
  static let connectionLossLimit = 10

  /// Whether a request may go over HTTP/2 and be sent again safely: before the first response of
  /// its host says so, its first requests may already have shared a connection that a GOAWAY
  /// ended. Only a GET or HEAD: whether an unknown server processed anything else is not known.
  static func mayMultiplex(_ spec: TransferSpec) -> Bool {
    let method = spec.method.uppercased()
    guard method == "GET" || method == "HEAD" else { return false }
    return spec.httpVersion == .http2 || (spec.httpVersion == .auto && spec.url.utf8.starts(with: "https:".utf8))
  }

  /// Queues a job again on the host of its spec's URL, with the retries of `spec.retry` anew.
  func requeue(_ job: Int) {
    let built = built(job)
    built.attemptsBefore = jobs[job].attempts
    jobs[job].key = queueKey(
      TransferQueue(
        session: built.spec.sessionKey, host: built.spec.hostKey, sessionLimit: built.spec.sessionLimit,
        hostLimit: built.spec.hostLimit))
    enqueue(job)
  }

  /// Sends the next hop of a redirect that the engine follows itself (at most 10, as libcurl).
  private func follow(_ job: Int, to location: String, status: Int) {
    jobs[job].redirects += 1
    jobs[job].attempts -= 1
    guard jobs[job].redirects <= 10 else {
      complete(
        job,
        .failure(
          TransferFailure(
            code: .tooManyRedirects, message: "more than 10 redirects", attempts: jobs[job].attempts + 1)))
      return
    }
    let built = built(job)
    switch built.spec.following(location, status: status) {
    case .success(let next):
      built.spec = next
      start(job, now: Self.now())
    case .failure(var failure):
      failure.attempts = jobs[job].attempts + 1
      complete(job, .failure(failure))
    }
  }

  /// A transfer with its session's share, added to the multi handle: on a spare handle of the
  /// session when one takes the receive buffer (`EasyHandle.accepts`), else on a new one.
  func makeTransfer(_ job: Int, spec: TransferSpec, timeout: Interval?) throws -> Transfer {
    let key = spec.sessionKey
    let buffer = Transfer.receiveBuffer(for: spec)
    let multiplexed = multiplexedHosts.contains(spec.hostKey)
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

  /// The job's next backoff (`RetryPolicy.delay`): doubled with each try on its current source.
  private func backoff(job: Int, retryAfterSeconds: Int64) -> Interval {
    built(job).spec.retry.delay(
      exponent: jobs[job].attempts - built(job).attemptsBefore - 1, retryAfterSeconds: retryAfterSeconds)
  }

  func complete(_ job: Int, _ outcome: Result<TransferResult, TransferFailure>) {
    guard !jobs[job].finished else { return }
    jobs[job].finished = true
    remaining -= 1
    let now = Self.now()
    observer?.transferCompleted(
      job, outcome: outcome, spent: spent(job, now: now), started: jobs[job].startedAt, ended: now)
    jobs[job].built = nil
    if case .success = outcome, !jobs[job].dependents.isEmpty { observer?.settle() }
    for dependent in jobs[job].dependents where !jobs[dependent].finished {
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
  /// is no longer held to `max_connections_per_host` requests at once (`multiplexedQueues`).
  private func noteProtocol(_ transfer: Transfer) {
    guard !transfer.versionSeen, transfer.parser.complete else { return }
    transfer.versionSeen = true
    guard transfer.head.version == "HTTP/2" else { return }
    let host = transfer.spec.hostKey
    let session = transfer.spec.sessionKey
    // Learned once per session and host: every later transfer there stops at this lookup.
    guard multiplexedQueues.insert(QueueName(session: session, host: host)).inserted else { return }
    multiplexedHosts.insert(host)
    for key in keyHost.indices
    where keyHost[key] == host && keySession[key] == session && keyHostLimit[key] == connectionCap {
      keyHostLimit[key] = Int.max
    }
    unblock()
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

  static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds / 1_000_000 }
}
