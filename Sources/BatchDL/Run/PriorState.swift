import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import Foundation

/// What a request needs this run, given what earlier runs left in the state folder.
public enum RequestAction: Sendable, Equatable {
  /// Send it (the reason says why: never fetched, failed, file changed...).
  case send
  /// Continue its partial file from `offset`.
  case resume(offset: Int64)
  /// `--refresh`: ask with the stored validators; 304 means unchanged.
  case revalidate
  /// Every task's recorded result still matches its file: no request.
  case unchanged

  public var name: String {
    switch self {
    case .send: return "send"
    case .resume: return "resume"
    case .revalidate: return "revalidate"
    case .unchanged: return "skip"
    }
  }
}

/// The state folder's contents as one run (or `plan`, or `status`) sees them.
public struct PriorState: Sendable {
  public var results = StoredResults()
  public var checkpoints: [String: Checkpoint] = [:]
  public var budgets: [String: (spent: Int64, attempts: Int)] = [:]
  /// Looks files up folder by folder (the destinations of a plan come in folder order).
  private let files = FolderStatus()

  public init() {}

  /// What `store` holds (nothing when there is none).
  public static func load(from store: StateStore?) throws(SQLiteError) -> PriorState {
    var state = PriorState()
    guard let store else { return state }
    state.results = try store.results()
    state.checkpoints = try store.checkpoints()
    state.budgets = try store.budgets()
    return state
  }

  /// What `request` needs, and why.
  public func action(
    for request: PlannedRequest, in plan: Plan, refresh: Bool = false, verify: Bool = false
  ) -> (action: RequestAction, reason: String) {
    let session = plan.manifest.sessions[Int(request.session)]
    let tasks = plan.tasks(of: request)
    if request.method == "GET", tasks.allSatisfy({ $0.kind == .data }) {
      return (.send, "data task: the HTTP cache decides (cache.policy \(session.cache.policy.rawValue))")
    }
    if session.kind == .ephemeral { return (.send, "ephemeral session: nothing is kept between runs") }
    // A first run (or a request never fetched) has nothing to compare: no key or task id to make.
    if results.isEmpty && checkpoints.isEmpty { return (.send, "not fetched before") }
    var reason: String?
    var validators: StoredResults.Entry?
    for task in plan.tasks(of: request) {
      guard let stored = results.entry(for: task, in: plan) else {
        reason = reason ?? "not fetched before"
        continue
      }
      if stored.outcome != .completed && stored.outcome != .unchanged {
        reason =
          reason
          ?? (stored.outcome == .deferred
            ? "deferred last time (\(results.errorMessage(of: stored) ?? "policy"))"
            : "failed last time (\(results.errorCode(of: stored) ?? results.outcomeText(of: stored)))")
        continue
      }
      if !results.requestKey(of: stored, is: request.key) {
        reason = reason ?? "the request changed since it was fetched"
        continue
      }
      // What the manifest expects now, not what it expected then: a changed pin runs the task again.
      if let expected = plan.expectation(of: task), let unmet = unmet(expected, by: stored) {
        reason = reason ?? unmet
        continue
      }
      if let destination = plan.absoluteDestination(of: task) {
        // Below the session's `dest`, no link is followed: a folder replaced by a link out of it
        // does not make a file elsewhere this task's.
        guard let info = files.status(destination, below: plan.absoluteDest(of: task)) else {
          reason = reason ?? "the file is missing"
          continue
        }
        if info.size != stored.fileSize || info.modified != stored.fileModified {
          reason = reason ?? "the file changed on disk"
          continue
        }
        if verify, let sha256 = results.sha256(of: stored), FileAccess.sha256(of: destination) != sha256 {
          reason = reason ?? "the file's contents changed (--verify)"
          continue
        }
        // --verify checks the file against the manifest's digest too, whatever its algorithm.
        if verify, let digest = plan.expectation(of: task)?.digest, digest.algorithm != .sha256,
          FileDigest.hex(of: destination, algorithm: digest.algorithm) != digest.hex
        {
          reason = reason ?? "the file does not match the manifest's \(digest.algorithm.rawValue) (--verify)"
          continue
        }
      }
      validators = validators ?? stored
    }
    if let reason {
      if let point = resumePoint(for: request, in: plan) {
        return (.resume(offset: point.durable), "\(reason); a checkpoint holds \(point.durable) bytes")
      }
      return (.send, reason)
    }
    // `--refresh`, or the session's `refresh:` when the file was last checked long enough ago.
    var why: String?
    if refresh {
      why = "--refresh"
    } else {
      switch session.refresh {
      case .never: break
      case .always: why = "refresh: always"
      case .after(let interval):
        let checked = validators?.checked ?? 0
        let age = Int64(Date().timeIntervalSince1970) - checked
        if age * 1000 >= interval.milliseconds {
          why =
            validators?.checked == nil
            ? "refresh: \(interval), never checked" : "refresh: \(interval), last checked \(age) s ago"
        }
      }
    }
    if let why {
      if let validators, results.etag(of: validators) != nil || results.lastModified(of: validators) != nil {
        return (.revalidate, "\(why): ask whether it changed")
      }
      return (.send, "\(why), and no validator was recorded")
    }
    return (.unchanged, "unchanged since the last run")
  }

  /// Why a recorded result does not meet what the manifest expects now (its size and SHA-256; a
  /// digest of another algorithm is checked on the file with `--verify`), or nil.
  private func unmet(_ expected: TaskExpectation, by stored: StoredResults.Entry) -> String? {
    if let size = expected.size, stored.size != size {
      return
        "the manifest now expects \(size) bytes, and \(stored.size.map(String.init) ?? "another size") were recorded"
    }
    if let sha256 = expected.sha256, results.sha256(of: stored)?.lowercased() != sha256 {
      return "the manifest now expects sha256 \(sha256), and another was recorded"
    }
    return nil
  }

  /// A usable checkpoint for `request`: its partial file is where this plan puts it and holds at
  /// least the checkpointed bytes.
  public func resumePoint(for request: PlannedRequest, in plan: Plan) -> Checkpoint? {
    guard let point = checkpoints[request.key.description], point.durable > 0 || !point.extents.isEmpty,
      point.validator != nil,
      let expected = plan.partialPath(of: request), point.partial == expected,
      let info = files.status(point.partial), info.size >= point.durable
    else { return nil }
    return point
  }
}
