import BatchDLSupport
import Foundation

/// The state folder's database (`state.sqlite`, WAL): checkpoints, results, and the time each
/// request has spent against `timeouts.resource`, each row under the manifest it belongs to
/// (`StateScope`). Nothing secret is stored: URLs are masked.
///
/// Schema 3 (schema 2 had no `extents`, and is migrated by adding the table; schema 1 had no
/// `manifest` column and stored absolute partial paths; a store of schema 1 is migrated when a run
/// opens it, its rows going to that run's manifest):
/// - `meta(key, value)`: `schema_version`;
/// - `checkpoints(manifest, request_key, partial, url, etag, last_modified, total, durable)`;
/// - `results(manifest, task_id, request_key, destination, outcome, status, size, sha256, etag,
///   last_modified, file_size, file_modified, error_code, error_message)`;
/// - `budgets(manifest, request_key, spent_ms, attempts)`;
/// - `extents(manifest, request_key, start, end)`: a segmented download's synced extents, beside
///   its checkpoint row;
/// - `placed(manifest, path, session, size, modified, inode, device)` (schema 5): each file a run
///   placed, by its destination in the plan's form (relative to the manifest's folder when inside
///   it), with the identity it had when placed: what `prune:` may remove (`PrunePlan`).
public final class StateStore {
  public static let schemaVersion = 5
  public static let fileName = "state.sqlite"

  private let db: SQLiteDatabase
  /// Nil: every manifest's rows are read (diagnostics and tests), and rows are written under "".
  private let scope: StateScope?
  /// A schema-1 store opened read-only: no `manifest` column.
  private let legacy: Bool
  /// Whether `results` has its `checked` column (schema 4; an older store opened read-only has not).
  private let hasChecked: Bool

  /// Opens the store in `folder`, creating and migrating it unless `readOnly`. A read-only open of
  /// a folder without a store, or of a database without tables (empty, or whose tables were only
  /// in a lost `-wal` file), returns nil: a fresh state.
  public static func open(
    folder: String, scope: StateScope? = nil, readOnly: Bool = false
  ) throws(SQLiteError)
    -> StateStore?
  {
    let path = folder + "/" + fileName
    if readOnly && access(path, F_OK) != 0 {
      // No store yet is a fresh state; a path that cannot hold one (a file where a folder should
      // be, no permission) is a state folder that cannot be used, as `run` finds it.
      guard errno == ENOENT else {
        let code = errno
        throw SQLiteError(
          code: 14, message: "cannot use the state folder: \(String(cString: strerror(code)))", systemErrno: code)
      }
      return nil
    }
    if !readOnly {
      do {
        try FileAccess.makeDirectories(folder)
      } catch {
        throw SQLiteError(code: 14, message: "cannot create the state folder: \(error)", systemErrno: error.code)
      }
    }
    let db = try SQLiteDatabase(path: path, readOnly: readOnly)
    let version = try Self.version(of: db)
    if version > Self.schemaVersion {
      throw SQLiteError(
        code: 0,
        message:
          "the state folder was written by a newer batchdl (schema \(version)); use that version or another --state")
    }
    if readOnly {
      guard version > 0 else { return nil }
      return StateStore(db: db, scope: scope, legacy: version < 2, hasChecked: version >= 4)
    }
    try Self.migrate(db, from: version, scope: scope)
    return StateStore(db: db, scope: scope, legacy: false, hasChecked: true)
  }

  private init(db: SQLiteDatabase, scope: StateScope?, legacy: Bool, hasChecked: Bool) {
    self.db = db
    self.scope = scope
    self.legacy = legacy
    self.hasChecked = hasChecked
  }

  /// `WHERE manifest = ?1` (with `and` for a further condition) when the store is scoped.
  private func filter(_ more: String? = nil) -> String {
    var conditions: [String] = []
    if scope != nil && !legacy { conditions.append("manifest = ?1") }
    if let more { conditions.append(more) }
    return conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
  }

  /// The values `filter` binds first.
  private var scopeValues: [SQLiteValue?] { scope != nil && !legacy ? [.text(scope?.manifest ?? "")] : [] }

  /// The manifest column's value for new rows.
  private var manifestValue: SQLiteValue { .text(scope?.manifest ?? "") }

  // MARK: - Checkpoints

  public func checkpoints() throws(SQLiteError) -> [String: Checkpoint] {
    let select = try db.prepare(
      "SELECT request_key, partial, url, etag, last_modified, total, durable FROM checkpoints" + filter())
    try select.bind(scopeValues)
    var result: [String: Checkpoint] = [:]
    while try select.step() {
      let key = select.text(0) ?? ""
      let partial = select.text(1) ?? ""
      result[key] = Checkpoint(
        key: key, partial: scope?.absolute(partial) ?? partial, url: select.text(2) ?? "", etag: select.text(3),
        lastModified: select.text(4), total: select.integer(5), durable: select.integer(6) ?? 0)
    }
    guard !legacy, try hasExtents() else { return result }
    let extents = try db.prepare("SELECT request_key, start, end FROM extents" + filter() + " ORDER BY start")
    try extents.bind(scopeValues)
    while try extents.step() {
      let key = extents.text(0) ?? ""
      guard result[key] != nil, let start = extents.integer(1), let end = extents.integer(2), end > start else {
        continue
      }
      result[key]?.extents.append(ByteExtent(start: start, end: end))
    }
    return result
  }

  /// Whether the database has the `extents` table (a read-only store of schema 2 has not).
  private func hasExtents() throws(SQLiteError) -> Bool {
    let tables = try db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'extents'")
    try tables.bind([])
    return try tables.step() && (tables.integer(0) ?? 0) > 0
  }

  /// Records checkpoints and removes others, in one transaction.
  public func update(checkpoints: [Checkpoint], removing removed: [String] = []) throws(SQLiteError) {
    guard !checkpoints.isEmpty || !removed.isEmpty else { return }
    try db.transaction { () throws(SQLiteError) in
      let insert = try db.prepare(
        """
        INSERT OR REPLACE INTO checkpoints (manifest, request_key, partial, url, etag, last_modified, total, durable)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
        """)
      let clear = try db.prepare("DELETE FROM extents WHERE manifest = ?1 AND request_key = ?2")
      let extent = try db.prepare(
        "INSERT OR REPLACE INTO extents (manifest, request_key, start, end) VALUES (?1, ?2, ?3, ?4)")
      for point in checkpoints {
        try insert.run([
          manifestValue, .text(point.key), .text(scope?.stored(point.partial) ?? point.partial), .text(point.url),
          .string(point.etag), .string(point.lastModified), .int(point.total), .integer(point.durable),
        ])
        try clear.run([manifestValue, .text(point.key)])
        for item in point.extents {
          try extent.run([manifestValue, .text(point.key), .integer(item.start), .integer(item.end)])
        }
      }
      let delete = try db.prepare("DELETE FROM checkpoints WHERE manifest = ?1 AND request_key = ?2")
      for key in removed {
        try delete.run([manifestValue, .text(key)])
        try clear.run([manifestValue, .text(key)])
      }
    }
  }

  /// Records partial files about to be written (request key, absolute path) as checkpoints of no
  /// bytes, in one transaction; a request that has a checkpoint keeps it.
  public func record(partials: [(key: String, path: String)]) throws(SQLiteError) {
    guard !partials.isEmpty else { return }
    try db.transaction { () throws(SQLiteError) in
      let insert = try db.prepare(
        """
        INSERT OR IGNORE INTO checkpoints (manifest, request_key, partial, url, etag, last_modified, total, durable)
        VALUES (?1, ?2, ?3, '', NULL, NULL, NULL, 0)
        """)
      for (key, path) in partials {
        try insert.run([manifestValue, .text(key), .text(scope?.stored(path) ?? path)])
      }
    }
  }

  /// Forgets the records of partial files (`record(partials:)`) of `keys`; a checkpoint that holds
  /// bytes stays.
  public func forget(partials keys: [String]) throws(SQLiteError) {
    guard !keys.isEmpty else { return }
    try db.transaction { () throws(SQLiteError) in
      let delete = try db.prepare(
        "DELETE FROM checkpoints WHERE manifest = ?1 AND request_key = ?2 AND durable = 0 AND url = ''")
      for key in keys { try delete.run([manifestValue, .text(key)]) }
    }
  }

  /// Removes every checkpoint (of this manifest); returns their partial files, for the caller to
  /// delete.
  public func clearCheckpoints() throws(SQLiteError) -> [String] {
    let partials = try checkpoints().values.map(\.partial)
    try db.prepare("DELETE FROM checkpoints" + filter()).run(scopeValues)
    try db.prepare("DELETE FROM extents" + filter()).run(scopeValues)
    return partials
  }

  // MARK: - Results

  public func results() throws(SQLiteError) -> StoredResults {
    let select = try db.prepare(
      """
      SELECT task_id, request_key, destination, outcome, status, size, sha256, etag, last_modified, file_size,
        file_modified, error_code, error_message, \(hasChecked ? "checked" : "NULL") FROM results
      """ + filter())
    try select.bind(scopeValues)
    var results = StoredResults()
    while try select.step() { results.add(row: select) }
    return results
  }

  public func save(results: [StoredResult]) throws(SQLiteError) {
    var batch = ResultBatch()
    for result in results { batch.append(result) }
    try save(results: batch)
  }

  /// Writes a batch of results in one transaction, `rowsPerInsert` rows a statement (the statements
  /// are prepared once for the store's life).
  package func save(results batch: ResultBatch) throws(SQLiteError) {
    guard !batch.isEmpty else { return }
    let many = try insertResults(rows: Self.rowsPerInsert)
    let one = try insertResults(rows: 1)
    // The rows that go in whole statements of `rowsPerInsert`; the rest go one by one.
    let inMany = batch.count - batch.count % Self.rowsPerInsert
    try db.transaction { () throws(SQLiteError) in
      // The texts are bound where they lie in the batch: the bindings are cleared before it goes.
      defer {
        many.reset()
        one.reset()
      }
      try many.bind(scope?.manifest ?? "", at: 1)
      try one.bind(scope?.manifest ?? "", at: 1)
      try batch.forEach { (index, row, text) throws(SQLiteError) in
        let insert = index < inMany ? many : one
        let place = index < inMany ? index % Self.rowsPerInsert : 0
        let first = Int32(2 + place * Self.resultColumns)
        try insert.bind(borrowing: text(row.taskID), at: first)
        try insert.bind(borrowing: text(row.requestKey), at: first + 1)
        try insert.bind(borrowing: text(row.destination), at: first + 2)
        try insert.bind(borrowing: text(row.outcome), at: first + 3)
        try insert.bind(row.status, at: first + 4)
        try insert.bind(row.size, at: first + 5)
        try insert.bind(borrowing: text(row.sha256), at: first + 6)
        try insert.bind(borrowing: text(row.etag), at: first + 7)
        try insert.bind(borrowing: text(row.lastModified), at: first + 8)
        try insert.bind(row.fileSize, at: first + 9)
        try insert.bind(row.fileModified, at: first + 10)
        try insert.bind(borrowing: text(row.errorCode), at: first + 11)
        try insert.bind(borrowing: text(row.errorMessage), at: first + 12)
        try insert.bind(row.checked, at: first + 13)
        if index >= inMany || place == Self.rowsPerInsert - 1 { try insert.runBound() }
      }
    }
  }

  /// Rows one statement of `save(results:)` inserts: SQLite's work for each statement (its cursors,
  /// its end) is shared by them, a third of what a row costs alone. A statement inserts its rows in
  /// order, as as many statements would (a later row of a task replaces an earlier one).
  private static let rowsPerInsert = 16

  /// The columns of a `results` row after `manifest`.
  private static let resultColumns = 14

  /// The statements `save(results:)` runs, by rows inserted, prepared on first use.
  private var insertResultStatements: [Int: SQLiteDatabase.Statement] = [:]

  /// `INSERT OR REPLACE INTO results` of `rows` rows: `?1` is the manifest, then each row's
  /// `resultColumns` values.
  private func insertResults(rows: Int) throws(SQLiteError) -> SQLiteDatabase.Statement {
    if let statement = insertResultStatements[rows] { return statement }
    let values = (0..<rows).map { row in
      "(?1, " + (0..<Self.resultColumns).map { "?\(2 + row * Self.resultColumns + $0)" }.joined(separator: ", ") + ")"
    }
    let statement = try db.prepare(
      """
      INSERT OR REPLACE INTO results (manifest, task_id, request_key, destination, outcome, status, size, sha256,
        etag, last_modified, file_size, file_modified, error_code, error_message, checked)
      VALUES
      """ + values.joined(separator: ", "))
    insertResultStatements[rows] = statement
    return statement
  }

  // MARK: - Budgets

  /// Time spent (ms) and attempts made so far per request key.
  public func budgets() throws(SQLiteError) -> [String: (spent: Int64, attempts: Int)] {
    let select = try db.prepare("SELECT request_key, spent_ms, attempts FROM budgets" + filter())
    try select.bind(scopeValues)
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
        "INSERT OR REPLACE INTO budgets (manifest, request_key, spent_ms, attempts) VALUES (?1, ?2, ?3, ?4)")
      for budget in budgets {
        try insert.run([manifestValue, .text(budget.key), .integer(budget.spent), .integer(Int64(budget.attempts))])
      }
      let delete = try db.prepare("DELETE FROM budgets WHERE manifest = ?1 AND request_key = ?2")
      for key in removed { try delete.run([manifestValue, .text(key)]) }
    }
  }

  // MARK: - Placed files

  /// Every file the state records as placed by this manifest's runs (`prune:` reads them). A store
  /// of an older schema opened read-only has none.
  public func placed() throws(SQLiteError) -> [PlacedFile] {
    guard !legacy, try hasTable("placed") else { return [] }
    let select = try db.prepare(
      "SELECT path, session, size, modified, inode, device FROM placed" + filter() + " ORDER BY path")
    try select.bind(scopeValues)
    var files: [PlacedFile] = []
    while try select.step() {
      files.append(
        PlacedFile(
          session: select.text(1) ?? "", path: select.text(0) ?? "", size: select.integer(2) ?? -1,
          modified: select.integer(3) ?? -1, inode: UInt64(bitPattern: select.integer(4) ?? -1),
          device: UInt64(bitPattern: select.integer(5) ?? -1)))
    }
    return files
  }

  /// Records files placed (replacing the record of the same path) and forgets others, by path, in
  /// one transaction.
  public func update(placed files: [PlacedFile], forgetting forgotten: [String] = []) throws(SQLiteError) {
    guard !files.isEmpty || !forgotten.isEmpty else { return }
    try db.transaction { () throws(SQLiteError) in
      let insert = try db.prepare(
        """
        INSERT OR REPLACE INTO placed (manifest, path, session, size, modified, inode, device)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
        """)
      for file in files {
        try insert.run([
          manifestValue, .text(file.path), .text(file.session), .integer(file.size), .integer(file.modified),
          .integer(Int64(bitPattern: file.inode)), .integer(Int64(bitPattern: file.device)),
        ])
      }
      let delete = try db.prepare("DELETE FROM placed WHERE manifest = ?1 AND path = ?2")
      for path in forgotten { try delete.run([manifestValue, .text(path)]) }
    }
  }

  /// Whether the database has the table `name` (a read-only store of an older schema may not).
  private func hasTable(_ name: String) throws(SQLiteError) -> Bool {
    let tables = try db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1")
    try tables.bind([.text(name)])
    return try tables.step() && (tables.integer(0) ?? 0) > 0
  }
}
