import Crypto
import Foundation

/// The disk tier's index (`index.sqlite`): one row per entry, in least-recently-used order by
/// `used_order`, a counter that survives reopening.
package final class CacheIndex {
  package static let schemaVersion: Int64 = 1

  package struct Row {
    package var url: String
    package var status: Int
    package var reason: String
    package var head: String
    package var bodySize: Int64
    package var bodySHA256: String
    package var size: Int64
    package var stored: Date
  }

  private let db: SQLiteDatabase
  private var lastOrder: Int64

  package init(path: String) throws(SQLiteError) {
    db = try SQLiteDatabase(path: path)
    let version = try Self.integer(db, "PRAGMA user_version")
    guard version == 0 || version == Self.schemaVersion else {
      throw SQLiteError(code: 0, message: "unknown cache index version \(version)")
    }
    try db.execute(
      """
      CREATE TABLE IF NOT EXISTS entries (
        key TEXT PRIMARY KEY, url TEXT NOT NULL, status INTEGER NOT NULL, reason TEXT NOT NULL,
        head TEXT NOT NULL, body_size INTEGER NOT NULL, body_sha256 TEXT NOT NULL, size INTEGER NOT NULL,
        stored_ms INTEGER NOT NULL, used_ms INTEGER NOT NULL, used_order INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS entries_by_use ON entries (used_order);
      PRAGMA user_version = \(Self.schemaVersion);
      """)
    lastOrder = try Self.integer(db, "SELECT COALESCE(MAX(used_order), 0) FROM entries")
  }

  private static func integer(_ db: SQLiteDatabase, _ sql: String) throws(SQLiteError) -> Int64 {
    let statement = try db.prepare(sql)
    try statement.bind([])
    return try statement.step() ? statement.integer(0) ?? 0 : 0
  }

  private static func milliseconds(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1000).rounded())
  }

  package func row(_ key: String) throws(SQLiteError) -> Row? {
    let select = try db.prepare(
      "SELECT url, status, reason, head, body_size, body_sha256, size, stored_ms FROM entries WHERE key = ?1")
    try select.bind([.text(key)])
    guard try select.step() else { return nil }
    return Row(
      url: select.text(0) ?? "", status: Int(select.integer(1) ?? 0), reason: select.text(2) ?? "",
      head: select.text(3) ?? "", bodySize: select.integer(4) ?? -1, bodySHA256: select.text(5) ?? "",
      size: select.integer(6) ?? 0,
      stored: Date(timeIntervalSince1970: TimeInterval(select.integer(7) ?? 0) / 1000))
  }

  /// Writes the row of `key` as the most recently used, then deletes the least recently used
  /// other rows until the total size fits `capacity`; returns the keys deleted.
  package func put(_ key: String, _ entry: CacheEntry, now: Date, capacity: Int64) throws(SQLiteError) -> [String] {
    lastOrder += 1
    let order = lastOrder
    return try db.transaction { () throws(SQLiteError) -> [String] in
      let insert = try db.prepare(
        """
        INSERT OR REPLACE INTO entries (key, url, status, reason, head, body_size, body_sha256, size, stored_ms,
          used_ms, used_order) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
        """)
      try insert.run([
        .text(key), .text(entry.url), .integer(Int64(entry.head.status)), .text(entry.head.reason),
        .text(entry.headText), .integer(Int64(entry.body.count)), .text(SHA256.hash(data: entry.body).hexString),
        .integer(entry.size), .integer(Self.milliseconds(entry.stored)), .integer(Self.milliseconds(now)),
        .integer(order),
      ])
      var total = try totals().bytes
      guard total > capacity else { return [] }
      var evicted: [String] = []
      let delete = try db.prepare("DELETE FROM entries WHERE key = ?1")
      for (old, size) in try byUse(excluding: key) {
        guard total > capacity else { break }
        try delete.run([.text(old)])
        total -= size
        evicted.append(old)
      }
      return evicted
    }
  }

  /// The keys and sizes of the rows other than `key`, least recently used first.
  private func byUse(excluding key: String) throws(SQLiteError) -> [(String, Int64)] {
    let select = try db.prepare("SELECT key, size FROM entries WHERE key != ?1 ORDER BY used_order")
    try select.bind([.text(key)])
    var rows: [(String, Int64)] = []
    while try select.step() { rows.append((select.text(0) ?? "", select.integer(1) ?? 0)) }
    return rows
  }

  /// Marks `key` as the most recently used.
  package func touch(_ key: String, now: Date) throws(SQLiteError) {
    lastOrder += 1
    try db.prepare("UPDATE entries SET used_ms = ?2, used_order = ?3 WHERE key = ?1").run([
      .text(key), .integer(Self.milliseconds(now)), .integer(lastOrder),
    ])
  }

  package func delete(_ key: String) throws(SQLiteError) {
    try db.prepare("DELETE FROM entries WHERE key = ?1").run([.text(key)])
  }

  package func deleteAll() throws(SQLiteError) {
    try db.execute("DELETE FROM entries")
  }

  package func totals() throws(SQLiteError) -> (entries: Int, bytes: Int64) {
    let select = try db.prepare("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM entries")
    try select.bind([])
    guard try select.step() else { return (0, 0) }
    return (Int(select.integer(0) ?? 0), select.integer(1) ?? 0)
  }

  package func allKeys() throws(SQLiteError) -> [String] {
    let select = try db.prepare("SELECT key FROM entries")
    try select.bind([])
    var keys: [String] = []
    while try select.step() { keys.append(select.text(0) ?? "") }
    return keys
  }
}
