import BatchDLPlan
import BatchDLSupport

/// `results` rows waiting to be written, their text in one buffer: a run remembers each task's
/// result between two writes without a String per field, and `StateStore.save(results:)` binds the
/// text where it lies (SQLite copies none of it either).
package struct ResultBatch {
  /// A text in the batch's buffer; nil stands for NULL.
  package struct Text {
    fileprivate var start: Int
    fileprivate var count: Int
  }

  /// One row of `results` (the manifest column is the store's).
  package struct Row {
    package var taskID: Text
    package var requestKey: Text
    package var destination: Text?
    package var outcome: Text
    package var status: Int64?
    package var size: Int64?
    package var sha256: Text?
    package var etag: Text?
    package var lastModified: Text?
    package var fileSize: Int64?
    package var fileModified: Int64?
    package var errorCode: Text?
    package var errorMessage: Text?
    package var checked: Int64? = nil

    package init(
      taskID: Text, requestKey: Text, destination: Text? = nil, outcome: Text, status: Int64? = nil, size: Int64? = nil,
      sha256: Text? = nil, etag: Text? = nil, lastModified: Text? = nil, fileSize: Int64? = nil,
      fileModified: Int64? = nil, errorCode: Text? = nil, errorMessage: Text? = nil, checked: Int64? = nil
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
      self.checked = checked
    }
  }

  private var rows: [Row] = []
  private var bytes: [UInt8] = []

  package var isEmpty: Bool { rows.isEmpty }

  package var count: Int { rows.count }

  package init() {}

  /// Empties the batch, keeping its storage for the next one.
  package mutating func removeAll() {
    rows.removeAll(keepingCapacity: true)
    bytes.removeAll(keepingCapacity: true)
  }

  /// Stores `text` (UTF-8 bytes) for a row.
  package mutating func text(_ text: UnsafeRawBufferPointer) -> Text {
    // As typed bytes, appended in one copy (a raw buffer is appended byte by byte).
    defer { bytes.append(contentsOf: text.assumingMemoryBound(to: UInt8.self)) }
    return Text(start: bytes.count, count: text.count)
  }

  /// Stores `text` for a row.
  package mutating func text(_ text: String) -> Text {
    var text = text
    return text.withUTF8 { self.text(UnsafeRawBufferPointer($0)) }
  }

  /// Stores `text`, when there is one, for a row.
  package mutating func text(_ text: String?) -> Text? {
    text.map { self.text($0) }
  }

  /// Stores the key's 32 lower-case hexadecimal digits (`RequestKey.description`) for a row.
  package mutating func text(_ key: RequestKey) -> Text {
    let start = bytes.count
    // Made on the stack and appended in one copy: appending digit by digit costs several times as much.
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { digits in
      key.withBytes { writeHexDigits(of: $0, into: digits) }
      bytes.append(contentsOf: digits)
    }
    return Text(start: start, count: 32)
  }

  /// Adds a row whose text this batch holds.
  package mutating func append(_ row: Row) {
    rows.append(row)
  }

  /// Adds a result.
  package mutating func append(_ result: StoredResult) {
    let row = Row(
      taskID: text(result.taskID), requestKey: text(result.requestKey), destination: text(result.destination),
      outcome: text(result.outcome), status: result.status.map { Int64($0) }, size: result.size,
      sha256: text(result.sha256), etag: text(result.etag), lastModified: text(result.lastModified),
      fileSize: result.fileSize, fileModified: result.fileModified, errorCode: text(result.errorCode),
      errorMessage: text(result.errorMessage), checked: result.checked)
    rows.append(row)
  }

  /// Calls `body` with each row and its index, in order, and a function that gives a text's bytes
  /// (nil for NULL), valid until `body` returns for the last row.
  package func forEach<E: Error>(
    _ body: (Int, Row, (Text?) -> UnsafeRawBufferPointer?) throws(E) -> Void
  ) throws(E) {
    let result: Result<Void, E> = bytes.withUnsafeBytes { buffer in
      func bytes(_ text: Text?) -> UnsafeRawBufferPointer? {
        text.map { UnsafeRawBufferPointer(rebasing: buffer[$0.start..<$0.start + $0.count]) }
      }
      for (index, row) in rows.enumerated() {
        do throws(E) {
          try body(index, row, bytes)
        } catch {
          return .failure(error)
        }
      }
      return .success(())
    }
    try result.get()
  }
}
