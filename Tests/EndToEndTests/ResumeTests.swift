import BatchDL
import BatchDLStore
import Foundation
import TestServer
import TestSupport
import Testing

/// Re-runs: resume after a kill or a signal, validation of what the server sends back, and runs
/// that cost nothing once everything is done.
@Suite struct ResumeTests {
  static let manifest = """
    version: 1
    defaults:
      retry: {attempts: 2, backoff: 100ms}
    sessions:
      main:
        tasks:
          - download: BASE/big.bin
    """

  /// Stops a run with `signal` once a checkpoint has been recorded; returns the exit status.
  func interrupt(_ fixture: RunFixture, signal: Int32) throws -> Int32 {
    try fixture.interrupt(signal: signal, ["--report", "report.json"])
  }

  @Test func killedRunResumesWithARangeAndACorrectFile() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 21)
    fixture.server.route("/big.bin", trickling(body, etag: "v1"))
    fixture.manifest(Self.manifest)
    let status = try interrupt(fixture, signal: SIGKILL)
    #expect(status != 0)
    #expect(!fixture.folder.exists("big.bin"))
    let saved = fixture.checkpointBytes()
    #expect(saved > 0)
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.server.clearLog()
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let intact = fixture.holds("big.bin", body)
    #expect(intact)
    let request = fixture.server.requests(for: "/big.bin").first
    let offset = try #require(rangeOffset(request))
    #expect(offset >= saved && offset > 0)
    #expect(request?.header("if-range") == "\"v1\"")
    #expect(try fixture.tasks()["big.bin"]?["resumed_from"] as? Int == Int(offset))
    #expect(
      fixture.events().contains { $0["event"] as? String == "resumed" }, "\(fixture.folder.read("events.jsonl") ?? "")")
    #expect(!fixture.folder.exists("big.bin.batchdl-part"))
    #expect(fixture.checkpointBytes() == 0)
  }

  @Test func interruptedRunExits3AndResumes() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 22)
    fixture.server.route("/big.bin", trickling(body, etag: "v1"))
    fixture.manifest(Self.manifest)
    let status = try interrupt(fixture, signal: SIGINT)
    #expect(status == 3)
    #expect(try fixture.tasks()["big.bin"]?["outcome"] as? String == "cancelled")
    #expect(!fixture.folder.exists("big.bin"))
    let state = fixture.folder.path + "/.batchdl"
    #expect(try StateStore.open(folder: state, readOnly: true)?.budgets().isEmpty == false)
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.server.clearLog()
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let intact = fixture.holds("big.bin", body)
    #expect(intact)
    #expect((rangeOffset(fixture.server.requests(for: "/big.bin").first) ?? 0) > 0)
    // The finished request's checkpoint and time budget are gone from the state.
    #expect(fixture.checkpointBytes() == 0)
    #expect(try StateStore.open(folder: state, readOnly: true)?.budgets().isEmpty == true)
  }

  @Test func aFileChangedUpstreamIsFetchedWholeNeverSpliced() throws {
    let fixture = try RunFixture()
    let old = TestData.pseudoRandomBytes(count: 3 << 20, seed: 23)
    let new = TestData.pseudoRandomBytes(count: (3 << 20) + 100, seed: 24)
    fixture.server.route("/big.bin", trickling(old, etag: "v1"))
    fixture.manifest(Self.manifest)
    _ = try interrupt(fixture, signal: SIGKILL)
    fixture.server.route("/big.bin", .file(FileResource(body: new, etag: .strong("v2"))))
    fixture.server.clearLog()
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let intact = fixture.holds("big.bin", new)
    #expect(intact)
    #expect(fixture.server.requests(for: "/big.bin").first?.header("if-range") == "\"v1\"")
    #expect(try fixture.tasks()["big.bin"]?["resumed_from"] as? Int == 0)
  }

  @Test func aServerThatIgnoresIfRangeAfterAChangeGetsNoSplice() throws {
    // The file changed, and the server answers the If-Range of the old version with a 206 of the
    // new one, under the new ETag: those bytes must not join the old ones.
    let fixture = try RunFixture()
    let old = TestData.pseudoRandomBytes(count: 3 << 20, seed: 31)
    let new = TestData.pseudoRandomBytes(count: 3 << 20, seed: 32)
    fixture.server.route("/big.bin", trickling(old, etag: "v1"))
    fixture.manifest(Self.manifest)
    _ = try interrupt(fixture, signal: SIGKILL)
    #expect(fixture.checkpointBytes() > 0)
    var changed = FileResource(body: new, etag: .strong("v2"))
    changed.ignoreIfRange = true
    fixture.server.route("/big.bin", .file(changed))
    fixture.server.clearLog()
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let intact = fixture.holds("big.bin", new)
    #expect(intact, "the new version whole, not the old one's head and the new one's tail")
    let exchanges = fixture.server.exchanges(for: "/big.bin")
    #expect(exchanges.first?.ifRange == "\"v1\"" && exchanges.first?.status == 206)
    #expect(exchanges.last?.range == nil && exchanges.last?.status == 200)
    #expect(try fixture.tasks()["big.bin"]?["resumed_from"] as? Int == 0)
  }

  @Test func aDateThatCannotTellTwoVersionsApartGuardsNoResume() throws {
    // No ETag, and Last-Modified equal to Date: the file may change again within that second
    // under the same date, so the date is weak and no bytes are kept under it.
    let fixture = try RunFixture()
    let old = TestData.pseudoRandomBytes(count: 3 << 20, seed: 33)
    let new = TestData.pseudoRandomBytes(count: 3 << 20, seed: 34)
    let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    var first = FileResource(
      body: old, lastModified: now, trickle: Trickle(chunkBytes: 32 << 10, interval: 0.05))
    first.date = now
    fixture.server.route("/big.bin", .file(first))
    fixture.manifest(Self.manifest)
    let process = try fixture.start()
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline && fixture.server.exchanges(for: "/big.bin").isEmpty { usleep(50_000) }
    // Long enough for checkpoints (at least a second apart) to have been kept, had the date guarded them.
    usleep(2_500_000)
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    #expect(fixture.checkpointBytes() == 0, "nothing is kept under a weak date")
    var second = FileResource(body: new, lastModified: now)
    second.date = now
    fixture.server.route("/big.bin", .file(second))
    fixture.server.clearLog()
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let intact = fixture.holds("big.bin", new)
    #expect(intact)
    #expect(fixture.server.requests(for: "/big.bin").allSatisfy { $0.header("range") == nil })
  }

  @Test func aChangedPinRunsTheTaskAgain() throws {
    // After a download completed under `sha256: A`, the manifest pins B: the recorded result no
    // longer counts as done, and the run checks the file against B.
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 100_000, seed: 35)
    fixture.server.route("/p.bin", .file(FileResource(body: body, etag: .strong("p1"))))
    func pin(_ sha256: String, size: Int? = nil) {
      fixture.manifest(
        """
        version: 1
        sessions:
          main:
            retry: {attempts: 1}
            tasks:
              - download: BASE/p.bin
                sha256: \(sha256)
        \(size.map { "        size: \($0)" } ?? "")
        """)
    }
    pin(SHA256Digest.hex(body))
    #expect(try fixture.run().status == 0)
    let other = String(repeating: "ab", count: 32)
    pin(other)
    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path)
    #expect(plan.stdout.contains("the manifest now expects sha256 \(other)"), "\(plan.stdout)")
    for extra in [[], ["--verify"], ["--refresh"]] {
      let result = try fixture.run(extra)
      #expect(result.status == 1, "\(extra): \(result.stderr)")
      let error = try fixture.tasks()["p.bin"]?["error"] as? [String: Any]
      #expect(error?["code"] as? String == "checksum-mismatch", "\(extra)")
    }
    #expect(fixture.holds("p.bin", body), "the file that was there stays")
    pin(SHA256Digest.hex(body), size: 99_999)
    #expect(try fixture.run().status == 1, "a changed size is a changed pin too")
    pin(SHA256Digest.hex(body))
    #expect(try fixture.run().status == 0)
    #expect(try fixture.tasks()["p.bin"]?["outcome"] as? String == "completed")
  }

  @Test func aServerThatIgnoresRangeStillGivesACorrectFile() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 25)
    fixture.server.route("/big.bin", trickling(body, etag: "v1"))
    fixture.manifest(Self.manifest)
    _ = try interrupt(fixture, signal: SIGKILL)
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"), ignoreRange: true)))
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let intact = fixture.holds("big.bin", body)
    #expect(intact)
    #expect(try fixture.tasks()["big.bin"]?["resumed_from"] as? Int == 0)
  }

  @Test func aCompletePartialFileIsVerifiedOn416() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 200_000, seed: 26)
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.manifest(Self.manifest)
    // A run that wrote every byte and was stopped before the rename: the partial file is whole.
    try fixture.checkpointWhole(body, of: "big.bin", etag: "\"v1\"", total: body.count)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.server.requests(for: "/big.bin").count == 1)
    #expect(rangeOffset(fixture.server.requests(for: "/big.bin").first) == Int64(body.count))
    let intact = fixture.holds("big.bin", body)
    #expect(intact)
    #expect(try fixture.tasks()["big.bin"]?["sha256"] as? String == SHA256Digest.hex(body))
  }

  @Test func aFinishedManifestCostsNoRequest() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(TestData.pseudoRandomBytes(count: 5000, seed: 1), etag: .strong("a")))
    fixture.server.route("/b.txt", .text("b\n"))
    fixture.server.route("/up", .uploadSink)
    fixture.folder.write("payload.txt", "payload\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/a.bin
            - download: BASE/a.bin
              to: copy.bin
            - download: BASE/b.txt
            - upload: BASE/up
              from: payload.txt
      """)
    #expect(try fixture.run().status == 0)
    let first = fixture.folder.read("report.json")
    fixture.server.clearLog()
    let again = try fixture.run()
    #expect(again.status == 0)
    #expect(fixture.server.requests.isEmpty)
    let tasks = try fixture.tasks()
    #expect(tasks.values.allSatisfy { $0["outcome"] as? String == "unchanged" })
    #expect(tasks["a.bin"]?["sha256"] as? String != nil)
    #expect(first != fixture.folder.read("report.json"))

    // A file altered on disk is fetched again; the others still cost nothing.
    fixture.folder.write("b.txt", "tampered\n")
    fixture.server.clearLog()
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests.map(\.path) == ["/b.txt"])
    #expect(fixture.folder.read("b.txt") == "b\n")
  }

  @Test func refreshRevalidatesAndA304IsUnchanged() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Array(repeating: 9, count: 1000), etag: .strong("a1")))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/a.bin
      """)
    #expect(try fixture.run().status == 0)
    fixture.server.clearLog()
    #expect(try fixture.run(["--refresh"]).status == 0)
    #expect(fixture.server.requests(for: "/a.bin").first?.header("if-none-match") == "\"a1\"")
    let task = try #require(try fixture.tasks()["a.bin"])
    #expect(task["outcome"] as? String == "unchanged")
    #expect(task["source"] as? String == "not-modified")
    // Changed upstream: --refresh brings the new file.
    fixture.server.route("/a.bin", .file(Array(repeating: 8, count: 1200), etag: .strong("a2")))
    #expect(try fixture.run(["--refresh"]).status == 0)
    #expect(fixture.bytes("a.bin")?.count == 1200)
  }

  @Test func failedTasksAreTriedAgainNextRun() throws {
    let fixture = try RunFixture()
    fixture.server.route("/late", .fixed(.text(404, "not yet")))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/late
      """)
    #expect(try fixture.run().status == 1)
    fixture.server.route("/late", .text("here now\n"))
    #expect(try fixture.run().status == 0)
    #expect(fixture.folder.read("late") == "here now\n")
  }

  @Test func verifyRehashesFilesThatLookUnchanged() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.txt", .text("original\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/a.txt
      """)
    #expect(try fixture.run().status == 0)
    // Same size, same modification time, other bytes: only a re-hash notices.
    let path = fixture.folder.path + "/a.txt"
    var info = stat()
    #expect(stat(path, &info) == 0)
    fixture.folder.write("a.txt", "ORIGINAL\n")
    let times = [info.st_atim, info.st_mtim]
    #expect(utimensat(AT_FDCWD, path, times, 0) == 0)
    fixture.server.clearLog()
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests.isEmpty)
    #expect(try fixture.run(["--verify"]).status == 0)
    #expect(fixture.server.requests.count == 1)
    #expect(fixture.folder.read("a.txt") == "original\n")
  }

  @Test func theResourceBudgetIsChargedAcrossRuns() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 27)
    fixture.server.route("/big.bin", trickling(body, etag: "v1"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          timeouts: {resource: 3s}
          tasks:
            - download: BASE/big.bin
      """)
    let status = try interrupt(fixture, signal: SIGINT)
    #expect(status == 3)
    // The first run spent about a second of the three; the second cannot finish in what is left.
    let result = try fixture.run()
    #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
    let task = try #require(try fixture.tasks()["big.bin"])
    #expect((task["error"] as? [String: Any])?["code"] as? String == "timeout")
  }

  @Test func theStateFolderHoldsNoSecret() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 28)
    fixture.server.route("/big.bin", trickling(body, etag: "v1"))
    fixture.server.route("/small", .text("small\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          headers: {Authorization: "Bearer ${STATE_SECRET}"}
          tasks:
            - download: BASE/small?key=${STATE_SECRET}
              to: small.txt
            - download: BASE/big.bin?key=${STATE_SECRET}
              to: big.bin
      """)
    let process = try fixture.start(environment: ["STATE_SECRET": "s3cret-in-state-77"])
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline && fixture.checkpointBytes() == 0 { usleep(50_000) }
    kill(process.processIdentifier, SIGINT)
    process.waitUntilExit()
    #expect(fixture.checkpointBytes() > 0)
    for name in ["state.sqlite", "state.sqlite-wal", "locks/\(fixture.manifestKey() ?? "").lock"] {
      guard let data = FileManager.default.contents(atPath: fixture.folder.path + "/.batchdl/" + name) else { continue }
      #expect(!String(decoding: data, as: UTF8.self).contains("s3cret-in-state-77"), "\(name)")
    }
  }
}
