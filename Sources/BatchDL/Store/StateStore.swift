import Foundation

/// What is known of an unfinished download: enough to ask for the rest and to check that the
/// server still has the same file.
public struct Checkpoint: Sendable, Equatable {
  /// The request key (hex).
  public var key: String
  /// The partial file, absolute.
  public var partial: String
  /// The URL after redirects, credentials masked (informational).
  public var url: String
  /// A strong `ETag`, else nil.
  public var etag: String?
  public var lastModified: String?
  /// The full length the server announced, when it did.
  public var total: Int64?
  /// Bytes of the partial file known to be on disk (written and `fdatasync`ed).
  public var durable: Int64

  public init(
    key: String, partial: String, url: String, etag: String?, lastModified: String?, total: Int64?, durable: Int64
  ) {
    self.key = key
    self.partial = partial
    self.url = url
    self.etag = etag
    self.lastModified = lastModified
    self.total = total
    self.durable = durable
  }

  /// The `If-Range` validator: the strong ETag, else `Last-Modified`.
  public var validator: String? { etag ?? lastModified }
}

/// A task's last result, and what its file looked like when it was placed.
public struct StoredResult: Sendable, Equatable {
  public var taskID: String
  public var requestKey: String
  /// The destination, absolute, when the task has one.
  public var destination: String?
  public var outcome: String
  public var status: Int?
  public var size: Int64?
  public var sha256: String?
  public var etag: String?
  public var lastModified: String?
  /// The placed file's size and modification time (nanoseconds), to tell whether it changed since.
  public var fileSize: Int64?
  public var fileModified: Int64?
  public var errorCode: String?
  public var errorMessage: String?

  public init(
    taskID: String, requestKey: String, destination: String?, outcome: String, status: Int? = nil, size: Int64? = nil,
    sha256: String? = nil, etag: String? = nil, lastModified: String? = nil, fileSize: Int64? = nil,
    fileModified: Int64? = nil, errorCode: String? = nil, errorMessage: String? = nil
  ) {
    self.taskID = taskID
    self.requestKey = requestKey
    self.destination = destination
    self.outcome = outcome
    self.status = status
    self.size = size
    self.sha256 = sha256
    self.etag = etag
    self.lastModified = lastModified
    self.fileSize = fileSize
    self.fileModified = fileModified
    self.errorCode = errorCode
    self.errorMessage = errorMessage
  }
}

/// The state folder's database (`state.sqlite`, WAL): checkpoints, results, and the time each
/// request has spent against `timeouts.resource`. Nothing secret is stored: URLs are masked.
public final class StateStore {
  public static let schemaVersion = 1
  public static let fileName = "state.sqlite"

  private let db: SQLiteDatabase

  /// Opens the store in `folder`, creating and migrating it unless `readOnly`. A read-only open of a
  /// folder without a store returns nil.
  public static func open(folder: String, readOnly: Bool = false) throws(SQLiteError) -> StateStore? {
    let path = folder + "/" + fileName
    if readOnly && access(path, F_OK) != 0 { return nil }
    if !readOnly {
      do {
        try FileAccess.makeDirectories(folder)
      } catch {
        throw SQLiteError(code: 14, message: "cannot create the state folder: \(error)")
      }
    }
    return try StateStore(path: path, readOnly: readOnly)
  }

  private init(path: String, readOnly: Bool) throws(SQLiteError) {
    db = try SQLiteDatabase(path: path, readOnly: readOnly)
    if !readOnly { try migrate() }
  }

  private func migrate() throws(SQLiteError) {
    try db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    let select = try db.prepare("SELECT value FROM meta WHERE key = 'schema_version'")
    try select.bind([])
    let current = try select.step() ? Int(select.text(0) ?? "0") ?? 0 : 0
    if current > Self.schemaVersion {
      throw SQLiteError(
        code: 0,
        message:
          "the state folder was written by a newer batchdl (schema \(current)); use that version or another --state")
    }
    if current < 1 {
      try db.transaction { () throws(SQLiteError) in
        try db.execute(
          """
          CREATE TABLE IF NOT EXISTS checkpoints (
            request_key TEXT PRIMARY KEY, partial TEXT NOT NULL, url TEXT NOT NULL, etag TEXT,
            last_modified TEXT, total INTEGER, durable INTEGER NOT NULL);
          CREATE TABLE IF NOT EXISTS results (
            task_id TEXT PRIMARY KEY, request_key TEXT NOT NULL, destination TEXT, outcome TEXT NOT NULL,
            status INTEGER, size INTEGER, sha256 TEXT, etag TEXT, last_modified TEXT, file_size INTEGER,
            file_modified INTEGER, error_code TEXT, error_message TEXT);
          CREATE TABLE IF NOT EXISTS budgets (
            request_key TEXT PRIMARY KEY, spent_ms INTEGER NOT NULL, attempts INTEGER NOT NULL);
          INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', '1');
          """)
      }
    }
  }

  // MARK: - Checkpoints

  public func checkpoints() throws(SQLiteError) -> [String: Checkpoint] {
    let select = try db.prepare(
      "SELECT request_key, partial, url, etag, last_modified, total, durable FROM checkpoints")
    try select.bind([])
    var result: [String: Checkpoint] = [:]
    while try select.step() {
      let key = select.text(0) ?? ""
      result[key] = Checkpoint(
        key: key, partial: select.text(1) ?? "", url: select.text(2) ?? "", etag: select.text(3),
        lastModified: select.text(4), total: select.integer(5), durable: select.integer(6) ?? 0)
    }
    return result
  }

  /// Records checkpoints and removes others, in one transaction.
  public func update(checkpoints: [Checkpoint], removing removed: [String] = []) throws(SQLiteError) {
    guard !checkpoints.isEmpty || !removed.isEmpty else { return }
    try db.transaction { () throws(SQLiteError) in
      let insert = try db.prepare(
        """
        INSERT OR REPLACE INTO checkpoints (request_key, partial, url, etag, last_modified, total, durable)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
        """)
      for point in checkpoints {
        try insert.run([
          .text(point.key), .text(point.partial), .text(point.url), .string(point.etag), .string(point.lastModified),
          .int(point.total), .integer(point.durable),
        ])
      }
      let delete = try db.prepare("DELETE FROM checkpoints WHERE request_key = ?1")
      for key in removed { try delete.run([.text(key)]) }
    }
  }

  /// Removes every checkpoint; returns their partial files, for the caller to delete.
  public func clearCheckpoints() throws(SQLiteError) -> [String] {
    let partials = try checkpoints().values.map(\.partial)
    try db.execute("DELETE FROM checkpoints")
    return partials
  }

  // MARK: - Results

  public func results() throws(SQLiteError) -> [String: StoredResult] {
    let select = try db.prepare(
      """
      SELECT task_id, request_key, destination, outcome, status, size, sha256, etag, last_modified, file_size,
        file_modified, error_code, error_message FROM results
      """)
    try select.bind([])
    var result: [String: StoredResult] = [:]
    while try select.step() {
      let id = select.text(0) ?? ""
      result[id] = StoredResult(
        taskID: id, requestKey: select.text(1) ?? "", destination: select.text(2), outcome: select.text(3) ?? "",
        status: select.integer(4).map { Int($0) }, size: select.integer(5), sha256: select.text(6),
        etag: select.text(7),
        lastModified: select.text(8), fileSize: select.integer(9), fileModified: select.integer(10),
        errorCode: select.text(11), errorMessage: select.text(12))
    }
    return result
  }

  public func save(results: [StoredResult]) throws(SQLiteError) {
    guard !results.isEmpty else { return }
    try db.transaction { () throws(SQLiteError) in
      let insert = try db.prepare(
        """
        INSERT OR REPLACE INTO results (task_id, request_key, destination, outcome, status, size, sha256, etag,
          last_modified, file_size, file_modified, error_code, error_message)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
        """)
      for item in results {
        try insert.run([
          .text(item.taskID), .text(item.requestKey), .string(item.destination), .text(item.outcome),
          .int(item.status.map { Int64($0) }), .int(item.size), .string(item.sha256), .string(item.etag),
          .string(item.lastModified), .int(item.fileSize), .int(item.fileModified), .string(item.errorCode),
          .string(item.errorMessage),
        ])
      }
    }
  }

  // MARK: - Budgets

  /// Time spent (ms) and attempts made so far per request key.
  public func budgets() throws(SQLiteError) -> [String: (spent: Int64, attempts: Int)] {
    let select = try db.prepare("SELECT request_key, spent_ms, attempts FROM budgets")
    try select.bind([])
    var result: [String: (spent: Int64, attempts: Int)] = [:]
    while try select.step() {
      result[select.text(0) ?? ""] = (select.integer(1) ?? 0, Int(select.integer(2) ?? 0))
    }
    return result
  }

  public func save(
    budgets: [(key: String, spent: Int64, attempts: Int)], removing removed: [String] = []
  )
    throws(SQLiteError)
  {
    guard !budgets.isEmpty || !removed.isEmpty else { return }
    try db.transaction { () throws(SQLiteError) in
      let insert = try db.prepare(
        "INSERT OR REPLACE INTO budgets (request_key, spent_ms, attempts) VALUES (?1, ?2, ?3)")
      for budget in budgets {
        try insert.run([.text(budget.key), .integer(budget.spent), .integer(Int64(budget.attempts))])
      }
      let delete = try db.prepare("DELETE FROM budgets WHERE request_key = ?1")
      for key in removed { try delete.run([.text(key)]) }
    }
  }
}
