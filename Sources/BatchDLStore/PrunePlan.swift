import BatchDLManifest
import BatchDLPlan
import BatchDLSupport

/// A file a run placed, as the state folder records it (`placed` table): the destination in the
/// plan's form (relative to the manifest's folder when inside it, else absolute) and the identity
/// the file had once in place.
public struct PlacedFile: Sendable, Equatable {
  /// The session whose task placed it last.
  public var session: String
  /// Untrusted when read back: the database may have been edited.
  public var path: String
  public var size: Int64
  /// Nanoseconds since the epoch.
  public var modified: Int64
  public var inode: UInt64
  public var device: UInt64

  public init(session: String, path: String, size: Int64, modified: Int64, inode: UInt64, device: UInt64) {
    self.session = session
    self.path = path
    self.size = size
    self.modified = modified
    self.inode = inode
    self.device = device
  }

  public init(session: String, path: String, identity: FileIdentity) {
    self.init(
      session: session, path: path, size: identity.size, modified: identity.modified, inode: identity.inode,
      device: identity.device)
  }

  /// Whether `identity` is the file as it was placed: same device, inode, size and time.
  public func matches(_ identity: FileIdentity) -> Bool {
    identity.device == device && identity.inode == inode && identity.size == size && identity.modified == modified
  }
}

/// What the file at a recorded path is now.
public enum PlacedFileState: Sendable, Equatable {
  /// Still the file batchdl placed.
  case placed
  /// Nothing is there.
  case missing
  /// Something else is there, or the way to it changed: never touched. Why, in words.
  case changed(String)
}

/// What `prune:` does for one session, decided once from the plan and the state folder's records:
/// `plan` lists it, `run` carries it out. A value: the files are looked at only through the
/// `inspect` function given to `decide`.
public struct PrunePlan: Sendable {
  /// A file to delete: the record's path (the plan's form, as the report shows it), the path
  /// relative to the session's `dest`, and the record (the file must still match it when removed).
  public struct Deletion: Sendable, Equatable {
    public var path: String
    public var relative: String
    public var record: PlacedFile
  }

  /// A record left alone, and why.
  public struct Left: Sendable, Equatable {
    public var path: String
    public var why: String
  }

  public let session: String
  /// The session's `dest`, absolute and normalized.
  public let root: String
  /// The limit in force: `prune.max_delete`, or `run --max-delete` for one run (`override`).
  public private(set) var limit: PruneLimit?
  /// Where `limit` comes from, as messages name it: `prune.max_delete` or `--max-delete`.
  public private(set) var limitName = "prune.max_delete"
  /// Files no task names any more that are still as batchdl placed them, sorted by path.
  public var deletions: [Deletion] = []
  /// Records whose file is something else now (the user replaced it, a folder or a symbolic link
  /// is there): the file is left, a warning says so, and the record is forgotten.
  public var changed: [Left] = []
  /// Records that no rule lets batchdl touch: a path outside `dest`, with `..` or `.` parts, or one
  /// of batchdl's own files (a state folder that was edited). Never deleted; a warning says so.
  public var refused: [Left] = []
  /// Records of files that are gone: forgotten.
  public var gone: [String] = []
  /// Records of the session's files under `dest` (named or not): what a share in `max_delete`
  /// counts against.
  public var recorded = 0
  /// Recorded files no task names that an `apt:` entry's `keep_removed` keeps for now.
  public var kept = 0
  /// Why the run must not prune (a task or a descriptor of the session failed), or nil.
  public var blocked: String?

  /// The most files `max_delete` lets a run delete, nil without a limit.
  public var allowed: Int? { limit?.allowed(recorded: recorded) }

  /// Deleting every file in `deletions` would pass `max_delete`: the run deletes nothing and fails
  /// with `prune-limit`.
  public var exceedsLimit: Bool { allowed.map { deletions.count > $0 } ?? false }

  /// What a run would do: delete `deletions` (not blocked, within the limit).
  public var deletes: Bool { blocked == nil && !exceedsLimit && !deletions.isEmpty }

  /// Records to forget after a run that pruned: the files deleted, gone or changed.
  public var forgotten: [String] { deletions.map(\.path) + gone + changed.map(\.path) }

  /// This run's `--max-delete`, which replaces the session's `prune.max_delete`.
  public mutating func override(limit: PruneLimit) {
    self.limit = limit
    limitName = "--max-delete"
  }

  /// How many names a message shows before `and N more`.
  public static let namesShown = 5

  /// The first `shown` of `paths` and how many more (`m/a, m/b and 3 more`); `shown` names at
  /// most.
  public static func firstNames(_ paths: [String], shown: Int = namesShown) -> String {
    let head = paths.prefix(shown).joined(separator: ", ")
    return paths.count > shown ? head + " and \(paths.count - shown) more" : head
  }

  /// Why `max_delete` refuses: how many, the limit, and the first files it would delete (`would
  /// delete 8 of the 10 files ... (5): m/a, m/b, m/c, m/d, m/e and 3 more`).
  public var limitReason: String {
    let limitText = limit.map(\.description) ?? ""
    let share = limit.map { if case .percent = $0 { return " of \(recorded)" } else { return "" } } ?? ""
    return
      "would delete \(deletions.count) of the \(recorded) files recorded under its dest, more than \(limitName) \(limitText)\(share) allows (\(allowed ?? 0)): \(Self.firstNames(deletions.map(\.path)))"
  }

  /// What to do when `max_delete` refuses: look upstream, then accept the deletions for one run
  /// (`--max-delete` with their count), raise the limit, or keep the files.
  public var limitAdvice: String {
    "check the upstream listing (an empty or partial listing shrinks the plan); if the files were really removed upstream, run once with --max-delete \(deletions.count) to delete them (or raise prune.max_delete), or run with --no-prune to keep them"
  }

  /// The `prune-limit` message of a run: how many, the limit, the first files, and what to do.
  public var limitMessage: String {
    "prune of session \(session) \(limitReason); nothing was deleted: \(limitAdvice)"
  }

  /// Decides what pruning session `index` of `plan` means, from the records of files placed by the
  /// manifest's runs (`records`, every session's) and what `inspect(root, relative, record)` says
  /// of each file no task names any more (`root`: the session's `dest`, absolute; `relative`: the
  /// file below it). Nil when the session does not prune. `blocked`: why the run must not
  /// delete anything (its tasks or descriptors failed); `reserved`: batchdl's own files.
  package static func decide(
    session index: Int, plan: Plan, records: [PlacedFile], blocked: String? = nil,
    reserved: ReservedPaths? = nil,
    inspect: (_ root: String, _ relative: String, _ record: PlacedFile) -> PlacedFileState
  ) -> PrunePlan? {
    let session = plan.manifest.sessions[index]
    guard let settings = session.prune else { return nil }
    let root = FileAccess.normalize(plan.absolute(session.dest.isEmpty ? "." : session.dest))
    var result = PrunePlan(session: session.name, root: root, limit: settings.maxDelete)
    result.blocked = blocked
    let own = records.filter { $0.session == session.name }
    guard !own.isEmpty else { return result }
    // Every destination of the plan, any session's: a file some task still names stays.
    // By their bytes: a task's `café` in NFC does not keep a placed `café` in NFD.
    var named = Set<ByteString>()
    let wanted = Set(own.map { ByteString($0.path) })
    for task in plan.tasks where !task.to.isNone {
      let destination = ByteString(plan.text.string(task.to))
      if wanted.contains(destination) { named.insert(destination) }
    }
    let prefix = root == "/" ? "/" : root + "/"
    for record in own.sorted(by: { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }) {
      if let why = unsafe(record.path) {
        result.refused.append(Left(path: record.path, why: why))
        continue
      }
      let absolute = FileAccess.normalize(plan.absolute(record.path))
      guard absolute.hasPrefix(prefix), absolute.utf8.count > prefix.utf8.count else {
        // Under another dest (the session's `dest` changed since), or nowhere batchdl may go.
        result.refused.append(Left(path: record.path, why: "it is not under the session's dest \(root)"))
        continue
      }
      if let reserved, let why = reserved.problem(with: absolute, in: "/") {
        result.refused.append(Left(path: record.path, why: "it \(why)"))
        continue
      }
      result.recorded += 1
      if named.contains(ByteString(record.path)) { continue }
      if plan.keptFromPrune[Array(record.path.utf8)] != nil {
        result.kept += 1
        continue
      }
      let relative = String(absolute.dropFirst(prefix.count))
      switch inspect(root, relative, record) {
      case .placed: result.deletions.append(Deletion(path: record.path, relative: relative, record: record))
      case .missing: result.gone.append(record.path)
      case .changed(let why): result.changed.append(Left(path: record.path, why: why))
      }
    }
    return result
  }

  /// Why a recorded path is not one batchdl could have written: empty, `.`, `..` or empty parts, a
  /// control character.
  static func unsafe(_ path: String) -> String? {
    if path.isEmpty { return "the path is empty" }
    // On the bytes, as the kernel reads the path (every byte of a non-ASCII character is 0x80 or more).
    let bytes = Array(path.utf8)
    if bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) { return "the path has a control character" }
    for (offset, part) in bytes.split(separator: 0x2F, omittingEmptySubsequences: false).enumerated() {
      if part.elementsEqual([0x2E, 0x2E]) { return "the path climbs out with '..'" }
      if part.elementsEqual([0x2E]) || (part.isEmpty && offset > 0) { return "the path has '.' or empty parts" }
    }
    return nil
  }
}
