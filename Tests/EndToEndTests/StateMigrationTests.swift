import Foundation
import TestServer
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLStore
@testable import BatchDLSupport

/// A state folder written by an earlier batchdl (schema 1: no manifest column, absolute partial
/// paths) keeps its results and checkpoints.
@Suite struct StateMigrationTests {
  /// Rewrites the state database of `folder` in schema 1, with the rows it holds now.
  func downgrade(_ folder: String) throws {
    let store = try #require(try StateStore.open(folder: folder, readOnly: true))
    let results = try store.results()
    let checkpoints = try store.checkpoints()
    let manifestDirectory = FileAccess.directory(of: folder)
    for suffix in ["", "-wal", "-shm"] { unlink(folder + "/state.sqlite" + suffix) }
    let db = try SQLiteDatabase(path: folder + "/state.sqlite")
    try db.execute(
      """
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE checkpoints (
        request_key TEXT PRIMARY KEY, partial TEXT NOT NULL, url TEXT NOT NULL, etag TEXT,
        last_modified TEXT, total INTEGER, durable INTEGER NOT NULL);
      CREATE TABLE results (
        task_id TEXT PRIMARY KEY, request_key TEXT NOT NULL, destination TEXT, outcome TEXT NOT NULL,
        status INTEGER, size INTEGER, sha256 TEXT, etag TEXT, last_modified TEXT, file_size INTEGER,
        file_modified INTEGER, error_code TEXT, error_message TEXT);
      CREATE TABLE budgets (request_key TEXT PRIMARY KEY, spent_ms INTEGER NOT NULL, attempts INTEGER NOT NULL);
      INSERT INTO meta (key, value) VALUES ('schema_version', '1');
      """)
    let insertResult = try db.prepare(
      """
      INSERT INTO results (task_id, request_key, destination, outcome, status, size, sha256, etag, last_modified,
        file_size, file_modified) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
      """)
    for item in results.values {
      try insertResult.run([
        .text(item.taskID), .text(item.requestKey), .string(item.destination), .text(item.outcome),
        .int(item.status.map { Int64($0) }), .int(item.size), .string(item.sha256), .string(item.etag),
        .string(item.lastModified), .int(item.fileSize), .int(item.fileModified),
      ])
    }
    let insertCheckpoint = try db.prepare(
      """
      INSERT INTO checkpoints (request_key, partial, url, etag, last_modified, total, durable)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
      """)
    for point in checkpoints.values {
      // Schema 1 stored the partial file's absolute path.
      let partial = point.partial.hasPrefix("/") ? point.partial : manifestDirectory + "/" + point.partial
      try insertCheckpoint.run([
        .text(point.key), .text(partial), .text(point.url), .string(point.etag), .string(point.lastModified),
        .int(point.total), .integer(point.durable),
      ])
    }
  }

  /// Schema 3 (no `results.checked`): read-only commands read it as it is, and a run adds the
  /// column; every finished file stays unchanged and costs no request.
  @Test func aSchema3StateGainsTheCheckedColumnAndKeepsItsResults() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.txt", .text("a\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/a.txt
      """)
    #expect(try fixture.run().status == 0)
    let state = fixture.folder.path + "/.batchdl"
    do {
      let db = try SQLiteDatabase(path: state + "/state.sqlite")
      try db.execute(
        "ALTER TABLE results DROP COLUMN checked; UPDATE meta SET value = '3' WHERE key = 'schema_version';")
    }
    let status = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path)
    #expect(status.status == 0, "\(status.stderr)")
    fixture.server.clearLog()
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests(for: "/a.txt").isEmpty)
    #expect(try fixture.tasks()["a.txt"]?["outcome"] as? String == "unchanged")
    let store = try #require(try StateStore.open(folder: state, readOnly: true))
    #expect(try store.results().count == 1)
  }

  @Test func aSchema1StateKeepsItsResultsAndCheckpoints() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 64)
    fixture.server.route("/small.txt", .text("small\n"))
    fixture.server.route(
      "/big.bin",
      trickling(body, etag: "v1"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/small.txt
            - download: BASE/big.bin
              priority: low
      """)
    let state = fixture.folder.path + "/.batchdl"
    let process = try fixture.start()
    let deadline = Date().addingTimeInterval(20)
    var saved: Int64 = 0
    var results = 0
    while Date() < deadline && (saved < 100_000 || results < 1) {
      usleep(50_000)
      let store = try? StateStore.open(folder: state, readOnly: true)
      saved = (try? store?.checkpoints())?.values.map(\.durable).max() ?? 0
      results = (try? store?.results())?.count ?? 0
    }
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    try downgrade(state)

    // Read-only commands read schema 1 as it is.
    let status = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path)
    #expect(status.status == 0, "\(status.stderr)")
    #expect(status.stdout.contains("1 done, 1 partial"), "\(status.stdout)")

    // A run migrates it: the finished file costs nothing, the partial one resumes.
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.server.clearLog()
    let run = try fixture.run()
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    #expect(fixture.server.requests(for: "/small.txt").isEmpty)
    let range = fixture.server.requests(for: "/big.bin").first?.header("range") ?? ""
    #expect(range.hasPrefix("bytes=") && !range.hasPrefix("bytes=0-"), "range: \(range)")
    let intact = fixture.holds("big.bin", body)
    #expect(intact)
    let after = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path)
    #expect(after.stdout.contains("2 tasks: 2 done"), "\(after.stdout)")
  }
}
