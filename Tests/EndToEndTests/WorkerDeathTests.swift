import BatchDL
import BatchDLStore
import Foundation
import TestServer
import TestSupport
import Testing

/// A background worker that dies with work unfinished is reported as dead, and `run` restarts it.
@Suite struct WorkerDeathTests {
  @Test func aKilledWorkerIsReportedDeadAndRunRestartsIt() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 2 << 20, seed: 71)
    fixture.server.route(
      "/iso",
      trickling(body, etag: "i1"))
    fixture.manifest(
      """
      version: 1
      sessions:
        iso:
          kind: background
          identifier: org.example.dies
          on_finished: 'echo done > hook.txt'
          tasks:
            - download: BASE/iso
              to: big.iso
      """)
    let run = try fixture.run()
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")

    // Wait until the worker holds its lock and has a checkpoint, then kill it.
    let state = fixture.folder.path + "/.batchdl"
    let deadline = Date().addingTimeInterval(20)
    var pid: Int32?
    var saved: Int64 = 0
    while Date() < deadline && (pid == nil || saved < 100_000) {
      usleep(50_000)
      pid = StateLock.holder(folder: state, name: "workers/org.example.dies.lock")
      saved = (try? StateStore.open(folder: state, readOnly: true)?.checkpoints())?.values.map(\.durable).max() ?? 0
    }
    let worker = try #require(pid)
    #expect(worker > 0 && saved > 0)
    kill(worker, SIGKILL)
    var gone = false
    for _ in 0..<200 where !gone {
      gone = StateLock.holder(folder: state, name: "workers/org.example.dies.lock") == nil
      if !gone { usleep(50_000) }
    }
    #expect(gone)

    let wait = try BinaryRunner.run(["wait", "manifest.yaml", "--timeout", "10"], in: fixture.folder.path)
    #expect(wait.status != 0, "\(wait.stdout)\(wait.stderr)")
    #expect(wait.stderr.contains("org.example.dies") && wait.stderr.contains("died"), "\(wait.stderr)")
    #expect(wait.stderr.contains("batchdl run manifest.yaml"), "\(wait.stderr)")

    let status = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path)
    #expect(status.status == 0, "\(status.stderr)")
    #expect(status.stdout.contains("worker org.example.dies: died"), "\(status.stdout)")
    #expect(status.stdout.contains("batchdl run manifest.yaml"), "\(status.stdout)")

    let json = try BinaryRunner.run(["status", "manifest.yaml", "--json"], in: fixture.folder.path)
    let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
    let workers = object?["workers"] as? [[String: Any]] ?? []
    #expect(workers.count == 1, "\(json.stdout)")
    #expect(workers.first?["identifier"] as? String == "org.example.dies")
    #expect(workers.first?["state"] as? String == "died", "\(json.stdout)")
    #expect(!fixture.folder.exists("hook.txt"))

    // `run` starts it again; it resumes, finishes, and runs on_finished.
    fixture.server.route("/iso", .file(FileResource(body: body, etag: .strong("i1"))))
    let again = try fixture.run()
    #expect(again.stdout.contains("worker started"), "\(again.stdout)")
    let waited = try BinaryRunner.run(["wait", "manifest.yaml", "--timeout", "30"], in: fixture.folder.path)
    #expect(waited.status == 0, "\(waited.stdout)\(waited.stderr)")
    let intact = fixture.holds("big.iso", body)
    #expect(intact)
    #expect(fixture.folder.read("hook.txt") == "done\n")
    let after = try BinaryRunner.run(["status", "manifest.yaml", "--json"], in: fixture.folder.path)
    #expect(after.stdout.contains("\"finished\""), "\(after.stdout)")
  }

  @Test func waitRightAfterRunWaitsForAWorkerThatIsStarting() throws {
    let fixture = try RunFixture()
    fixture.server.route(
      "/slow",
      .file(
        FileResource(
          body: Array(repeating: 7, count: 200_000), etag: .strong("s"),
          trickle: Trickle(chunkBytes: 20_000, interval: 0.05))))
    fixture.manifest(
      """
      version: 1
      sessions:
        bg:
          kind: background
          identifier: org.example.starting
          tasks:
            - download: BASE/slow
      """)
    let run = try fixture.run()
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    let wait = try BinaryRunner.run(["wait", "manifest.yaml", "--timeout", "30"], in: fixture.folder.path)
    #expect(wait.status == 0, "\(wait.stdout)\(wait.stderr)")
    #expect(fixture.bytes("slow")?.count == 200_000)
  }
}
