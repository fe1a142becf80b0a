import BatchDLSupport

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
