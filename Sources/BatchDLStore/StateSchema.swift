import BatchDLSupport
import Foundation

// The schema of `state.sqlite` (documented on `StateStore`) and its migrations. These are internal,
// not private, because `StateStore.open` (StateStore.swift) reads the version and migrates.
extension StateStore {
  /// The schema version recorded in the database, 0 when it has none (a new or empty database).
  /// Reading the schema is what first touches the file: a file that is no database fails here.
  static func version(of db: SQLiteDatabase) throws(SQLiteError) -> Int {
    let tables = try db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'")
    try tables.bind([])
    guard try tables.step(), tables.integer(0) ?? 0 > 0 else { return 0 }
    let select = try db.prepare("SELECT value FROM meta WHERE key = 'schema_version'")
    try select.bind([])
    return try select.step() ? Int(select.text(0) ?? "0") ?? 0 : 0
  }

  static let tables = """
    CREATE TABLE IF NOT EXISTS checkpoints (
      manifest TEXT NOT NULL, request_key TEXT NOT NULL, partial TEXT NOT NULL, url TEXT NOT NULL, etag TEXT,
      last_modified TEXT, total INTEGER, durable INTEGER NOT NULL, PRIMARY KEY (manifest, request_key));
    CREATE TABLE IF NOT EXISTS results (
      manifest TEXT NOT NULL, task_id TEXT NOT NULL, request_key TEXT NOT NULL, destination TEXT,
      outcome TEXT NOT NULL, status INTEGER, size INTEGER, sha256 TEXT, etag TEXT, last_modified TEXT,
      file_size INTEGER, file_modified INTEGER, error_code TEXT, error_message TEXT, checked INTEGER,
      PRIMARY KEY (manifest, task_id));
    CREATE TABLE IF NOT EXISTS budgets (
      manifest TEXT NOT NULL, request_key TEXT NOT NULL, spent_ms INTEGER NOT NULL, attempts INTEGER NOT NULL,
      PRIMARY KEY (manifest, request_key));
    CREATE TABLE IF NOT EXISTS extents (
      manifest TEXT NOT NULL, request_key TEXT NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
      PRIMARY KEY (manifest, request_key, start));
    CREATE TABLE IF NOT EXISTS placed (
      manifest TEXT NOT NULL, path TEXT NOT NULL, session TEXT NOT NULL, size INTEGER NOT NULL,
      modified INTEGER NOT NULL, inode INTEGER NOT NULL, device INTEGER NOT NULL, PRIMARY KEY (manifest, path));
    INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', '5');
    """

  static func migrate(_ db: SQLiteDatabase, from current: Int, scope: StateScope?) throws(SQLiteError) {
    guard current < schemaVersion else { return }
    try db.transaction { () throws(SQLiteError) in
      try db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
      guard current == 1 else {
        // A new store, or schema 2 to 4: the tables it lacks are added, its rows stay; schema 4
        // added `results.checked` (NULL for the rows before it: never asked with `refresh`),
        // schema 5 the `placed` table (empty: files placed before it are not known to prune).
        if current >= 2 {
          let columns = try db.prepare("SELECT count(*) FROM pragma_table_info('results') WHERE name = 'checked'")
          try columns.bind([])
          if try columns.step(), columns.integer(0) ?? 0 == 0 {
            try db.execute("ALTER TABLE results ADD COLUMN checked INTEGER")
          }
        }
        try db.execute(tables)
        return
      }
      // Schema 1 kept one manifest's rows, without saying whose: they become the rows of the
      // manifest that opens the store first; partial files inside its folder become relative.
      try db.execute(
        """
        ALTER TABLE checkpoints RENAME TO checkpoints_v1;
        ALTER TABLE results RENAME TO results_v1;
        ALTER TABLE budgets RENAME TO budgets_v1;
        """)
      try db.execute(tables)
      let manifest = scope?.manifest ?? ""
      let prefix = scope.map { $0.directory.hasSuffix("/") ? $0.directory : $0.directory + "/" } ?? "/"
      try db.prepare(
        """
        INSERT INTO checkpoints SELECT ?1, request_key,
          CASE WHEN ?3 AND substr(partial, 1, length(?2)) = ?2 THEN substr(partial, length(?2) + 1) ELSE partial END,
          url, etag, last_modified, total, durable FROM checkpoints_v1
        """
      ).run([.text(manifest), .text(prefix), .integer(scope == nil ? 0 : 1)])
      try db.prepare(
        """
        INSERT INTO results SELECT ?1, task_id, request_key, destination, outcome, status, size, sha256, etag,
          last_modified, file_size, file_modified, error_code, error_message, NULL FROM results_v1
        """
      ).run([.text(manifest)])
      try db.prepare("INSERT INTO budgets SELECT ?1, request_key, spent_ms, attempts FROM budgets_v1").run([
        .text(manifest)
      ])
      try db.execute("DROP TABLE checkpoints_v1; DROP TABLE results_v1; DROP TABLE budgets_v1;")
    }
  }
}
