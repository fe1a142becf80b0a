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

  public init() {}
}

/// A run that could not start.
public enum RunError: Error, CustomStringConvertible {
  case locked(StateLock.Held)
  case setup(String)

  public var description: String {
    switch self {
    case .locked(let held): return held.description
    case .setup(let message): return message
    }
  }

  public var status: ExitStatus {
    switch self {
    case .locked: return .locked
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
  /// Requests in this run (plan order, this shard), and the job of each.
  private var requests: [Int32] = []
  private var pendingPerSession: [Int: Int] = [:]
  private var summaries: [Int: RunSummary] = [:]
  private let start = Engine.now()

  public init(plan: Plan, options: RunOptions) {
    self.plan = plan
    self.options = options
    redactor = Redactor(secrets: plan.manifest.secrets)
    report = RunReport(manifest: plan.manifest.path)
    requests = plan.order.filter { options.shard?.contains(plan.requests[Int($0)]) ?? true }
    let taskCount = requests.reduce(0) { $0 + Int(plan.requests[Int($1)].taskCount) }
    display = ProgressDisplay(mode: options.progress, quiet: options.quiet, totalTasks: taskCount)
  }

  /// The state folder this run uses.
  public var stateFolder: String {
    options.statePath ?? FileAccess.resolve(".batchdl", against: plan.manifest.directory)
  }

  /// Runs every request and writes the reports; returns the exit status.
  public func run() throws(RunError) -> ExitStatus {
    let lock: StateLock
    do {
      lock = try StateLock(folder: stateFolder)
    } catch let held as StateLock.Held {
      throw .locked(held)
    } catch {
      throw .setup("cannot use the state folder \(stateFolder): \(error)")
    }
    defer { withExtendedLifetime(lock) {} }
    if let path = options.eventsPath {
      do {
        eventLog = try EventLog(path: path)
      } catch {
        throw .setup("cannot write the event log: \(error)")
      }
    }
    if plan.manifest.sessions.contains(where: { $0.kind == .background }) {
      display.note("note: background sessions run in the foreground in this version")
    }
    for index in requests {
      for task in plan.tasks(of: plan.requests[Int(index)]) { pendingPerSession[Int(task.session), default: 0] += 1 }
    }
    report.requests = requests.count

    var jobs: [TransferJob] = []
    var jobOfRequest: [Int32: Int] = [:]
    for (job, index) in requests.enumerated() { jobOfRequest[index] = job }
    for index in requests {
      let request = plan.requests[Int(index)]
      let dependencies = request.dependencies.compactMap { jobOfRequest[$0] }
      let spec = spec(for: request)
      var failure: TransferFailure?
      do throws(TransferFailure) {
        try prepareTarget(spec.target, for: request)
      } catch {
        failure = error
      }
      jobs.append(TransferJob(spec: spec, dependencies: dependencies, failure: failure))
    }
    do {
      let engine = try Engine(jobs: jobs, globalLimit: options.jobs ?? globalLimit(), observer: self)
      try engine.run()
    } catch {
      throw .setup("the transfer engine failed: \(error)")
    }
    report.seconds = Double(Engine.now() &- start) / 1000
    display.finish(summary: report.summary)
    eventLog?.flush()
    do {
      if let path = options.reportPath { try AtomicFile.write(report.json(timings: options.timings), to: path) }
      if let path = options.junitPath { try AtomicFile.write(report.junit(timings: options.timings), to: path) }
    } catch {
      throw .setup("cannot write the report: \(error)")
    }
    return report.summary.failed > 0 ? .taskFailed : .success
  }

  private func globalLimit() -> Int {
    plan.manifest.sessions.map(\.network.maxConcurrent).max() ?? 16
  }

  // MARK: - Jobs

  private func session(of request: PlannedRequest) -> Session { plan.manifest.sessions[Int(request.session)] }

  /// Absolute path of a destination relative to the manifest's folder.
  private func absolute(_ path: String) -> String { FileAccess.resolve(path, against: plan.manifest.directory) }

  static func partialPath(_ destination: String) -> String { destination + ".batchdl-part" }

  private func spec(for request: PlannedRequest) -> TransferSpec {
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
    if let owner = tasks.first(where: { $0.kind != .data && !$0.to.isNone }), let to = plan.destination(of: owner) {
      target = .file(Self.partialPath(absolute(to)))
    } else if let spiller = tasks.first(where: { becomeDownload(of: $0) != nil }),
      let rule = becomeDownload(of: spiller),
      let to = plan.destination(of: spiller)
    {
      target = .memory(
        limit: Self.dataMemoryLimit,
        spill: .init(contentTypes: rule.contentTypes, largerThan: rule.largerThan, path: Self.partialPath(absolute(to)))
      )
    } else {
      target = .memory(limit: Self.dataMemoryLimit, spill: nil)
    }
    var spec = TransferSpec(
      method: request.method, url: plan.url(of: request), headers: headers.map { "\($0.name): \($0.value)" },
      body: body, target: target, requestTimeout: session.timeouts.request, resourceTimeout: session.timeouts.resource,
      retry: session.retry, rateLimit: session.network.rateLimit,
      hostKey: plan.hosts[Int(request.host)], hostLimit: session.network.maxConnectionsPerHost,
      sessionKey: Int(request.session), sessionLimit: session.network.maxConcurrent)
    spec.decodeContent = tasks.allSatisfy { $0.kind == .data }
    return spec
  }

  private func becomeDownload(of task: PlannedTask) -> BecomeDownload? {
    guard task.kind == .data, case .task(let spec) = plan.entry(of: task) else { return nil }
    return spec.becomeDownload
  }

  // MARK: - Events

  private func emit(_ event: RunEvent) {
    eventLog?.record(event)
  }

  private func id(_ task: PlannedTask) -> String { redactor.text(plan.id(of: task)) }

  private func request(ofJob job: Int) -> PlannedRequest { plan.requests[Int(requests[job])] }

  public func transferReceivedResponse(_ job: Int, head: ResponseHead) {
    for task in plan.tasks(of: request(ofJob: job)) {
      emit(
        .response(
          task: id(task), status: head.status, contentType: head["content-type"], contentLength: head.contentLength))
    }
  }

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
          task: id(task), attempt: failure.attempts, delay: delay, code: failure.code,
          message: redactor.text(failure.message)))
    }
    display.note(
      "retrying \(id(tasks[0])) in \(delay) after attempt \(failure.attempts): \(failure.code): \(redactor.text(failure.message))"
    )
  }

  public func transferTick(active: [ActiveTransfer]) {
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

  public func transferCompleted(_ job: Int, outcome: Result<TransferResult, TransferFailure>) {
    let tasks = plan.tasks(of: request(ofJob: job))
    switch outcome {
    case .failure(let failure):
      for task in tasks { record(failed(task, failure)) }
    case .success(let result):
      place(result, for: tasks)
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
    result.error = (failure.code, redactor.text(failure.message))
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
  private func place(_ result: TransferResult, for tasks: [PlannedTask]) {
    var owner: (task: PlannedTask, path: String, outcome: TaskResult)?
    for (index, task) in tasks.enumerated() {
      var outcome = base(task)
      outcome.status = result.head.status
      outcome.size = result.size
      outcome.sha256 = result.sha256
      outcome.attempts = result.attempts
      outcome.source = index == 0 ? "network" : "duplicate"
      outcome.outcome = .completed
      if let problem = expectationProblem(task, result) {
        let failure = TransferFailure(code: problem.code, message: problem.message, attempts: result.attempts)
        record(failed(task, failure, status: result.head.status))
        continue
      }
      guard let destination = plan.destination(of: task) else {
        record(outcome)
        continue
      }
      let path = absolute(destination)
      if let source = result.file, source == Self.partialPath(path) {
        owner = (task, path, outcome)
        continue
      }
      do throws(TransferFailure) {
        try prepare(path, for: task)
        if let source = result.file {
          try Self.copy(source, to: path)
        } else {
          do {
            try AtomicFile.write(result.body ?? [], to: path)
          } catch {
            throw FileSink.failure(errno: error.code, doing: "write \(destination)")
          }
        }
        emit(.finished(task: outcome.id, to: outcome.to ?? ""))
        record(outcome)
      } catch {
        record(failed(task, TransferFailure(code: error.code, message: error.message, attempts: result.attempts)))
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
      record(outcome)
    } catch {
      unlink(source)
      record(failed(task, TransferFailure(code: error.code, message: error.message, attempts: result.attempts)))
    }
  }

  /// Creates the folders of the file a request's body goes to, before anything is sent.
  private func prepareTarget(_ target: TransferSpec.Target, for request: PlannedRequest) throws(TransferFailure) {
    let partial: String
    switch target {
    case .file(let path): partial = path
    case .memory(_, let spill?): partial = spill.path
    case .memory(_, nil): return
    }
    let path = String(partial.dropLast(".batchdl-part".count))
    guard let owner = plan.tasks(of: request).first(where: { plan.destination(of: $0).map(absolute) == path }) else {
      return
    }
    try prepare(path, for: owner)
  }

  private func prepare(_ path: String, for task: PlannedTask) throws(TransferFailure) {
    let session = plan.manifest.sessions[Int(task.session)]
    try Self.prepare(path: path, root: absolute(session.dest.isEmpty ? "." : session.dest))
  }

  private func expectationProblem(_ task: PlannedTask, _ result: TransferResult) -> (code: String, message: String)? {
    guard case .task(let spec) = plan.entry(of: task) else { return nil }
    if let size = spec.size, size != result.size {
      return ("size-mismatch", "expected \(size) bytes, received \(result.size); nothing was written to 'to'")
    }
    if let sha256 = spec.sha256, sha256 != result.sha256 {
      return ("checksum-mismatch", "expected sha256 \(sha256), received \(result.sha256); nothing was written to 'to'")
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
      throw TransferFailure(code: "write", message: "cannot resolve the folder \(parent)")
    }
    guard realParent == realRoot || realParent.hasPrefix(realRoot.hasSuffix("/") ? realRoot : realRoot + "/") else {
      throw TransferFailure(
        code: "unsafe-path",
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
