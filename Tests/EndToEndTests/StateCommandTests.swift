import BatchDL
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
}
