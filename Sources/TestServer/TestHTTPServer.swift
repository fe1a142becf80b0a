import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Why the server could not start.
public struct TestServerError: Error, CustomStringConvertible {
  /// What failed, with the system's reason.
  public var description: String
}

/// A loopback HTTP/1.1 server with fault injection, for end-to-end tests and the demo.
///
/// It listens on 127.0.0.1 only, answers each connection on its own thread with persistent
/// connections, records every request, and counts connections. All state is behind one lock.
public final class TestHTTPServer: @unchecked Sendable {
  private let core: ServerCore

  /// The port the server listens on (the one the system chose when `init` was given 0).
  public let port: UInt16

  /// Binds 127.0.0.1:`port` (0 picks a free port) and starts answering.
  ///
  /// `ioTimeout` bounds every socket read and write (and idle keep-alive connections), in seconds.
  public init(port: UInt16 = 0, ioTimeout: TimeInterval = 5) throws {
    core = try ServerCore(port: port, ioTimeout: ioTimeout)
    self.port = core.port
    core.startAccepting()
  }

  deinit {
    core.stop()
  }

  /// "http://127.0.0.1:PORT", without a trailing slash.
  public var baseURL: String { "http://127.0.0.1:\(port)" }

  /// The full URL of `path` on this server, e.g. `url("/files/a.txt")`.
  public func url(_ path: String) -> String {
    baseURL + (path.hasPrefix("/") ? path : "/" + path)
  }

  /// Closes the listener and every open connection, and waits for all threads to end.
  public func stop() {
    core.stop()
  }

  /// Sets what `path` (without query) answers, replacing any earlier behavior and its counters.
  public func route(_ path: String, _ behavior: Behavior) {
    core.withLock { core.routes[path] = RouteEntry(behavior) }
  }

  /// Makes `path` answer whatever `handler` returns for each request.
  public func route(_ path: String, handler: @escaping @Sendable (RecordedRequest) -> Response) {
    route(path, .handler(handler))
  }

  /// Removes the route of `path`, which then answers 404.
  public func removeRoute(_ path: String) {
    core.withLock { core.routes[path] = nil }
  }

  /// Every request received so far, in arrival order.
  public var requests: [RecordedRequest] {
    core.withLock { core.log }
  }

  /// The requests received for `path` (without query), in arrival order.
  public func requests(for path: String) -> [RecordedRequest] {
    core.withLock { core.log.filter { $0.path == path } }
  }

  /// Empties the request log and the exchange log.
  public func clearLog() {
    core.withLock {
      core.log.removeAll()
      core.exchangesDropped += core.exchanges.count
      core.exchanges.removeAll()
    }
  }

  /// Every answer so far, in the order the requests arrived: method, path, `Range`, `If-Range`,
  /// status and body bytes sent.
  public var exchanges: [Exchange] {
    core.withLock { core.exchanges }
  }

  /// The answers for `path` (without query), in the order the requests arrived.
  public func exchanges(for path: String) -> [Exchange] {
    core.withLock { core.exchanges.filter { $0.path == path } }
  }

  /// The counters of the requests for `path` (without query) since the start or `resetStats()`.
  public func stats(for path: String) -> PathStats {
    core.withLock { core.pathCounters[path]?.stats ?? PathStats() }
  }

  /// How many TCP connections are open now.
  public var openConnections: Int {
    core.withLock { core.connections.count }
  }

  /// The most TCP connections that were open at once since the start or `resetStats()`.
  public var maxOpenConnections: Int {
    core.withLock { core.maxOpen }
  }

  /// How many TCP connections were accepted since the start or `resetStats()`.
  public var totalConnections: Int {
    core.withLock { core.total }
  }

  /// How many requests are being answered now.
  public var activeRequests: Int {
    core.withLock { core.active }
  }

  /// The most requests that were being answered at once since the start or `resetStats()`.
  public var maxActiveRequests: Int {
    core.withLock { core.maxActive }
  }

  /// Starts the connection counters and every path's `stats(for:)` afresh (peaks start from what
  /// is open and active now).
  public func resetStats() {
    core.withLock {
      core.maxOpen = core.connections.count
      core.total = 0
      core.maxActive = core.active
      for counters in core.pathCounters.values { counters.reset() }
    }
  }
}

/// What a route answers, and how many of its requests were served and faulted so far.
final class RouteEntry {
  let behavior: Behavior
  var served = 0
  var drops = 0
  var stalls = 0
  /// How many answers each of the file's corruptions changed.
  var corrupted: [Int] = []

  init(_ behavior: Behavior) {
    self.behavior = behavior
    if case .file(let file) = behavior { corrupted = file.corruptions.map { _ in 0 } }
  }
}

/// The server's shared state and its threads; every field is guarded by `condition`.
final class ServerCore: @unchecked Sendable {
  let condition = NSCondition()
  let port: UInt16
  let ioTimeout: TimeInterval
  private var listener: Int32
  private var stopped = false
  private var acceptThread: pthread_t?
  private var connectionThreads: [Int: pthread_t] = [:]
  private var finishedThreads: [pthread_t] = []
  private var nextConnectionID = 1

  var routes: [String: RouteEntry] = [:]
  var log: [RecordedRequest] = []
  var connections: [Int: Int32] = [:]
  var maxOpen = 0
  var total = 0
  var active = 0
  var maxActive = 0
  var exchanges: [Exchange] = []
  /// How many exchanges `clearLog` removed: exchange number N is at `exchanges[N - exchangesDropped]`.
  var exchangesDropped = 0
  var pathCounters: [String: PathCounters] = [:]

  init(port requested: UInt16, ioTimeout: TimeInterval) throws {
    self.ioTimeout = ioTimeout
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw TestServerError(description: "socket: \(String(cString: strerror(errno)))") }
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = requested.bigEndian
    address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    let bound = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0, listen(fd, 128) == 0 else {
      let reason = String(cString: strerror(errno))
      close(fd)
      throw TestServerError(description: "cannot listen on 127.0.0.1:\(requested): \(reason)")
    }
    var actual = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &actual) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    listener = fd
    port = UInt16(bigEndian: actual.sin_port)
  }

  /// Runs `body` with the lock held.
  func withLock<T>(_ body: () throws -> T) rethrows -> T {
    condition.lock()
    defer { condition.unlock() }
    return try body()
  }

  /// Starts the thread that accepts connections.
  func startAccepting() {
    withLock {
      acceptThread = POSIXThread.start { [self] in acceptLoop() }
    }
  }

  private func acceptLoop() {
    while true {
      let fd = accept(listener, nil, nil)
      if fd < 0 {
        let error = errno
        if withLock({ stopped }) { return }
        if error == EINTR || error == ECONNABORTED { continue }
        if error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM {
          _ = pause(seconds: 0.05)
          continue
        }
        return
      }
      configure(fd)
      condition.lock()
      if stopped {
        condition.unlock()
        close(fd)
        return
      }
      let finished = finishedThreads
      finishedThreads.removeAll()
      let id = nextConnectionID
      nextConnectionID += 1
      connections[id] = fd
      total += 1
      maxOpen = max(maxOpen, connections.count)
      let connection = Connection(fd: fd, id: id, core: self)
      if let thread = POSIXThread.start({ connection.serve() }) {
        connectionThreads[id] = thread
      } else {
        connections[id] = nil
        close(fd)
      }
      condition.unlock()
      for thread in finished { POSIXThread.join(thread) }
    }
  }

  private func configure(_ fd: Int32) {
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    let seconds = max(ioTimeout, 0.001)
    var timeout = timeval(
      tv_sec: Int(seconds.rounded(.down)), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var yes: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
  }

  /// Closes connection `id` (called by its own thread as it ends).
  func connectionEnded(_ id: Int) {
    withLock {
      if let fd = connections.removeValue(forKey: id) { close(fd) }
      if let thread = connectionThreads.removeValue(forKey: id) { finishedThreads.append(thread) }
    }
  }

  /// Waits `seconds`, or less when the server stops; false when it stopped.
  func pause(seconds: TimeInterval) -> Bool {
    let deadline = Date(timeIntervalSinceNow: seconds)
    condition.lock()
    defer { condition.unlock() }
    while !stopped && Date() < deadline {
      _ = condition.wait(until: deadline)
    }
    return !stopped
  }

  /// Closes the listener and all connections, then joins every thread; later calls do nothing.
  func stop() {
    condition.lock()
    if stopped {
      condition.unlock()
      return
    }
    stopped = true
    shutdown(listener, Int32(SHUT_RDWR))
    for fd in connections.values { shutdown(fd, Int32(SHUT_RDWR)) }
    condition.broadcast()
    let acceptor = acceptThread
    acceptThread = nil
    condition.unlock()

    if let acceptor { POSIXThread.join(acceptor) }
    let threads = withLock {
      let all = Array(connectionThreads.values) + finishedThreads
      connectionThreads.removeAll()
      finishedThreads.removeAll()
      return all
    }
    for thread in threads { POSIXThread.join(thread) }
    withLock {
      for fd in connections.values { close(fd) }
      connections.removeAll()
      close(listener)
      listener = -1
    }
  }

  /// Which exchange a connection is answering, for `sent` and `end`.
  struct Ticket {
    var number: Int
    var path: String
    var ranged: Bool
  }

  /// Records `request` and its answer, marks it active, and works out the answer.
  func begin(_ request: RecordedRequest) -> (Outgoing, Ticket) {
    let (out, corrupted) = answer(request)
    let ranged = request.header("range") != nil
    let number = withLock {
      let counters = pathCounters[request.path] ?? PathCounters()
      pathCounters[request.path] = counters
      counters.active += 1
      if ranged { counters.activeRanges += 1 }
      counters.connectionIDs.insert(request.connectionID)
      counters.stats.requests += 1
      if ranged { counters.stats.rangeRequests += 1 }
      counters.stats.connections = counters.connectionIDs.count
      counters.stats.maxConcurrent = max(counters.stats.maxConcurrent, counters.active)
      counters.stats.maxConcurrentRanges = max(counters.stats.maxConcurrentRanges, counters.activeRanges)
      exchanges.append(
        Exchange(
          method: request.method, path: request.path, range: request.header("range"),
          ifRange: request.header("if-range"), status: out.status, bodyBytes: out.sendBody ? out.body.count : 0,
          bytesSent: 0, corrupted: corrupted, connectionID: request.connectionID))
      return exchangesDropped + exchanges.count - 1
    }
    return (out, Ticket(number: number, path: request.path, ranged: ranged))
  }

  /// Counts `bytes` (negative to take back) as sent for exchange `number`.
  func sent(_ number: Int, bytes: Int) {
    withLock {
      let index = number - exchangesDropped
      guard index >= 0, index < exchanges.count else { return }
      exchanges[index].bytesSent += bytes
      pathCounters[exchanges[index].path]?.stats.bytesSent += bytes
    }
  }

  /// Works out the answer to `request`, and whether a corruption changed it.
  private func answer(_ request: RecordedRequest) -> (Outgoing, Bool) {
    let (route, served): (RouteEntry?, Int) = withLock {
      log.append(request)
      active += 1
      maxActive = max(maxActive, active)
      guard let entry = routes[request.path] else { return (nil, 0) }
      entry.served += 1
      return (entry, entry.served)
    }
    guard let entry = route else { return (Outgoing(Responder.notFound(request), method: request.method), false) }
    switch entry.behavior {
    case .file(let original):
      var file = original
      var out = Responder.file(file, request)
      guard out.sendBody, out.status == 200 || out.status == 206 else { return (out, false) }
      let corrupted = corrupt(&file, &out, entry: entry, served: served, request)
      withLock {
        if let stall = file.stallAfterHeaders, entry.stalls < file.stallTimes {
          entry.stalls += 1
          out.stall = stall
        }
        if let limit = file.dropAfter, limit < out.body.count, entry.drops < file.dropTimes {
          entry.drops += 1
          out.dropAfter = max(0, limit)
        }
      }
      out.trickle = file.trickle
      out.stallInBody = file.stallInBody
      out.rateLimit = file.rateLimit
      return (out, corrupted)
    case .sequence(let responses):
      let index = served - 1
      guard let last = responses.last else {
        return (Outgoing(Response.text(500, "empty sequence\n"), method: request.method), false)
      }
      let response = index < responses.count ? responses[index] : last
      return (Outgoing(response, method: request.method), false)
    case .redirect(let status, let location):
      return (Outgoing(Responder.redirect(status: status, location: location), method: request.method), false)
    case .uploadSink:
      return (Outgoing(Responder.uploadReceipt(request), method: request.method), false)
    case .echoHeaders:
      return (Outgoing(Responder.echoHeaders(request), method: request.method), false)
    case .handler(let handler):
      return (Outgoing(handler(request), method: request.method), false)
    }
  }

  /// Applies the file's corruptions that are due for this answer (the route's `served`-th request)
  /// and whose bytes it sends, to `file` and `out`; true when any did.
  private func corrupt(
    _ file: inout FileResource, _ out: inout Outgoing, entry: RouteEntry, served: Int, _ request: RecordedRequest
  ) -> Bool {
    let due = withLock {
      file.corruptions.indices.filter { index in
        let corruption = file.corruptions[index]
        return (corruption.onRequest == nil || corruption.onRequest == served)
          && entry.corrupted[index] < corruption.times
      }
    }
    // A corruption counts only for answers that send some of its bytes.
    let overlapping = due.filter { index in
      var changed = file
      changed.body = file.corruptions[index].apply(to: file.body)
      return Responder.file(changed, request).body != out.body
    }
    let applied = withLock {
      overlapping.filter { index in
        guard entry.corrupted[index] < file.corruptions[index].times else { return false }
        entry.corrupted[index] += 1
        return true
      }
    }
    guard !applied.isEmpty else { return false }
    for index in applied { file.body = file.corruptions[index].apply(to: file.body) }
    out = Responder.file(file, request)
    return true
  }

  /// Marks the request of `ticket` as answered.
  func end(_ ticket: Ticket) {
    withLock {
      active -= 1
      guard let counters = pathCounters[ticket.path] else { return }
      counters.active -= 1
      if ticket.ranged { counters.activeRanges -= 1 }
    }
  }
}
