import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLStore
@testable import BatchDLSupport

/// A segmented download's extents in the state store (schema 3), and the migration from schema 2.
@Suite struct ExtentStoreTests {
  static func point(_ key: String, extents: [ByteExtent]) -> Checkpoint {
    Checkpoint(
      key: key, partial: "/tmp/x.batchdl-part", url: "https://h.test/x", etag: "\"v1\"", lastModified: nil,
      total: 1000, durable: extents.first.map { $0.start == 0 ? $0.end : 0 } ?? 0, extents: extents)
  }

  @Test func extentsAreStoredWithTheirCheckpointAndGoWithIt() throws {
    let folder = TemporaryDirectory()
    let store = try #require(try StateStore.open(folder: folder.path))
    let extents = [ByteExtent(start: 0, end: 100), ByteExtent(start: 500, end: 700)]
    try store.update(checkpoints: [Self.point("a", extents: extents), Self.point("b", extents: [])])
    var read = try store.checkpoints()
    #expect(read["a"]?.extents == extents)
    #expect(read["a"]?.durable == 100)
    #expect(read["b"]?.extents == [])
    // A later checkpoint replaces the extents; a removed one takes them along.
    try store.update(checkpoints: [Self.point("a", extents: [ByteExtent(start: 0, end: 900)])])
    #expect(try store.checkpoints()["a"]?.extents == [ByteExtent(start: 0, end: 900)])
    try store.update(checkpoints: [], removing: ["a"])
    read = try store.checkpoints()
    #expect(read["a"] == nil)
    try store.update(checkpoints: [Self.point("a", extents: [])])
    #expect(try store.checkpoints()["a"]?.extents == [])
  }

  @Test func aSchema2StoreGainsTheExtentsTableAndKeepsItsRows() throws {
    let folder = TemporaryDirectory()
    do {
      let db = try SQLiteDatabase(path: folder.path + "/state.sqlite")
      try db.execute(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE checkpoints (
          manifest TEXT NOT NULL, request_key TEXT NOT NULL, partial TEXT NOT NULL, url TEXT NOT NULL, etag TEXT,
          last_modified TEXT, total INTEGER, durable INTEGER NOT NULL, PRIMARY KEY (manifest, request_key));
        CREATE TABLE results (
          manifest TEXT NOT NULL, task_id TEXT NOT NULL, request_key TEXT NOT NULL, destination TEXT,
          outcome TEXT NOT NULL, status INTEGER, size INTEGER, sha256 TEXT, etag TEXT, last_modified TEXT,
          file_size INTEGER, file_modified INTEGER, error_code TEXT, error_message TEXT,
          PRIMARY KEY (manifest, task_id));
        CREATE TABLE budgets (
          manifest TEXT NOT NULL, request_key TEXT NOT NULL, spent_ms INTEGER NOT NULL, attempts INTEGER NOT NULL,
          PRIMARY KEY (manifest, request_key));
        INSERT INTO meta (key, value) VALUES ('schema_version', '2');
        INSERT INTO checkpoints VALUES ('', 'k', '/tmp/p', 'https://h.test/p', '"e"', NULL, 50, 20);
        """)
    }
    // A read-only open of schema 2 reads its checkpoints without extents.
    let old = try #require(try StateStore.open(folder: folder.path, readOnly: true))
    #expect(try old.checkpoints()["k"]?.durable == 20)
    let store = try #require(try StateStore.open(folder: folder.path))
    let point = try #require(try store.checkpoints()["k"])
    #expect(point.durable == 20 && point.total == 50 && point.extents.isEmpty)
    try store.update(checkpoints: [Self.point("k", extents: [ByteExtent(start: 0, end: 30)])])
    #expect(try store.checkpoints()["k"]?.extents == [ByteExtent(start: 0, end: 30)])
  }

  @Test func extentsAreMergedAndEmptyOnesDropped() {
    let merged = ByteExtent.merged([
      ByteExtent(start: 500, end: 600), ByteExtent(start: 0, end: 100), ByteExtent(start: 100, end: 200),
      ByteExtent(start: 300, end: 300), ByteExtent(start: 550, end: 650),
    ])
    #expect(merged == [ByteExtent(start: 0, end: 200), ByteExtent(start: 500, end: 650)])
  }
}
