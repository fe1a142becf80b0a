import BatchDLManifest
import BatchDLPlan
import BatchDLSupport
import Crypto
import Foundation

/// A state folder that cannot be used: what went wrong, and what to do about it.
public struct StateError: Error, CustomStringConvertible {
  public enum Kind: Sendable, Equatable {
    /// `state.sqlite` is not a database, or its pages are damaged.
    case damaged
    /// The disk holding the state folder is full.
    case diskFull
    /// Written by a newer batchdl.
    case newer
    /// Anything else (permissions, a folder that cannot be created...).
    case unusable
  }

  public var kind: Kind
  /// The database file.
  public var database: String
  /// The manifest (and `--state DIR`) as the command was given them, for the advice.
  public var arguments: String
  public var detail: String

  public init(kind: Kind, database: String, arguments: String, detail: String) {
    self.kind = kind
    self.database = database
    self.arguments = arguments
    self.detail = detail
  }

  /// The error of SQLite (or of the file system under it) while `database` was used.
  public init(_ error: SQLiteError, database: String, arguments: String) {
    let kind: Kind
    if error.isDiskFull {
      kind = .diskFull
    } else if error.isDamage {
      kind = .damaged
    } else if error.message.contains("newer batchdl") {
      kind = .newer
    } else {
      kind = .unusable
    }
    self.init(kind: kind, database: database, arguments: arguments, detail: error.message)
  }

  public var description: String {
    let folder = FileAccess.directory(of: database)
    switch kind {
    case .damaged:
      return
        "the state database \(database) is damaged (\(detail)); run 'batchdl cache clear --yes \(arguments)' to "
        + "remove it: earlier results are forgotten, so finished files are downloaded again"
    case .diskFull:
      return "the disk holding the state folder \(folder) is full (\(detail)); free some space and run again"
    case .newer:
      return "\(detail) (\(folder))"
    case .unusable:
      return "cannot use the state database \(database): \(detail)"
    }
  }
}

/// One manifest's state folder and its layout (`--state DIR`, default `.batchdl/` beside the
/// manifest):
///
/// ```
/// DIR/
///   locks/MANIFEST.lock           a run's lock (flock), one per manifest
///   state.sqlite, -wal, -shm      checkpoints, results, time budgets (StateStore), per manifest
///   cookies/MANIFEST/SESSION.txt  cookie jars
///   cache/MANIFEST/SESSION/       HTTP caches of data tasks
///   reports/MANIFEST/SESSION.json reports handed to on_finished
///   runs/MANIFEST/run-N.json      the last runs' reports (report_history; RunHistory)
///   workers/ID.{lock,run.lock,json,log,report.json,events.jsonl,wake}   background workers
///   descriptors/HASH.{body,meta}  documents fetched before planning (Metalink by URL); HASH is
///                                 the SHA-256 of the URL with user-info and secrets masked
///   shard-I-of-N/                 the same (but workers/ and descriptors/) for `run --shard I/N`
/// ```
///
/// `MANIFEST` is `manifestKey`. Partial files are not here: each is beside its destination
/// (`PartialFile`).
///
/// Every command finds its files through this type, so that `run`, `plan`, `status`, `wait` and
/// `cache` agree.
public struct StateFolder: Sendable {
  /// The folder `--state` names (or the default), absolute and normalized, without a shard's
  /// sub-folder.
  public let base: String
  /// The shard whose state this is, when a sharded run keeps it apart.
  public let shard: Shard?
  /// The manifest (and `--state DIR`) as the command was given them, for advice in messages.
  public let arguments: String
  /// This manifest's rows in the database.
  public let scope: StateScope

  /// The state folder for `manifest`: `option` (against the working directory), else `.batchdl/`
  /// beside the manifest; `shard` selects a sharded run's sub-folder.
  public init(option: String?, manifest: Manifest, shard: Shard? = nil) {
    let directory = FileAccess.normalize(manifest.absoluteDirectory)
    base = FileAccess.normalize(option.map(Self.absolute) ?? directory + "/" + DefaultStateFolder.name)
    self.shard = shard
    arguments = ([manifest.path] + (option.map { ["--state", $0] } ?? [])).map(Self.quoted).joined(separator: " ")
    scope = StateScope(
      manifest: Self.relative(directory + "/" + FileAccess.name(of: manifest.resolvedPath), from: base),
      directory: manifest.absoluteDirectory)
  }

  private init(base: String, shard: Shard?, arguments: String, scope: StateScope) {
    self.base = base
    self.shard = shard
    self.arguments = arguments
    self.scope = scope
  }

  /// The same folder for another shard (nil: the unsharded one).
  public func forShard(_ shard: Shard?) -> StateFolder {
    StateFolder(base: base, shard: shard, arguments: arguments, scope: scope)
  }

  /// Where this run's (or shard's) state lives.
  public var path: String {
    guard let shard else { return base }
    return base + "/shard-\(shard.index)-of-\(shard.count)"
  }

  public var database: String { path + "/" + StateStore.fileName }
  /// The files SQLite keeps beside the database.
  public var databaseFiles: [String] { ["", "-wal", "-shm", "-journal"].map { database + $0 } }
  /// What this manifest's own files in a shared folder are named by: its file name and a digest of
  /// its path (`mirror.yaml-1a2b3c4d`). Two manifests in one folder share the database (each its
  /// rows) and nothing else: each has its lock, cookie jars, HTTP caches and session reports, so
  /// that they can run at once.
  public var manifestKey: String {
    let name = scope.manifest.split(separator: "/").last.map(String.init) ?? "manifest"
    let digest = SHA256.hash(data: Array(scope.manifest.utf8)).hexString.prefix(8)
    return name + "-" + digest
  }
  /// A jar kept where earlier versions kept it (`cookies/SESSION.txt`, shared by every manifest of
  /// the folder) becomes this manifest's when it has none yet: the first manifest to run keeps the
  /// cookies.
  public func adoptLegacyCookieJar(session: String) {
    let jar = cookieJar(session: session)
    let legacy = path + "/cookies/\(session).txt"
    guard access(jar, F_OK) != 0, access(legacy, F_OK) == 0 else { return }
    try? FileAccess.makeDirectories(FileAccess.directory(of: jar))
    _ = rename(legacy, jar)
  }

  /// The extension of lock files.
  package static let lockSuffix = ".lock"
  /// The folder of background workers' files, in a state folder's base.
  package static let workersName = "workers"

  /// The lock a run of this manifest takes (relative to the folder).
  public var lockName: String { "locks/" + manifestKey + Self.lockSuffix }
  public func cookieJar(session: String) -> String { path + "/cookies/\(manifestKey)/\(session).txt" }
  public func cache(session: String) -> String { path + "/cache/\(manifestKey)/\(session)" }
  public func sessionReport(session: String) -> String { path + "/reports/\(manifestKey)/\(session).json" }
  /// The last runs' reports (`report_history`).
  public var runHistory: RunHistory { RunHistory(folder: path + "/runs/\(manifestKey)") }
  /// Background workers are never sharded: their files are in the base folder.
  public var workers: String { Self.workersFolder(base: base) }

  /// The `workers/` folder of a state folder's `base`.
  public static func workersFolder(base: String) -> String { base + "/" + workersName }

  /// The files of a background session's worker, in the `workers/` folder of a state folder's
  /// base: the one place their names are spelled.
  public struct WorkerFiles: Sendable {
    public let folder: String
    public let identifier: String

    public init(base: String, identifier: String) {
      folder = StateFolder.workersFolder(base: base)
      self.identifier = identifier
    }

    /// What the worker last said about itself.
    public var status: String { folder + "/\(identifier).json" }
    public var log: String { folder + "/\(identifier).log" }
    public var report: String { folder + "/\(identifier).report.json" }
    public var events: String { folder + "/\(identifier).events.jsonl" }
    /// Left by `run` for a worker that should take a new pass.
    public var wake: String { folder + "/\(identifier).wake" }
    /// The worker's own lock (relative to the base), which says whether it is alive.
    public var lockName: String { StateFolder.workersName + "/" + identifier + StateFolder.lockSuffix }
    /// The lock its runs take (relative to the base), in place of a manifest's.
    public var runLockName: String { StateFolder.workersName + "/" + identifier + ".run" + StateFolder.lockSuffix }
  }
  /// Documents fetched before planning are shared by every shard: in the base folder.
  public var descriptors: String { base + "/descriptors" }
  /// The stored copy of the document at `maskedURL` (user-info and secrets masked): its bytes
  /// and its metadata (`ETag`, `Last-Modified`, SHA-256).
  /// `connection`: the fetching session's connection identity, when not the default (a copy
  /// fetched under one session's trust is never another's).
  public func descriptor(maskedURL: String, connection: String? = nil) -> (body: String, meta: String) {
    let key = maskedURL + (connection.map { "\n" + $0 } ?? "")
    let name = SHA256.hash(data: Array(key.utf8)).hexString
    return (descriptors + "/\(name).body", descriptors + "/\(name).meta")
  }

  /// The shards that have state under `base` (`shard-I-of-N/`), in order.
  public func shards() -> [Shard] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
    var result: [Shard] = []
    for entry in entries where entry.hasPrefix("shard-") {
      let parts = entry.dropFirst("shard-".count).split(separator: "-")
      guard parts.count == 3, parts[1] == "of", let index = Int(parts[0]), let count = Int(parts[2]),
        case .success(let shard) = Shard.parse("\(index)/\(count)")
      else { continue }
      result.append(shard)
    }
    return result.sorted { ($0.count, $0.index) < ($1.count, $1.index) }
  }

  /// This manifest's store: created unless `readOnly`; nil when reading a folder without one (or
  /// an empty database).
  public func openStore(readOnly: Bool = false) throws(StateError) -> StateStore? {
    do {
      return try StateStore.open(folder: path, scope: scope, readOnly: readOnly)
    } catch {
      throw StateError(error, database: database, arguments: arguments)
    }
  }

  /// Deletes the database and SQLite's files beside it (a damaged database that SQLite cannot
  /// open); returns whether there was one.
  @discardableResult
  public func removeDatabase() -> Bool {
    var removed = false
    for file in databaseFiles where unlink(file) == 0 { removed = true }
    return removed
  }

  // MARK: - Paths

  /// `text` as a shell word: quoted when it holds anything but letters, digits and `-_./=+,:@%`.
  package static func quoted(_ text: String) -> String {
    let plain =
      !text.isEmpty
      && text.unicodeScalars.allSatisfy {
        $0.properties.isAlphabetic || "0123456789-_./=+,:@%".unicodeScalars.contains($0)
      }
    return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
  }

  /// `path` made absolute against the working directory.
  public static func absolute(_ path: String) -> String {
    path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
  }

  /// `path` relative to the folder `base` (both absolute and normalized).
  public static func relative(_ path: String, from base: String) -> String {
    let target = path.split(separator: "/")
    let from = base.split(separator: "/")
    var common = 0
    while common < target.count && common < from.count && target[common] == from[common] { common += 1 }
    let up = Array(repeating: "..", count: from.count - common)
    return (up + target[common...].map(String.init)).joined(separator: "/")
  }
}
