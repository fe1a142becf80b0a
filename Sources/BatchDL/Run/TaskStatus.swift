import Foundation

/// Where each task of a manifest stands, from the state folder and the files on disk
/// (`batchdl status`).
public struct TaskStatus: Sendable {
  public enum State: String, Sendable {
    case done
    case partial
    case pending
    case failed
  }

  public var id: String
  public var session: String
  public var state: State
  /// Bytes on disk: the file's size when done, the checkpointed bytes when partial.
  public var bytes: Int64?
  /// The full size when known (partial downloads).
  public var total: Int64?
  public var note: String?

  /// Every task of `plan` (sorted by id), as `prior` and the disk see them.
  public static func all(plan: Plan, prior: PriorState) -> [TaskStatus] {
    var result: [TaskStatus] = []
    for index in plan.order {
      let request = plan.requests[Int(index)]
      let (action, reason) = prior.action(for: request, in: plan)
      let point = prior.resumePoint(for: request, in: plan)
      for task in plan.tasks(of: request) {
        let id = plan.id(of: task)
        let stored = prior.results[id]
        var status = TaskStatus(
          id: Redactor(secrets: plan.manifest.secrets).text(id),
          session: plan.manifest.sessions[Int(task.session)].name,
          state: .pending)
        if action == .unchanged {
          status.state = .done
          status.bytes = stored?.size
        } else if let point {
          status.state = .partial
          status.bytes = point.durable
          status.total = point.total
        } else if let stored, stored.outcome == TaskOutcome.failed.rawValue {
          status.state = .failed
          status.note = [stored.errorCode, stored.errorMessage].compactMap { $0 }.joined(separator: ": ")
        } else {
          status.note = reason
        }
        result.append(status)
      }
    }
    return result.sorted { $0.id < $1.id }
  }

  /// One line for people: `done      mirror/a.bin  1.2 MB`.
  public var line: String {
    var text = state.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0) + " " + id
    switch state {
    case .done:
      if let bytes { text += "  " + ProgressDisplay.bytes(bytes) }
    case .partial:
      if let bytes {
        text += "  " + ProgressDisplay.bytes(bytes)
        if let total, total > 0 {
          text +=
            " of " + ProgressDisplay.bytes(total) + String(format: " (%.0f%%)", Double(bytes) * 100 / Double(total))
        }
      }
    case .pending, .failed:
      if let note, !note.isEmpty { text += "  " + note }
    }
    return text
  }

  public var json: JSON {
    var fields: [String: JSON] = ["id": .string(id), "session": .string(session), "state": .string(state.rawValue)]
    if let bytes { fields["bytes"] = .int(bytes) }
    if let total { fields["total"] = .int(total) }
    if let note { fields["note"] = .string(note) }
    return .object(fields)
  }
}

/// `batchdl cache stats|clear`: what the state folder holds, and clearing checkpoints and partial
/// files.
public struct StateMaintenance {
  public let plan: Plan
  public let folder: String

  public init(plan: Plan, folder: String) {
    self.plan = plan
    self.folder = folder
  }

  public struct Stats: Sendable {
    public var results = 0
    public var checkpoints = 0
    /// Partial files on disk for this manifest's requests, and their bytes.
    public var partialFiles = 0
    public var partialBytes: Int64 = 0
    /// HTTP cache entries and bytes, over the sessions.
    public var cacheEntries = 0
    public var cacheBytes: Int64 = 0
    /// Sessions with a cookie jar.
    public var cookieJars = 0
  }

  private func cookieJar(_ session: Session) -> String { folder + "/cookies/\(session.name).txt" }

  private func cache(_ session: Session) -> HTTPCache? {
    let path = folder + "/cache/\(session.name)"
    guard access(path, F_OK) == 0 else { return nil }
    return HTTPCache(folder: path, settings: session.cache)
  }

  /// The partial files of this manifest's requests that exist now.
  public func partialFiles() -> [(path: String, size: Int64)] {
    var seen = Set<String>()
    var result: [(path: String, size: Int64)] = []
    for request in plan.requests {
      guard let path = PriorState.partialPath(for: request, in: plan), seen.insert(path).inserted,
        let info = FileAccess.status(path)
      else { continue }
      result.append((path, info.size))
    }
    return result
  }

  public func stats() throws(SQLiteError) -> Stats {
    let prior = try PriorState.load(from: try StateStore.open(folder: folder, readOnly: true))
    var stats = Stats()
    stats.results = prior.results.count
    stats.checkpoints = prior.checkpoints.count
    let partials = partialFiles()
    stats.partialFiles = partials.count
    stats.partialBytes = partials.reduce(0) { $0 + $1.size }
    for session in plan.manifest.sessions {
      if let cache = cache(session) {
        let (entries, bytes) = cache.stats()
        stats.cacheEntries += entries
        stats.cacheBytes += bytes
      }
      if access(cookieJar(session), F_OK) == 0 { stats.cookieJars += 1 }
    }
    return stats
  }

  /// Removes every checkpoint and the partial files, the sessions' HTTP caches and cookie jars
  /// (under the state folder's lock); returns how many partial files were removed.
  public func clear() throws -> Int {
    let lock = try StateLock(folder: folder)
    defer { withExtendedLifetime(lock) {} }
    var paths = Set(partialFiles().map(\.path))
    if let store = try StateStore.open(folder: folder, readOnly: access(folder + "/" + StateStore.fileName, F_OK) != 0)
    {
      for path in try store.clearCheckpoints() { paths.insert(path) }
      try store.save(budgets: [], removing: try store.budgets().keys.map { $0 })
    }
    var removed = 0
    for path in paths.sorted() where unlink(path) == 0 { removed += 1 }
    for session in plan.manifest.sessions {
      _ = try cache(session)?.clear()
      unlink(cookieJar(session))
    }
    return removed
  }
}
