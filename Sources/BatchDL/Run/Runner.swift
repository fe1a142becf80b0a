import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
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
  /// `--metrics`: Prometheus text-format metrics, for node_exporter's textfile collector.
  public var metricsPath: String?
  public var progress: ProgressMode = .auto
  public var quiet = false
  /// A line for every task, unchanged ones too, off a terminal as well.
  public var verbose = false
  public var timings = false
  /// Revalidate finished downloads with conditional requests.
  public var refresh = false
  /// Re-hash finished files to decide whether they are unchanged.
  public var verify = false
  /// `--no-prune`: sessions with `prune:` delete nothing this run.
  public var noPrune = false
  /// `--max-delete`: replaces every pruning session's `prune.max_delete` for this run only.
  public var maxDelete: PruneLimit?
  /// Only these sessions (by name); nil runs every session.
  public var sessions: Set<String>?
  /// The lock taken in the state folder: `lock` for a run, a worker's own for a background session.
  /// The lock the run takes in the state folder (relative to it); nil: the manifest's own
  /// (`StateFolder.lockName`).
  public var lockName: String?
  /// Requests (and, of them, descriptors' requests) that earlier passes of the same background
  /// worker sent: the worker's report, which each pass writes anew, counts them too, since no
  /// other report does.
  public var earlierRequests = (requests: 0, descriptors: 0)

  public init() {}
}

/// A run that could not start.
public enum RunError: Error, CustomStringConvertible {
  case locked(StateLock.Held)
  /// The state folder's database is damaged, or its disk is full: nothing was sent.
  case state(StateError)
  /// The state folder cannot be made or opened (a file in its place, no permission): nothing was
  /// sent.
  case stateFolder(String)
  /// An output the command line names cannot be written (`--events`): nothing was sent.
  case usage(String)
  /// Something failed once tasks had run (a report or the metrics could not be written).
  case setup(String)

  public var description: String {
    switch self {
    case .locked(let held): return held.runDescription
    case .state(let error): return error.description
    case .stateFolder(let message), .usage(let message), .setup(let message): return message
    }
  }

  /// The documented codes: 4 and 5 (and 2) say that nothing ran, 1 that tasks ran and something
  /// failed.
  public var status: ExitStatus {
    switch self {
    case .locked: return .locked
    case .state, .stateFolder: return .stateUnusable
    case .usage: return .invalid
    case .setup: return .taskFailed
    }
  }
}

/// Runs a plan: takes the state folder's lock, has the `RunBookkeeper` decide what each request
/// needs, runs the engine on the jobs that remain (the bookkeeper, handed to the relay's thread,
/// places files, records state and reports meanwhile), then writes the reports. `run()` tells
/// that story; each part lives in a type of its own.
public final class Runner {
  /// The most a data task keeps in memory.
  public static let dataMemoryLimit: Int64 = 16 << 20

  private let plan: Plan
  private let options: RunOptions
  /// Requests of this run (plan order, this shard).
  private let requests: [Int32]
  /// Set from the signal handler's queue; read on the engine's thread.
  private let interrupted = AtomicFlag()

  /// The lock taken before the run's documents were fetched (`RunPreflight`), held to the end.
  private let heldLock: StateLock?

  /// `lock`: the state folder's lock when the caller took it already (`RunPreflight.check`).
  public init(plan: Plan, options: RunOptions, lock: StateLock? = nil) {
    self.plan = plan
    self.options = options
    heldLock = lock
    state = StateFolder(option: options.statePath, manifest: plan.manifest, shard: options.shard)
    requests = plan.order.filter { index in
      let request = plan.requests[Int(index)]
      if let sessions = options.sessions, !sessions.contains(plan.manifest.sessions[Int(request.session)].name) {
        return false
      }
      return options.shard?.contains(request) ?? true
    }
  }

  /// The state folder this run uses: each shard has its own sub-folder, so that shards sharing
  /// storage never collide.
  public let state: StateFolder

  public var stateFolder: String { state.path }

  /// Runs every request and writes the reports; returns the exit status.
  public func run() throws(RunError) -> ExitStatus {
    let lock = try takeLock()
    defer { withExtendedLifetime(lock) {} }
    let books = RunBookkeeper(plan: plan, options: options, state: state, requests: requests)
    do throws(RunError) {
      try books.openEventLog()
      do throws(StateError) {
        try books.openState()
      } catch {
        books.reportWithoutRunning(error)
        throw .state(error)
      }
    } catch {
      books.close()
      throw error
    }
    let jobs = books.jobs()
    let globalLimit = options.jobs ?? books.globalLimit

    // The run's bookkeeping (placing files, the report, the state, progress) goes on beside the
    // engine's thread, on the relay's thread, so that the network never waits for the disk.
    let handler = InterruptHandler(area: books.terminal) { [interrupted] in interrupted.set() }
    let relay = ObserverRelay(books)
    var engine: Engine?
    var failure: RunError?
    do {
      let running = try Engine(jobs: jobs, globalLimit: globalLimit, observer: relay)
      engine = running
      let canceller = running.canceller
      handler.onInterrupt = { canceller.cancel() }
      if interrupted.isSet { canceller.cancel() }
      try running.run()
    } catch {
      failure = .setup("the transfer engine failed: \(error)")
    }
    let finished = relay.stop()
    withExtendedLifetime(handler) {}
    defer { finished.close() }
    if let failure { throw failure }
    if let engine { finished.countSent(engine.requestsSent) }
    let cancelled = engine?.isCancelled == true
    if cancelled, let engine { finished.recordCancelled(engine) }
    let status = try finished.finish(cancelled: cancelled)
    reasons = finished.verdict?.reasons ?? []
    requestsSent = finished.requestsSent
    return status
  }

  /// The requests the last `run()` counted in its report (`summary.requests` and
  /// `summary.descriptor_requests`, `RunOptions.earlierRequests` included).
  public private(set) var requestsSent = (requests: 0, descriptors: 0)

  /// Why the last `run()` was not a success, one line each (`RunVerdict.reasons`); empty for a
  /// success.
  public private(set) var reasons: [String] = []

  /// The state folder's lock: `lock` for a run, a worker's own for a background session.
  private func takeLock() throws(RunError) -> StateLock {
    if let heldLock { return heldLock }
    return try Self.lock(state, name: options.lockName ?? state.lockName)
  }

  /// Takes lock `name` of `state`'s folder, as a run's error when it cannot be taken.
  static func lock(_ state: StateFolder, name: String) throws(RunError) -> StateLock {
    let stateFolder = state.path
    do {
      return try StateLock(folder: stateFolder, name: name)
    } catch let held as StateLock.Held {
      throw .locked(held)
    } catch let error as SystemError where error.code == ENOSPC {
      throw .state(
        StateError(kind: .diskFull, database: state.database, arguments: state.arguments, detail: error.description))
    } catch {
      throw .stateFolder("cannot use the state folder \(stateFolder): \(error); nothing was sent")
    }
  }
}
