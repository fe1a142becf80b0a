import CSQLite
import Foundation

/// A failed SQLite call, with SQLite's own message.
public struct SQLiteError: Error, CustomStringConvertible {
  public var code: Int32
  public var message: String
  /// The `errno` of the system call that failed under SQLite, when one did (`ENOSPC`...).
  public var systemErrno: Int32 = 0

  public init(code: Int32, message: String, systemErrno: Int32 = 0) {
    self.code = code
    self.message = message
    self.systemErrno = systemErrno
  }

  public var description: String { "SQLite error \(code): \(message)" }

  /// The database file is not a database, or its pages are damaged.
  public var isDamage: Bool { code & 0xff == SQLITE_CORRUPT || code & 0xff == SQLITE_NOTADB }

  /// The disk (or the file size limit) is full.
  public var isDiskFull: Bool { code & 0xff == SQLITE_FULL || systemErrno == ENOSPC || systemErrno == EDQUOT }
}

/// A thin wrapper over one SQLite connection: every call checked, statements finalized in `deinit`.
package final class SQLiteDatabase {
  private let handle: OpaquePointer

  /// Opens (or creates) the database at `path`, in WAL mode, with a busy timeout so that a reader
  /// (`batchdl plan` while a run writes) waits briefly instead of failing.
  package init(path: String, readOnly: Bool = false) throws(SQLiteError) {
    var db: OpaquePointer?
    let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
    let code = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
    guard code == SQLITE_OK, let db else {
      let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
      let system = db.map { sqlite3_system_errno($0) } ?? 0
      if let db { sqlite3_close(db) }
      throw SQLiteError(code: code, message: message, systemErrno: system)
    }
    handle = db
    sqlite3_busy_timeout(db, 5000)
    if !readOnly {
      try execute("PRAGMA journal_mode=WAL")
      try execute("PRAGMA synchronous=NORMAL")
    }
  }

  deinit {
    sqlite3_close_v2(handle)
  }

  private func check(_ code: Int32) throws(SQLiteError) {
    guard code == SQLITE_OK || code == SQLITE_DONE || code == SQLITE_ROW else {
      throw error(code)
    }
  }

  /// Runs SQL that returns no rows (several statements allowed).
  package func execute(_ sql: String) throws(SQLiteError) {
    try check(sqlite3_exec(handle, sql, nil, nil, nil))
  }

  package func prepare(_ sql: String) throws(SQLiteError) -> Statement {
    var statement: OpaquePointer?
    try check(sqlite3_prepare_v2(handle, sql, -1, &statement, nil))
    guard let statement else { throw SQLiteError(code: SQLITE_MISUSE, message: "empty statement: \(sql)") }
    return Statement(statement, database: self)
  }

  /// Runs `body` in one transaction: committed if it returns, rolled back if it throws.
  package func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
    try execute("BEGIN IMMEDIATE")
    do {
      let result = try body()
      try execute("COMMIT")
      return result
    } catch {
      try? execute("ROLLBACK")
      throw error
    }
  }

  fileprivate func error(_ code: Int32) -> SQLiteError {
    SQLiteError(
      code: code, message: String(cString: sqlite3_errmsg(handle)), systemErrno: sqlite3_system_errno(handle))
  }

  /// A prepared statement; bind, step, read columns, reset.
  package final class Statement {
    private let statement: OpaquePointer
    private let database: SQLiteDatabase

    fileprivate init(_ statement: OpaquePointer, database: SQLiteDatabase) {
      self.statement = statement
      self.database = database
    }

    deinit {
      sqlite3_finalize(statement)
    }

    /// Binds values to `?1`, `?2`... in order; nil binds NULL.
    package func bind(_ values: [SQLiteValue?]) throws(SQLiteError) {
      sqlite3_reset(statement)
      // Parameters left out bind NULL; when every one is given, each is bound below anyway.
      if values.count < sqlite3_bind_parameter_count(statement) { sqlite3_clear_bindings(statement) }
      for (index, value) in values.enumerated() {
        let position = Int32(index + 1)
        let code: Int32
        switch value {
        case nil: code = sqlite3_bind_null(statement, position)
        case .integer(let number): code = sqlite3_bind_int64(statement, position, number)
        case .text(let text): code = Self.bind(text, at: position, in: statement)
        }
        guard code == SQLITE_OK else { throw database.error(code) }
      }
    }

    /// Binds the string's UTF-8 bytes where they are (SQLite copies them), without the
    /// NUL-terminated copy that passing a `String` as a C string makes: the state store binds
    /// eight texts for every file of a run.
    private static func bind(_ text: String, at position: Int32, in statement: OpaquePointer?) -> Int32 {
      let bound = text.utf8.withContiguousStorageIfAvailable { bytes -> Int32? in
        guard let start = bytes.baseAddress else { return nil }
        return sqlite3_bind_text(
          statement, position, UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self), Int32(bytes.count),
          csqlite_transient())
      }
      return (bound ?? nil) ?? sqlite3_bind_text(statement, position, text, -1, csqlite_transient())
    }

    /// Binds `?position` to text that SQLite reads where it lies, without copying it: the bytes must
    /// stay where they are until the statement has run and its bindings are cleared (`reset()`).
    /// Nil binds NULL.
    package func bind(borrowing text: UnsafeRawBufferPointer?, at position: Int32) throws(SQLiteError) {
      let code: Int32
      if let text, let start = text.baseAddress {
        // A nil destructor is SQLITE_STATIC: SQLite keeps the pointer instead of a copy.
        code = sqlite3_bind_text(
          statement, position, start.assumingMemoryBound(to: CChar.self), Int32(text.count), nil)
      } else if text != nil {
        code = sqlite3_bind_text(statement, position, "", 0, csqlite_transient())
      } else {
        code = sqlite3_bind_null(statement, position)
      }
      guard code == SQLITE_OK else { throw database.error(code) }
    }

    /// Binds `?position` to a number; nil binds NULL.
    package func bind(_ number: Int64?, at position: Int32) throws(SQLiteError) {
      let code = number.map { sqlite3_bind_int64(statement, position, $0) } ?? sqlite3_bind_null(statement, position)
      guard code == SQLITE_OK else { throw database.error(code) }
    }

    /// Binds `?position` to a copy of `text`.
    package func bind(_ text: String, at position: Int32) throws(SQLiteError) {
      let code = Self.bind(text, at: position, in: statement)
      guard code == SQLITE_OK else { throw database.error(code) }
    }

    /// Steps to the end of the values bound one by one (for INSERT, UPDATE, DELETE), then resets the
    /// statement for the next values; the bindings stay.
    package func runBound() throws(SQLiteError) {
      defer { sqlite3_reset(statement) }
      while try step() {}
    }

    /// Resets the statement and clears its bindings (no borrowed text is referred to after this).
    package func reset() {
      sqlite3_reset(statement)
      sqlite3_clear_bindings(statement)
    }

    /// Steps once; true when a row is available.
    package func step() throws(SQLiteError) -> Bool {
      let code = sqlite3_step(statement)
      if code == SQLITE_ROW { return true }
      if code == SQLITE_DONE { return false }
      throw database.error(code)
    }

    /// Binds `values` and steps to the end (for INSERT, UPDATE, DELETE).
    package func run(_ values: [SQLiteValue?] = []) throws(SQLiteError) {
      try bind(values)
      while try step() {}
    }

    package func integer(_ column: Int32) -> Int64? {
      sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, column)
    }

    package func text(_ column: Int32) -> String? {
      guard let pointer = sqlite3_column_text(statement, column) else { return nil }
      return String(cString: pointer)
    }

    /// The column's text as bytes, valid only inside `body`; nil for NULL. Spares a String when
    /// the bytes go straight into other storage.
    package func withText<R>(_ column: Int32, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
      guard let pointer = sqlite3_column_text(statement, column) else { return body(nil) }
      return body(UnsafeRawBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, column))))
    }
  }
}

/// A value bound to a statement.
package enum SQLiteValue {
  case integer(Int64)
  case text(String)
}

extension SQLiteValue {
  package static func int(_ value: Int64?) -> SQLiteValue? { value.map { .integer($0) } }
  package static func string(_ value: String?) -> SQLiteValue? { value.map { .text($0) } }
}
