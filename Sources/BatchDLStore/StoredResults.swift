import BatchDLPlan

/// The `results` rows a state folder holds, as `plan`, `status` and a run read them: one row of
/// fixed fields each, their text in one arena, found by task id through an open-addressing table.
/// About 300 bytes a task, where a dictionary of `StoredResult` values took 1.3 KB and a dozen
/// Strings; the checks a re-run makes on every task (`entry(for:in:)`) make no String at all.
public struct StoredResults: Sendable {
  /// A row's fixed fields; its text is in `text`.
  package struct Row: Sendable {
    package var id: TextRef
    package var requestKey: TextRef
    package var destination: TextRef
    package var outcome: TextRef
    package var sha256: TextRef
    package var etag: TextRef
    package var lastModified: TextRef
    package var errorCode: TextRef
    package var errorMessage: TextRef
    /// `Int64.min`: none.
    package var size: Int64
    package var fileSize: Int64
    package var fileModified: Int64
    package var checked: Int64
    /// `Int32.min`: none.
    package var status: Int32
  }

  /// What the checks on every task read of a row, without its text.
  public struct Entry: Sendable {
    public var outcome: TaskOutcome?
    public var size: Int64?
    public var fileSize: Int64?
    public var fileModified: Int64?
    public var status: Int?
    /// When the server was last asked (`StoredResult.checked`).
    public var checked: Int64?
    /// The row, for `stored(_:)` and the text accessors.
    package let row: Int
  }

  private var text = TextArena()
  private var rows: [Row] = []
  private var table = IndexTable()

  public init() {}

  /// Rows held.
  public var count: Int { rows.count }

  public var isEmpty: Bool { rows.isEmpty }

  /// Every task id held (tests and diagnostics).
  public var ids: [String] { rows.map { text.string($0.id) } }

  /// The result stored for a task id.
  public subscript(id: String) -> StoredResult? {
    var id = id
    return id.withUTF8 { find(UnsafeRawBufferPointer($0)) }.map { stored(at: Int($0)) }
  }

  /// The result stored for a plan's task, by its id, as an entry of fixed fields.
  public func entry(for task: PlannedTask, in plan: Plan) -> Entry? {
    if let row = plan.text.withBytes(task.id, { find($0) }) { return entry(at: Int(row)) }
    // A result recorded when the id under an absolute `dest` was relative to it (`RELATIVE`, now
    // `SESSION:RELATIVE` in a manifest of several sessions).
    let session = plan.manifest.sessions[Int(task.session)].name.utf8
    if let row = plan.text.withBytes(
      task.id,
      { id -> Int32? in
        // `SESSION:` before the rest, compared in place (a first run misses here for every task).
        guard id.count > session.count + 1, id[session.count] == 0x3A, id.starts(with: session) else { return nil }
        return find(UnsafeRawBufferPointer(rebasing: id[(session.count + 1)...]))
      })
    {
      return entry(at: Int(row))
    }
    // A result recorded when ids under an absolute `dest` were the absolute destination.
    guard !task.to.isNone, task.to != task.id, plan.text.withBytes(task.to, { $0.first == UInt8(ascii: "/") }) else {
      return nil
    }
    return plan.text.withBytes(task.to) { find($0) }.map { entry(at: Int($0)) }
  }

  /// The whole result behind an entry.
  public func stored(_ entry: Entry) -> StoredResult { stored(at: entry.row) }

  /// Whether the entry was recorded for the request with this key (compared digit by digit,
  /// without making the key's text).
  public func requestKey(of entry: Entry, is key: RequestKey) -> Bool {
    text.withBytes(rows[entry.row].requestKey) { hex in
      guard hex.count == 32 else { return false }
      var high: UInt64 = 0
      var low: UInt64 = 0
      for (index, byte) in hex.enumerated() {
        let digit: UInt8
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
        default: return false
        }
        if index < 16 { high = high << 4 | UInt64(digit) } else { low = low << 4 | UInt64(digit) }
      }
      return high == key.high && low == key.low
    }
  }

  public func sha256(of entry: Entry) -> String? { text.optionalString(rows[entry.row].sha256) }
  public func etag(of entry: Entry) -> String? { text.optionalString(rows[entry.row].etag) }
  public func lastModified(of entry: Entry) -> String? { text.optionalString(rows[entry.row].lastModified) }
  public func errorCode(of entry: Entry) -> String? { text.optionalString(rows[entry.row].errorCode) }
  public func errorMessage(of entry: Entry) -> String? { text.optionalString(rows[entry.row].errorMessage) }
  /// The outcome as stored (an outcome this version does not know stays as written).
  public func outcomeText(of entry: Entry) -> String { text.string(rows[entry.row].outcome) }

  /// Adds the row `select` stands on (the columns of `StateStore.results()`, in order), or
  /// replaces the row of the same task id; its text goes straight from SQLite into the arena.
  package mutating func add(row select: SQLiteDatabase.Statement) {
    func ref(_ column: Int32) -> TextRef { select.withText(column) { $0.map { text.append($0) } } ?? .none }
    let id = ref(0)
    guard !id.isNone else { return }
    insert(
      Row(
        id: id, requestKey: ref(1), destination: ref(2), outcome: ref(3), sha256: ref(6), etag: ref(7),
        lastModified: ref(8), errorCode: ref(11), errorMessage: ref(12), size: select.integer(5) ?? .min,
        fileSize: select.integer(9) ?? .min, fileModified: select.integer(10) ?? .min,
        checked: select.integer(13) ?? .min, status: select.integer(4).flatMap { Int32(exactly: $0) } ?? .min))
  }

  /// Adds a result, or replaces the one of the same task id.
  public mutating func add(_ result: StoredResult) {
    func ref(_ value: String?) -> TextRef { value.map { text.append($0) } ?? .none }
    insert(
      Row(
        id: text.append(result.taskID), requestKey: text.append(result.requestKey),
        destination: ref(result.destination),
        outcome: text.append(result.outcome), sha256: ref(result.sha256), etag: ref(result.etag),
        lastModified: ref(result.lastModified), errorCode: ref(result.errorCode),
        errorMessage: ref(result.errorMessage),
        size: result.size ?? .min, fileSize: result.fileSize ?? .min, fileModified: result.fileModified ?? .min,
        checked: result.checked ?? .min, status: result.status.flatMap { Int32(exactly: $0) } ?? .min))
  }

  /// Every result held, whole.
  public var values: [StoredResult] { rows.indices.map { stored(at: $0) } }

  private mutating func insert(_ row: Row) {
    let hash = text.hash(row.id)
    let found = text.withBytes(row.id) { find($0, hash: hash) }
    if let found {
      rows[Int(found)] = row
      return
    }
    let index = Int32(rows.count)
    rows.append(row)
    table.insert(index, hash: hash) { [text, rows] in text.hash(rows[Int($0)].id) }
  }

  private func find(_ id: UnsafeRawBufferPointer, hash: UInt64? = nil) -> Int32? {
    guard !rows.isEmpty else { return nil }
    return table.find(hash: hash ?? TextArena.hash(id)) { text.equals(rows[Int($0)].id, id) }
  }

  private func entry(at index: Int) -> Entry {
    let row = rows[index]
    return Entry(
      outcome: text.withBytes(row.outcome) { TaskOutcome(rawValue: String(decoding: $0, as: UTF8.self)) },
      size: Self.number(row.size), fileSize: Self.number(row.fileSize), fileModified: Self.number(row.fileModified),
      status: row.status == .min ? nil : Int(row.status), checked: Self.number(row.checked), row: index)
  }

  private func stored(at index: Int) -> StoredResult {
    let row = rows[index]
    return StoredResult(
      taskID: text.string(row.id), requestKey: text.string(row.requestKey),
      destination: text.optionalString(row.destination), outcome: text.string(row.outcome),
      status: row.status == .min ? nil : Int(row.status), size: Self.number(row.size),
      sha256: text.optionalString(row.sha256), etag: text.optionalString(row.etag),
      lastModified: text.optionalString(row.lastModified), fileSize: Self.number(row.fileSize),
      fileModified: Self.number(row.fileModified), errorCode: text.optionalString(row.errorCode),
      errorMessage: text.optionalString(row.errorMessage), checked: Self.number(row.checked))
  }

  private static func number(_ value: Int64) -> Int64? { value == .min ? nil : value }
}
