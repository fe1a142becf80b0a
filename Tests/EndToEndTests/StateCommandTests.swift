import BatchDL
import BatchDLStore
import Foundation
import TestServer
import TestSupport
import Testing

/// `plan`, `status` and `cache` reading (and clearing) what runs left in the state folder.
@Suite struct StateCommandTests {
  @Test func planAndStatusShowDonePartialAndPendingTasks() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 31)
    fixture.server.route(
      "/big.bin",
      trickling(body, etag: "v1"))
    fixture.server.route("/small.txt", .text("small\n"))
    fixture.server.route("/gone", .fixed(.text(410, "gone")))
    fixture.manifest(
      """
      version: 1
      defaults:
        retry: {attempts: 1}
      sessions:
        main:
          tasks:
            - download: BASE/small.txt
            - download: BASE/gone
            - download: BASE/big.bin
              priority: low
      """)
    // Let the small file and the failure finish, and the big file checkpoint, then kill the run.
    let process = try fixture.start()
    let deadline = Date().addingTimeInterval(20)
    var durable: Int64 = 0
    var results = 0
    while Date() < deadline && (durable < 100_000 || results < 2) {
      usleep(50_000)
      if let store = try? StateStore.open(folder: fixture.folder.path + "/.batchdl", readOnly: true),
        let points = try? store.checkpoints(), let stored = try? store.results()
      {
        durable = points.values.map(\.durable).max() ?? 0
        results = stored.count
      }
    }
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()

    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path)
    #expect(plan.status == 0, "\(plan.stderr)")
    #expect(plan.stdout.contains("skip: unchanged since the last run"))
    #expect(plan.stdout.contains("send: failed last time (http-410)"))
    #expect(plan.stdout.contains("resume from byte "))

    let status = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path)
    #expect(status.status == 0, "\(status.stderr)")
    let lines = status.stdout.split(separator: "\n").map(String.init)
    #expect(lines.contains { $0.hasPrefix("done      small.txt") })
    #expect(lines.contains { $0.hasPrefix("failed    gone  http-410") })
    #expect(lines.contains { $0.hasPrefix("partial   big.bin") && $0.contains("of 3.0 MB") })
    #expect(lines.last == "3 tasks: 1 done, 1 partial, 0 pending, 1 failed")

    let json = try BinaryRunner.run(["plan", "manifest.yaml", "--json"], in: fixture.folder.path)
    let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
    let actions = (object?["requests"] as? [[String: Any]] ?? []).compactMap { $0["action"] as? String }.sorted()
    #expect(actions == ["resume", "send", "skip"])

    // Off a terminal, clearing needs --yes; with it, the partial file and its checkpoint go.
    let refused = try BinaryRunner.run(["cache", "clear", "manifest.yaml"], in: fixture.folder.path)
    #expect(refused.status == 2)
    #expect(refused.stderr.contains("--yes"))
    let stats = try BinaryRunner.run(["cache", "stats", "manifest.yaml"], in: fixture.folder.path)
    #expect(stats.stdout.contains("checkpoints: 1"))
    #expect(stats.stdout.contains("partial files: 1"))
    let cleared = try BinaryRunner.run(["cache", "clear", "manifest.yaml", "--yes"], in: fixture.folder.path)
    #expect(cleared.status == 0, "\(cleared.stderr)")
    #expect(!fixture.folder.exists("big.bin.batchdl-part"))
    #expect(fixture.folder.exists("small.txt"))
    let after = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path)
    #expect(!after.stdout.contains("resume from byte"))
    #expect(after.stdout.contains("skip: unchanged since the last run"))
  }

  /// A download whose bytes fail `sha256:` shows as failed, with its code.
  @Test func aTaskThatFailedItsChecksumShowsAsFailedNotPartial() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 1 << 20, seed: 7)
    fixture.server.route("/f.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          retry: {attempts: 1}
          tasks:
            - download: BASE/f.bin
              sha256: \(String(repeating: "ab", count: 32))
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    let error = try #require(try fixture.tasks()["f.bin"]?["error"] as? [String: Any])
    #expect(error["code"] as? String == "checksum-mismatch")

    let status = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path)
    #expect(status.status == 0, "\(status.stderr)")
    let lines = status.stdout.split(separator: "\n").map(String.init)
    #expect(lines.contains { $0.hasPrefix("failed    f.bin  checksum-mismatch") }, "\(lines)")
    #expect(lines.last == "1 tasks: 0 done, 0 partial, 0 pending, 1 failed", "\(lines)")
    let json = try BinaryRunner.run(["status", "manifest.yaml", "--json"], in: fixture.folder.path)
    let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
    let task = try #require((object?["tasks"] as? [[String: Any]])?.first)
    #expect(task["state"] as? String == "failed", "\(task)")
    #expect((task["note"] as? String ?? "").hasPrefix("checksum-mismatch"), "\(task)")
  }

  /// Piece digests that keep failing fail the task with `checksum-mismatch`, and the pieces that
  /// passed stay as a checkpoint for the next run: `status` shows the task as failed with its code,
  /// not as a partial download on its way.
  @Test func aTaskWhosePiecesKeptFailingShowsAsFailedNotPartial() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(PieceTests.corrupt(PieceTests.inPieceThree)))
    fixture.folder.write("doc.meta4", PieceTests.document(urls: [fixture.server.url("/a.bin")]))
    fixture.manifest(PieceTests.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(fixture.checkpointBytes() > 0, "the good pieces are kept")
    let status = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path)
    #expect(status.status == 0, "\(status.stderr)")
    let lines = status.stdout.split(separator: "\n").map(String.init)
    #expect(lines.contains { $0.hasPrefix("failed    m/f.bin  checksum-mismatch: piece 3 of 16") }, "\(lines)")
    #expect(lines.last == "1 tasks: 0 done, 0 partial, 0 pending, 1 failed", "\(lines)")
    let json = try BinaryRunner.run(["status", "manifest.yaml", "--json"], in: fixture.folder.path)
    let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
    let task = try #require((object?["tasks"] as? [[String: Any]])?.first)
    #expect(task["state"] as? String == "failed", "\(task)")
    #expect((task["note"] as? String ?? "").hasPrefix("checksum-mismatch"), "\(task)")
  }
}
