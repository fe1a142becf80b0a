import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
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

  /// Failure codes that say the bytes were wrong: a task whose last run failed with one shows as
  /// failed, with its code, even where the bytes it kept are a checkpoint the next run goes on
  /// from (pieces that kept failing their digests), never as a partial download on its way.
  static let contentCodes: Set<String> = [FailureCode.checksumMismatch.rawValue, FailureCode.sizeMismatch.rawValue]

  /// Every task of `plan` (of `shard`'s requests, when given; sorted by id), as `prior` and the
  /// disk see them.
  public static func all(plan: Plan, prior: PriorState, shard: Shard? = nil) -> [TaskStatus] {
    var result: [TaskStatus] = []
    let redactor = Redactor(secrets: plan.manifest.secrets)
    for index in plan.order {
      let request = plan.requests[Int(index)]
      if let shard, !shard.contains(request) { continue }
      let (action, reason) = prior.action(for: request, in: plan)
      let point = prior.resumePoint(for: request, in: plan)
      for task in plan.tasks(of: request) {
        let id = plan.id(of: task)
        let stored = prior.results.entry(for: task, in: plan)
        var status = TaskStatus(
          id: redactor.text(id),
          session: plan.manifest.sessions[Int(task.session)].name,
          state: .pending)
        let failed = stored.flatMap { $0.outcome == .failed ? $0 : nil }
        let failedContent = failed.flatMap { prior.results.errorCode(of: $0) }.map(Self.contentCodes.contains) ?? false
        if action == .unchanged {
          status.state = .done
          status.bytes = stored?.size
        } else if let point, !failedContent {
          status.state = .partial
          status.bytes = point.durable
          status.total = point.total
        } else if let failed {
          status.state = .failed
          status.note = [prior.results.errorCode(of: failed), prior.results.errorMessage(of: failed)].compactMap { $0 }
            .joined(separator: ": ")
        } else {
          status.note = reason
        }
        result.append(status)
      }
    }
    return result.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
  }

  /// One line for people: `done      mirror/a.bin  1.2 MB`.
  public var line: String {
    var text = TextFormat.padded(state.rawValue, to: 9) + " " + id
    switch state {
    case .done:
      if let bytes { text += "  " + ProgressDisplay.bytes(bytes) }
    case .partial:
      if let bytes {
        text += "  " + ProgressDisplay.bytes(bytes)
        if let total, total > 0 {
          text +=
            " of " + ProgressDisplay.bytes(total) + " ("
            + TextFormat.fixed(Double(bytes) * 100 / Double(total), decimals: 0) + "%)"
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

/// `batchdl cache stats|clear`: what the state folder holds for a manifest (unsharded and every
/// shard's sub-folder), and clearing checkpoints and partial files.
public struct StateMaintenance {
  public let plan: Plan
  public let state: StateFolder

  public init(plan: Plan, state: StateFolder) {
    self.plan = plan
    self.state = state
  }

  public var folder: String { state.base }

  /// The unsharded folder and every shard's.
  private var folders: [StateFolder] { [state.forShard(nil)] + state.shards().map { state.forShard($0) } }

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

  private func cache(_ session: Session, in folder: StateFolder) -> HTTPCache? {
    let path = folder.cache(session: session.name)
    guard access(path, F_OK) == 0 else { return nil }
    return HTTPCache(folder: path, settings: session.cache)
  }

  /// The partial files of this manifest's requests that exist now.
  public func partialFiles() -> [(path: String, size: Int64)] {
    var seen = Set<ByteString>()
    var result: [(path: String, size: Int64)] = []
    for request in plan.requests {
      guard let path = plan.partialPath(of: request), seen.insert(ByteString(path)).inserted,
        let info = FileAccess.status(path)
      else { continue }
      result.append((path, info.size))
    }
    return result
  }

  public func stats() throws(StateError) -> Stats {
    let prior = try state.priorOfAllShards()
    var stats = Stats()
    stats.results = prior.results.count
    // A record of a partial file made before its first byte holds nothing to go on from.
    stats.checkpoints = prior.checkpoints.values.count(where: \.holdsBytes)
    let partials = partialFiles()
    stats.partialFiles = partials.count
    stats.partialBytes = partials.reduce(0) { $0 + $1.size }
    for folder in folders {
      for session in plan.manifest.sessions {
        if let cache = cache(session, in: folder) {
          let (entries, bytes) = cache.stats()
          stats.cacheEntries += entries
          stats.cacheBytes += bytes
        }
        if access(folder.cookieJar(session: session.name), F_OK) == 0 { stats.cookieJars += 1 }
      }
    }
    return stats
  }

  public struct Cleared: Sendable {
    /// Partial files deleted.
    public var partialFiles = 0
    /// Damaged databases deleted (with every result they held).
    public var damagedDatabases: [String] = []
  }

  /// Removes this manifest's checkpoints and partial files, the sessions' HTTP caches and cookie
  /// jars (under each folder's lock). A damaged database, which SQLite cannot read, is deleted.
  ///
  /// - Throws: `StateLock.Held` when a run holds a lock; `StateError` when a database cannot be
  ///   written (a full disk); the files are removed first, so that they free space anyway.
  public func clear() throws -> Cleared {
    let locks = try folders.map { try StateLock(folder: $0.path, name: $0.lockName) }
    defer { withExtendedLifetime(locks) {} }
    var cleared = Cleared()
    var paths = Set(partialFiles().map(\.path))
    for path in paths.sorted() where unlink(path) == 0 { cleared.partialFiles += 1 }
    for folder in folders {
      for session in plan.manifest.sessions {
        _ = try cache(session, in: folder)?.clear()
        unlink(folder.cookieJar(session: session.name))
      }
    }
    paths.removeAll()
    for folder in folders {
      do {
        paths.formUnion(try clearStore(in: folder))
      } catch {
        guard error.kind == .damaged else { throw error }
        folder.removeDatabase()
        cleared.damagedDatabases.append(folder.database)
      }
    }
    for path in paths.sorted() where unlink(path) == 0 { cleared.partialFiles += 1 }
    return cleared
  }

  /// Removes the checkpoints and time budgets of one folder's store; returns the partial files
  /// the checkpoints named.
  private func clearStore(in folder: StateFolder) throws(StateError) -> [String] {
    guard let store = try folder.openStore(readOnly: access(folder.database, F_OK) != 0) else { return [] }
    do {
      let partials = try store.clearCheckpoints()
      try store.save(budgets: [], removing: try store.budgets().keys.map { $0 })
      return partials
    } catch {
      throw StateError(error, database: folder.database, arguments: folder.arguments)
    }
  }
}
