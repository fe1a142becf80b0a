import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLPlan
@testable import BatchDLStore

/// Results written in batches (several rows a statement, text bound where it lies) read back as
/// they were given.
@Suite struct ResultBatchTests {
  static func result(_ index: Int) -> StoredResult {
    StoredResult(
      taskID: "task-\(index)", requestKey: String(repeating: "ab", count: 16),
      destination: index % 3 == 0 ? nil : "/d/\(index)",
      outcome: index % 5 == 0 ? "failed" : "completed", status: index % 4 == 0 ? nil : 200, size: Int64(index),
      sha256: index % 2 == 0 ? String(repeating: "0", count: 64) : nil, etag: index % 7 == 0 ? "" : "\"e\(index)\"",
      lastModified: nil, fileSize: index % 3 == 0 ? nil : Int64(index), fileModified: 1_000 + Int64(index),
      errorCode: index % 5 == 0 ? "http-404" : nil, errorMessage: index % 5 == 0 ? "héllo \(index)" : nil)
  }

  @Test func everyRowOfABatchIsStoredWithItsValues() throws {
    let folder = TemporaryDirectory()
    let store = try #require(try StateStore.open(folder: folder.path))
    // More than one statement's worth of rows, and a remainder written one by one.
    let results = (0..<37).map(Self.result)
    try store.save(results: results)
    let read = try store.results()
    #expect(read.count == results.count)
    for result in results { #expect(read[result.taskID] == result) }
  }

  @Test func aLaterRowOfTheSameTaskReplacesTheEarlierOne() throws {
    let folder = TemporaryDirectory()
    let store = try #require(try StateStore.open(folder: folder.path))
    var later = Self.result(3)
    later.outcome = "deferred"
    later.size = 99
    // The two rows of task-3 in one statement of 16, then in two single-row statements.
    try store.save(results: (0..<16).map(Self.result) + [later])
    #expect(try store.results()["task-3"] == later)
    try store.save(results: [Self.result(3), later])
    #expect(try store.results()["task-3"] == later)
    #expect(try store.results().count == 16)
  }

  @Test func theKeyIsWrittenAsItsHexDigits() {
    var batch = ResultBatch()
    let key = RequestKey(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)
    let text = batch.text(key)
    let row = ResultBatch.Row(
      taskID: text, requestKey: text, destination: nil, outcome: text, status: nil, size: nil, sha256: nil, etag: nil,
      lastModified: nil, fileSize: nil, fileModified: nil, errorCode: nil, errorMessage: nil)
    batch.append(row)
    var written: [String] = []
    batch.forEach { (_, row, bytes) in
      written.append(
        String(decoding: bytes(row.requestKey) ?? UnsafeRawBufferPointer(start: nil, count: 0), as: UTF8.self))
    }
    #expect(written == [key.description])
  }
}
