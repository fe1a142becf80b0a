import BatchDLSupport

/// Which waiting job goes next, as a value: jobs wait in one queue per session and host, in the
/// plan's order; a job is admitted while fewer than `globalLimit` transfers run, its session runs
/// fewer than its `sessionLimit` and its session and host fewer than `hostLimit` (no host limit
/// once the host answered that session over HTTP/2: its requests are streams of shared
/// connections). It also holds each session's rate budget (`max_bytes_per_second`), shared by the
/// session's transfers. `AdmissionControlTests` drive it without sockets; the engine asks it for
/// the next job and tells it what started and what ended.
package struct AdmissionControl {
  package let globalLimit: Int
  /// The cap libcurl holds connections per host to: the largest host limit of the run, or 6.
  package let connectionCap: Int
  /// Transfers running (pieces of a segmented download included).
  package private(set) var running = 0
  package private(set) var hostActive: [String: Int] = [:]
  package private(set) var sessionActive: [Int: Int] = [:]
  /// Hosts that answered some session over HTTP/2.
  package private(set) var multiplexedHosts: Set<String> = []

  private struct QueueName: Hashable {
    var session: Int
    var host: String
  }

  private struct HeapEntry: Comparable {
    var head: Int
    var key: Int
    static func < (a: HeapEntry, b: HeapEntry) -> Bool { (a.head, a.key) < (b.head, b.key) }
  }

  private var keys: [QueueName: Int] = [:]
  private var queues: [MinHeap<Int>] = []
  private var names: [QueueName] = []
  private var hostLimits: [Int] = []
  private var sessionLimits: [Int] = []
  /// The queues whose first job may go, by that job (the plan's order across queues).
  private var ready = MinHeap<HeapEntry>()
  /// The job each queue has in `ready`.
  private var queuedHead: [Int?] = []
  /// Queues held back by their host's or session's cap, until a transfer ends.
  private var blocked: Set<Int> = []
  private var multiplexedQueues: Set<QueueName> = []
  private var buckets: [Int: RateBucket] = [:]

  package init(globalLimit: Int, connectionCap: Int) {
    self.globalLimit = max(1, globalLimit)
    self.connectionCap = connectionCap
  }

  /// The queue of a session and host, made on first use.
  package mutating func queue(_ queue: TransferQueue) -> Int {
    let name = QueueName(session: queue.session, host: queue.host)
    if let key = keys[name] { return key }
    let key = queues.count
    keys[name] = key
    queues.append(MinHeap())
    names.append(name)
    hostLimits.append(
      multiplexedQueues.contains(name) && queue.hostLimit == connectionCap ? Int.max : queue.hostLimit)
    sessionLimits.append(queue.sessionLimit)
    queuedHead.append(nil)
    return key
  }

  /// A job waits in queue `key`.
  package mutating func push(_ job: Int, queue key: Int) {
    queues[key].push(job)
    if blocked.contains(key) { return }
    if let head = queuedHead[key], head <= job { return }
    queuedHead[key] = job
    ready.push(HeapEntry(head: job, key: key))
  }

  /// The next job the caps let go, taken out of its queue; nil when none may go now.
  package mutating func next() -> Int? {
    while running < globalLimit, let entry = ready.pop() {
      let key = entry.key
      guard queuedHead[key] == entry.head, queues[key].peek == entry.head else { continue }
      queuedHead[key] = nil
      if isFull(key) {
        blocked.insert(key)
        continue
      }
      guard let job = queues[key].pop() else { continue }
      if let next = queues[key].peek {
        queuedHead[key] = next
        ready.push(HeapEntry(head: next, key: key))
      }
      return job
    }
    return nil
  }

  private func isFull(_ key: Int) -> Bool {
    hostActive[names[key].host, default: 0] >= hostLimits[key]
      || sessionActive[names[key].session, default: 0] >= sessionLimits[key]
  }

  /// Whether one more transfer of `session` to `host` fits the caps (a piece of a segmented
  /// download, which waits in no queue).
  package func hasRoom(session: Int, sessionLimit: Int, host: String, hostLimit: Int) -> Bool {
    running < globalLimit && sessionActive[session, default: 0] < sessionLimit
      && hostActive[host, default: 0] < hostLimit
  }

  /// Whether `host` has room for one more transfer under `hostLimit`.
  package func hostHasRoom(_ host: String, limit: Int) -> Bool {
    hostActive[host, default: 0] < limit
  }

  /// A transfer started.
  package mutating func started(session: Int, host: String) {
    running += 1
    hostActive[host, default: 0] += 1
    sessionActive[session, default: 0] += 1
  }

  /// A transfer ended: the queues its caps held back may go again.
  package mutating func ended(session: Int, host: String) {
    running -= 1
    hostActive[host, default: 1] -= 1
    sessionActive[session, default: 1] -= 1
    unblock()
  }

  /// Every transfer was stopped at once (a cancelled run).
  package mutating func endedAll() {
    running = 0
    hostActive.removeAll()
    sessionActive.removeAll()
  }

  private mutating func unblock() {
    for key in blocked {
      if let head = queues[key].peek {
        queuedHead[key] = head
        ready.push(HeapEntry(head: head, key: key))
      }
    }
    blocked.removeAll()
  }

  /// A response of `host` to `session` came over HTTP/2: that session's queues to the host are no
  /// longer held to the connection cap. Returns whether this was new.
  @discardableResult
  package mutating func multiplexed(session: Int, host: String) -> Bool {
    guard multiplexedQueues.insert(QueueName(session: session, host: host)).inserted else { return false }
    multiplexedHosts.insert(host)
    for key in names.indices where names[key] == QueueName(session: session, host: host) {
      if hostLimits[key] == connectionCap { hostLimits[key] = Int.max }
    }
    unblock()
    return true
  }

  /// Whether some job waits for its turn (queued, or held back by a cap).
  package var hasWaiting: Bool { !ready.isEmpty || !blocked.isEmpty }

  /// The rate budget of a session limited to `bytesPerSecond`, shared by its transfers.
  package mutating func bucket(session: Int, bytesPerSecond: Int64) -> RateBucket {
    if let bucket = buckets[session] { return bucket }
    let bucket = RateBucket(bytesPerSecond: bytesPerSecond)
    buckets[session] = bucket
    return bucket
  }

  /// The sessions' rate budgets.
  package var rateBuckets: Dictionary<Int, RateBucket>.Values { buckets.values }
}
