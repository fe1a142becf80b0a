import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import Foundation

/// What a background session's worker last said about itself (`workers/ID.json`).
public struct WorkerStatus: Sendable, Equatable {
  public var session: String
  public var identifier: String
  public var pid: Int32
  /// `starting` (written by `run` when it spawns the worker), `running` (by the worker once it
  /// holds its lock) or `finished`.
  public var state: String
  /// The worker process's start time (clock ticks since boot, from `/proc/PID/stat`), so that a
  /// reused pid is not taken for a starting worker.
  public var started: Int64?
  /// The exit status of a finished worker's last pass (0, 1 or 3).
  public var exitStatus: Int32?
  /// The session's report.
  public var report: String
  /// Why a finished worker's last pass was not a success (`RunVerdict.reasons`), masked.
  public var reasons: [String] = []

  var json: JSON {
    var fields: [String: JSON] = [
      "session": .string(session), "identifier": .string(identifier), "pid": .int(Int(pid)),
      "state": .string(state), "report": .string(report),
    ]
    if let exitStatus { fields["exit_status"] = .int(Int(exitStatus)) }
    if !reasons.isEmpty { fields["reasons"] = .array(reasons.map { .string($0) }) }
    if let started { fields["started"] = .int(started) }
    return .object(fields)
  }

  init(
    session: String, identifier: String, pid: Int32, state: String, exitStatus: Int32?, report: String,
    started: Int64? = nil
  ) {
    self.session = session
    self.identifier = identifier
    self.pid = pid
    self.state = state
    self.exitStatus = exitStatus
    self.report = report
    self.started = started
  }

  init?(data: Data) {
    guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
      let session = object["session"] as? String, let identifier = object["identifier"] as? String,
      let pid = object["pid"] as? Int, let state = object["state"] as? String, let report = object["report"] as? String
    else { return nil }
    self.init(
      session: session, identifier: identifier, pid: Int32(pid), state: state,
      exitStatus: (object["exit_status"] as? Int).map { Int32($0) }, report: report,
      started: (object["started"] as? Int).map { Int64($0) })
    reasons = object["reasons"] as? [String] ?? []
  }
}

/// Where a background session's worker stands, from its lock and its status file.
public enum WorkerState: Sendable, Equatable {
  /// No worker was ever started in this state folder.
  case notStarted
  /// `run` spawned it and it is alive, but it does not hold its lock yet.
  case starting(pid: Int32)
  /// It holds its lock.
  case running(pid: Int32)
  case finished(exitStatus: Int32)
  /// Its status file says it started or runs, but its lock is free and the process is gone
  /// (killed, crashed, or the machine restarted): its work is unfinished and `on_finished` did
  /// not run. `batchdl run` starts it again.
  case died(pid: Int32)

  public var name: String {
    switch self {
    case .notStarted: return "not-started"
    case .starting: return "starting"
    case .running: return "running"
    case .finished: return "finished"
    case .died: return "died"
    }
  }

  /// Whether `wait` should go on waiting.
  public var isActive: Bool {
    switch self {
    case .starting, .running: return true
    default: return false
    }
  }
}

/// Background sessions: one detached worker per `identifier`, started by `run` (or reattached to),
/// that outlives the terminal and the cron job, and leaves its status, log, report and events in
/// the state folder's `workers/` folder.
public struct BackgroundSessions {
  public let stateFolder: String
  public let manifestPath: String

  public init(stateFolder: String, manifestPath: String) {
    self.stateFolder = stateFolder
    self.manifestPath = manifestPath
  }

  /// The workers of `state`'s manifest (always in the unsharded folder).
  public init(state: StateFolder, manifestPath: String) {
    self.init(stateFolder: state.base, manifestPath: StateFolder.absolute(manifestPath))
  }

  public var workersFolder: String { StateFolder.workersFolder(base: stateFolder) }
  func files(_ identifier: String) -> StateFolder.WorkerFiles {
    StateFolder.WorkerFiles(base: stateFolder, identifier: identifier)
  }
  public func statusPath(_ identifier: String) -> String { files(identifier).status }
  public func logPath(_ identifier: String) -> String { files(identifier).log }
  public func reportPath(_ identifier: String) -> String { files(identifier).report }
  public func eventsPath(_ identifier: String) -> String { files(identifier).events }
  func wakePath(_ identifier: String) -> String { files(identifier).wake }

  /// The pid of the live worker for `identifier`, if there is one.
  public func liveWorker(_ identifier: String) -> Int32? {
    StateLock.holder(folder: stateFolder, name: files(identifier).lockName)
  }

  public func status(_ identifier: String) -> WorkerStatus? {
    FileManager.default.contents(atPath: statusPath(identifier)).flatMap(WorkerStatus.init(data:))
  }

  /// Where the worker of `identifier` stands. The lock decides whether it runs (the kernel frees
  /// it when the process dies, whatever killed it); a status file that still says `running` with
  /// the lock free means it died. A worker `run` just spawned has not taken its lock yet: it counts
  /// as starting while its process (the same pid with the same start time) is alive.
  public func state(_ identifier: String) -> (state: WorkerState, status: WorkerStatus?) {
    if let pid = liveWorker(identifier) { return (.running(pid: pid), status(identifier)) }
    guard let status = status(identifier) else { return (.notStarted, nil) }
    switch status.state {
    case "finished":
      return (.finished(exitStatus: status.exitStatus ?? 0), status)
    case "starting" where Self.isAlive(pid: status.pid, started: status.started):
      return (.starting(pid: status.pid), status)
    default:
      // It may have taken its lock since the first look.
      if let pid = liveWorker(identifier) { return (.running(pid: pid), status) }
      if let again = self.status(identifier), again.state == "finished" {
        return (.finished(exitStatus: again.exitStatus ?? 0), again)
      }
      return (.died(pid: status.pid), status)
    }
  }

  /// Whether process `pid` exists, is not a zombie and, when `started` is known, started then.
  static func isAlive(pid: Int32, started: Int64?) -> Bool {
    guard pid > 0, let (state, start) = processStat(pid) else { return false }
    return state != "Z" && state != "X" && (started == nil || started == start)
  }

  /// The state letter and start time (field 22) of `/proc/PID/stat`.
  static func processStat(_ pid: Int32) -> (state: Character, started: Int64)? {
    guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return nil }
    let text = String(decoding: data, as: UTF8.self)
    // The command name, in parentheses, may hold spaces: the fields start after its last ')'.
    guard let close = text.lastIndex(of: ")") else { return nil }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 19, let state = fields[0].first, let started = Int64(fields[19]) else { return nil }
    return (state, started)
  }

  func write(_ status: WorkerStatus) {
    try? AtomicFile.write(status.json.text + "\n", to: statusPath(status.identifier))
  }

  public enum Launch: Sendable, Equatable {
    case started(pid: Int32)
    /// A worker was already running: it will pick up the manifest's new tasks when it finishes
    /// its current pass.
    case attached(pid: Int32)
  }

  /// Starts the worker of `session` (a new process in its own session, `setsid`, with its output in
  /// `workers/ID.log`), or reattaches to the live one. `noPrune`: a worker started now deletes
  /// nothing (`run --no-prune`); a live one keeps what it was started with.
  public func launch(session: Session, noPrune: Bool = false) throws -> Launch {
    let identifier = session.identifier ?? session.name
    try FileAccess.makeDirectories(workersFolder)
    if let pid = liveWorker(identifier) {
      _ = FileManager.default.createFile(atPath: wakePath(identifier), contents: Data())
      return .attached(pid: pid)
    }
    let executable = Self.executablePath()
    let arguments =
      [executable, "worker", manifestPath, "--session", session.name, "--state", stateFolder]
      + (noPrune ? ["--no-prune"] : [])
    let pid = try Self.spawnDetached(arguments, log: logPath(identifier))
    // The worker writes `running` once it holds its lock; it may already have.
    if liveWorker(identifier) == nil {
      write(
        WorkerStatus(
          session: session.name, identifier: identifier, pid: pid, state: "starting", exitStatus: nil,
          report: reportPath(identifier), started: Self.processStat(pid)?.started))
    }
    return .started(pid: pid)
  }

  static func executablePath() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard count > 0 else { return CommandLine.arguments.first ?? "batchdl" }
    return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// `posix_spawn` with `POSIX_SPAWN_SETSID`: the child leads a new session (no controlling
  /// terminal, so a closing terminal or an ending cron job does not signal it), reads /dev/null
  /// and appends its output to `log`.
  static func spawnDetached(_ arguments: [String], log: String) throws -> Int32 {
    markDescriptorsCloseOnExec()
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // POSIX_SPAWN_SETSID (glibc 2.26+), which Swift does not import as a constant.
    let setsid: Int16 = 0x80
    posix_spawnattr_setflags(&attributes, setsid | Int16(POSIX_SPAWN_SETSIGDEF))
    var defaults = sigset_t()
    sigemptyset(&defaults)
    sigaddset(&defaults, SIGINT)
    sigaddset(&defaults, SIGTERM)
    sigaddset(&defaults, SIGHUP)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    var argv = arguments.map { strdup($0) }
    argv.append(nil)
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let code = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environ)
    guard code == 0 else { throw SystemError("start the background worker \(arguments[0])", code: code) }
    return pid
  }

  /// Keeps every descriptor above stderr out of the worker: an inherited pipe (the standard output
  /// of whatever started `run`) would make that caller wait for the worker's end.
  static func markDescriptorsCloseOnExec() {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
    for entry in entries {
      guard let fd = Int32(entry), fd > 2 else { continue }
      let flags = fcntl(fd, F_GETFD)
      if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
    }
  }

  /// The worker itself: runs the session's tasks (again while a `run` asked it to pick up new ones),
  /// writes the session's report and events, runs `on_finished`, and exits with the session's result.
  public func work(session name: String, environment: [String: String], noPrune: Bool = false) -> ExitStatus {
    var last = ExitStatus.success
    var reasons: [String] = []
    var identifier = name
    if let plan = try? ManifestCheck.plan(path: manifestPath, environment: environment, state: stateFolder),
      let session = plan.manifest.sessions.first(where: { $0.name == name })
    {
      identifier = session.identifier ?? name
    }
    var lock: StateLock?
    for _ in 0..<40 {
      // `liveWorker` checks hold the lock for an instant: retry before concluding another worker runs.
      do {
        lock = try StateLock(folder: stateFolder, name: files(identifier).lockName)
        break
      } catch is StateLock.Held {
        usleep(50_000)
      } catch {
        return .taskFailed
      }
    }
    guard let lock else { return .locked }
    defer { withExtendedLifetime(lock) {} }
    var passes = 0
    // What the passes so far sent: each pass's report counts them too.
    var sent = (requests: 0, descriptors: 0)
    repeat {
      passes += 1
      unlink(wakePath(identifier))
      let plan: Plan
      do {
        // The session's documents are fetched again (conditionally: `run` stored them a moment
        // ago), so that the worker knows whether upstream gave them fresh: a stored copy alone
        // would keep it from pruning, and would hide a night upstream could not be read.
        plan = try ManifestCheck.plan(
          path: manifestPath, environment: environment, descriptors: .fetch, state: stateFolder, fetching: [name])
      } catch {
        var stderr = StandardError()
        ManifestCheck.report(error.diagnostics, for: manifestPath, to: &stderr)
        last = .invalid
        reasons = ["the manifest is invalid (batchdl validate lists why)"]
        break
      }
      guard let session = plan.manifest.sessions.first(where: { $0.name == name }) else {
        last = .invalid
        reasons = ["the manifest has no session \(name) any more"]
        break
      }
      identifier = session.identifier ?? name
      write(
        WorkerStatus(
          session: name, identifier: identifier, pid: getpid(), state: "running", exitStatus: nil,
          report: reportPath(identifier)))
      var options = RunOptions()
      options.statePath = stateFolder
      options.sessions = [name]
      options.lockName = files(identifier).runLockName
      options.reportPath = reportPath(identifier)
      options.eventsPath = eventsPath(identifier)
      options.progress = .never
      options.noPrune = noPrune
      options.earlierRequests = sent
      let runner = Runner(plan: plan, options: options)
      do {
        last = try runner.run()
        reasons = runner.reasons
        sent = runner.requestsSent
      } catch {
        var stderr = StandardError()
        stderr.write("batchdl worker: \(error)\n")
        last = error.status
        reasons = [error.description]
      }
    } while last != .interrupted && access(wakePath(identifier), F_OK) == 0 && passes < 100
    var finished = WorkerStatus(
      session: name, identifier: identifier, pid: getpid(), state: "finished", exitStatus: last.rawValue,
      report: reportPath(identifier))
    finished.reasons = reasons
    write(finished)
    return last
  }

  /// Waits until no worker of `identifiers` is starting or running (at most `timeout` seconds);
  /// returns where each stands then, or nil on timeout.
  public func wait(for identifiers: [String], timeout: Double?) -> [String: WorkerState]? {
    let deadline = timeout.map { Date().addingTimeInterval($0) }
    while true {
      var states: [String: WorkerState] = [:]
      for identifier in identifiers { states[identifier] = state(identifier).state }
      if !states.values.contains(where: \.isActive) { return states }
      if let deadline, Date() >= deadline { return nil }
      usleep(100_000)
    }
  }

  /// The exit status of `wait`: the worst of the finished workers' results; 3 (interrupted) when
  /// a worker died before finishing.
  public static func result(of states: [String: WorkerState]) -> ExitStatus {
    var worst = ExitStatus.success
    for state in states.values {
      let exit: ExitStatus
      switch state {
      case .finished(let code): exit = ExitStatus(rawValue: code) ?? .taskFailed
      case .died: exit = .interrupted
      default: continue
      }
      if exit.rawValue > worst.rawValue { worst = exit }
    }
    return worst
  }
}
