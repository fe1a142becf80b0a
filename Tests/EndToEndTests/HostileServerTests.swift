import BatchDL
import Foundation
import TestServer
import Testing

/// Servers that break the rules of bytes: a `206` nobody asked for, a short or mislabelled range on
/// resume, a lying length, a stall, an oversized header. `to` must only ever hold the complete,
/// right file, and the report must say what happened.
@Suite struct HostileServerTests {
  /// One download of `BASE/big.bin`, two attempts.
  static let manifest = ResumeTests.manifest

  /// Kills a run of a trickling download once a checkpoint holds some of it; returns the bytes
  /// the checkpoint holds.
  func interrupted(_ fixture: RunFixture, _ body: [UInt8], etag: String = "v1") throws -> Int64 {
    fixture.server.route("/big.bin", trickling(body, etag: etag))
    fixture.manifest(Self.manifest)
    _ = try fixture.interrupt(signal: SIGKILL)
    let saved = fixture.checkpointBytes()
    #expect(saved >= 200_000)
    #expect(!fixture.folder.exists("big.bin"))
    return saved
  }

  // MARK: - 206 nobody asked for

  @Test func aPartialAnswerToARequestForTheWholeFileIsNeverPlaced() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 100_000, seed: 1)
    fixture.server.route(
      "/big.bin",
      .file(
        FileResource(
          body: body, etag: .strong("v1"), rangeFault: .partial(lower: 50_000, upper: 99_999, contentRange: true))))
    fixture.manifest(Self.manifest)
    let first = try fixture.run()
    #expect(first.status == 1, "\(first.stdout)\(first.stderr)")
    #expect(!fixture.folder.exists("big.bin"))
    #expect(!fixture.folder.exists("big.bin.batchdl-part"))
    let task = try #require(try fixture.tasks()["big.bin"])
    #expect(task["outcome"] as? String == "failed")
    #expect((task["error"] as? [String: Any])?["code"] as? String == "range-mismatch")
    #expect(fixture.server.requests(for: "/big.bin").allSatisfy { $0.header("range") == nil })
    // Nothing was recorded as done: the next run asks again (and this time gets the file).
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    let second = try fixture.run()
    #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
    #expect(fixture.holds("big.bin", body))
    #expect(try fixture.tasks()["big.bin"]?["outcome"] as? String == "completed")
  }

  @Test func aPartialAnswerWithoutContentRangeIsNeverPlaced() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 100_000, seed: 2)
    fixture.server.route(
      "/big.bin",
      .file(FileResource(body: body, rangeFault: .partial(lower: 0, upper: 49_999, contentRange: false))))
    fixture.manifest(Self.manifest)
    let result = try fixture.run()
    #expect(result.status == 1)
    #expect(!fixture.folder.exists("big.bin"))
    #expect(
      (try fixture.tasks()["big.bin"]?["error"] as? [String: Any])?["code"] as? String == "range-mismatch")
  }

  @Test func aPartialAnswerThatCoversTheWholeFileIsTheFile() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 100_000, seed: 3)
    fixture.server.route(
      "/big.bin", .file(FileResource(body: body, rangeFault: .partial(lower: 0, upper: 99_999, contentRange: true))))
    fixture.manifest(Self.manifest)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.holds("big.bin", body))
  }

  @Test func aRetryOfASmallBodyThatGetsAPartialAnswerFails() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 40_000, seed: 4)
    // First a body cut short (a retry follows, without Range: nothing reached the disk), then a
    // 206 with the second half.
    fixture.server.route(
      "/big.bin",
      .sequence([
        Response(status: 200, headers: ["Content-Length": "40000"], body: Array(body[0..<20_000])),
        Response(
          status: 206, headers: ["Content-Range": "bytes 20000-39999/40000"], body: Array(body[20_000..<40_000])),
      ]))
    fixture.manifest(Self.manifest)
    let result = try fixture.run()
    #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
    #expect(!fixture.folder.exists("big.bin"))
    let requests = fixture.server.requests(for: "/big.bin")
    #expect(requests.count == 2)
    #expect(requests.allSatisfy { $0.header("range") == nil })
    #expect(
      (try fixture.tasks()["big.bin"]?["error"] as? [String: Any])?["code"] as? String == "range-mismatch")
  }

  // MARK: - Resume

  @Test func aShortRangeOnResumeIsContinuedNotPlaced() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 1_000_000, seed: 5)
    let saved = try interrupted(fixture, body)
    #expect(saved < 800_000)
    // The server ends its range at byte 799,999 of 1,000,000, once; then it answers honestly.
    fixture.server.route(
      "/big.bin", .file(FileResource(body: body, etag: .strong("v1"), rangeFault: .shortRange(upper: 799_999))))
    fixture.server.clearLog()
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.holds("big.bin", body))
    let starts = fixture.server.requests(for: "/big.bin").map(rangeOffset)
    #expect(starts.count == 2)
    #expect(starts.last == .some(800_000), "\(starts)")
    // This run received the bytes past the checkpoint, not the whole file.
    let bytes = try fixture.summary()["bytes"] as? Int
    #expect(bytes == 1_000_000 - Int(starts.first.flatMap { $0 } ?? 0), "\(String(describing: bytes))")
    // The closing line says the same.
    let done = result.stdout.split(separator: "\n").first { $0.hasPrefix("done:") }.map(String.init) ?? ""
    #expect(done.contains("; \(ProgressDisplay.bytes(Int64(bytes ?? 0))) in "), "\(done)")
  }

  @Test func aShortRangeWithNoRetryLeftFailsAndTheNextRunContinues() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 1_000_000, seed: 6)
    _ = try interrupted(fixture, body)
    fixture.manifest(Self.manifest.replacingOccurrences(of: "attempts: 2", with: "attempts: 1"))
    fixture.server.route(
      "/big.bin", .file(FileResource(body: body, etag: .strong("v1"), rangeFault: .shortRange(upper: 799_999))))
    let first = try fixture.run()
    #expect(first.status == 1, "\(first.stdout)\(first.stderr)")
    #expect(!fixture.folder.exists("big.bin"))
    #expect((try fixture.tasks()["big.bin"]?["error"] as? [String: Any])?["code"] as? String == "incomplete")
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.server.clearLog()
    let second = try fixture.run()
    #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
    #expect(fixture.holds("big.bin", body))
    #expect(fixture.server.requests(for: "/big.bin").map(rangeOffset) == [.some(800_000)])
  }

  /// Interrupts a download, then serves `resource` (made from the file's bytes): the resume must
  /// be refused and the file fetched again whole, never spliced.
  func expectResumeStartsOver(seed: UInt64, _ resource: ([UInt8]) -> FileResource) throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 1_000_000, seed: seed)
    _ = try interrupted(fixture, body)
    fixture.server.route("/big.bin", .file(resource(body)))
    fixture.server.clearLog()
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.holds("big.bin", body))
    let starts = fixture.server.requests(for: "/big.bin").map(rangeOffset)
    #expect(starts.first != nil && starts.last == .some(nil), "\(starts)")
  }

  /// A 206 with a `Content-Encoding` carries bytes that are not the file's: never appended.
  @Test func anEncodedRangeOnResumeStartsOver() throws {
    try expectResumeStartsOver(seed: 13) { FileResource(body: $0, etag: .strong("v1"), contentEncoding: "gzip") }
  }

  /// The checkpoint holds the whole file (200,000 bytes), but the server, under the same ETag,
  /// now has 150,000: its 416 says `bytes */150000`. The old bytes must not be placed.
  @Test func a416ThatGivesAnotherLengthStartsOver() throws {
    let fixture = try RunFixture()
    let old = TestData.pseudoRandomBytes(count: 200_000, seed: 11)
    let new = TestData.pseudoRandomBytes(count: 150_000, seed: 12)
    fixture.server.route("/big.bin", .file(FileResource(body: new, etag: .strong("v1"))))
    fixture.manifest(Self.manifest)
    try fixture.checkpointWhole(old, of: "big.bin", etag: "\"v1\"", total: old.count)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.holds("big.bin", new))
    #expect(fixture.server.requests(for: "/big.bin").map(rangeOffset) == [.some(200_000), nil])
  }

  @Test(arguments: [
    RangeFault.shiftedLabel(shift: 1000), RangeFault.wrongTotal(total: 2_000_000),
    RangeFault.lyingLength(length: 10),
  ])
  func aMislabelledRangeOnResumeStartsOver(_ fault: RangeFault) throws {
    try expectResumeStartsOver(seed: 7) { FileResource(body: $0, etag: .strong("v1"), rangeFault: fault) }
  }

  // MARK: - Stalls, lengths, headers

  @Test func aServerThatStallsMidBodyTimesOutOnTime() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 300_000, seed: 8)
    fixture.server.route(
      "/big.bin", .file(FileResource(body: body, etag: .strong("v1"), stallInBody: (bytes: 100_000, seconds: 15))))
    fixture.manifest(
      """
      version: 1
      defaults:
        retry: {attempts: 1}
        timeouts: {request: 1s}
      sessions:
        main:
          tasks:
            - download: BASE/big.bin
      """)
    let started = Date()
    let result = try fixture.run()
    let elapsed = Date().timeIntervalSince(started)
    #expect(result.status == 1)
    #expect((try fixture.tasks()["big.bin"]?["error"] as? [String: Any])?["code"] as? String == "timeout")
    #expect(!fixture.folder.exists("big.bin"))
    // libcurl's own low-speed check took 6.5 s here: it averages over five seconds.
    #expect(elapsed < 4, "the 1 s idle limit ended the transfer after \(elapsed) s")
  }

  @Test func aLengthTheBodyDoesNotReachIsANetworkFailure() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 30_000, seed: 9)
    fixture.server.route(
      "/big.bin", .fixed(Response(status: 200, headers: ["Content-Length": "50000"], body: body)))
    fixture.manifest(Self.manifest)
    let result = try fixture.run()
    #expect(result.status == 1)
    #expect(!fixture.folder.exists("big.bin"))
    #expect((try fixture.tasks()["big.bin"]?["error"] as? [String: Any])?["code"] as? String == "network")
  }

  @Test func anOversizedHeaderIsABadResponseNotOutOfMemory() throws {
    let fixture = try RunFixture()
    let huge = String(repeating: "x", count: 10 << 20)
    fixture.server.route("/big.bin", .fixed(.text(200, "hello\n", headers: ["X-Padding": huge])))
    fixture.manifest(Self.manifest)
    let result = try fixture.run()
    #expect(result.status == 1)
    #expect(!fixture.folder.exists("big.bin"))
    let error = try #require(try fixture.tasks()["big.bin"]?["error"] as? [String: Any])
    #expect(error["code"] as? String == "bad-response", "\(error)")
    #expect((error["message"] as? String)?.contains("header") == true, "\(error)")
  }

  @Test func aGarbledResponseIsABadResponse() throws {
    let fixture = try RunFixture()
    fixture.server.route("/big.bin", .fixed(.text(200, "hello\n", headers: ["Content-Length": "five"])))
    fixture.manifest(Self.manifest)
    let result = try fixture.run()
    #expect(result.status == 1)
    #expect(!fixture.folder.exists("big.bin"))
    let error = try #require(try fixture.tasks()["big.bin"]?["error"] as? [String: Any])
    #expect(error["code"] as? String == "bad-response", "\(error)")
  }

  @Test func anUploadFromADeviceFailsInsteadOfStreamingForever() throws {
    let fixture = try RunFixture()
    fixture.server.route("/up", .uploadSink)
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - upload: BASE/up
              from: /dev/zero
      """)
    let result = try fixture.run(timeout: 30)
    #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
    let error = try #require(try fixture.tasks().values.first?["error"] as? [String: Any])
    #expect(error["code"] as? String == "read", "\(error)")
    #expect(fixture.server.requests(for: "/up").isEmpty)
  }

  // MARK: - Reports and events

  @Test func eventsComeInURLSessionsOrder() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 600_000, seed: 10)
    let file = FileResource(body: body, etag: .strong("v1"), trickle: Trickle(chunkBytes: 64 << 10, interval: 0.05))
    // The head comes late, so that progress ticks pass while the request waits for it.
    fixture.server.route("/big.bin") { _ in
      usleep(400_000)
      return Response(status: 200, headers: ["Content-Type": "application/octet-stream"], body: body)
    }
    fixture.server.route("/slow.bin", .file(file))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/big.bin
            - download: BASE/slow.bin
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    for task in ["big.bin", "slow.bin"] {
      let names = fixture.events().filter { $0["task"] as? String == task }.compactMap { $0["event"] as? String }
      #expect(names.first == "response", "\(task): \(names)")
      let finished = names.firstIndex(of: "finished") ?? -1
      let completed = names.firstIndex(of: "completed") ?? -1
      #expect(finished > 0 && completed == finished + 1 && completed == names.count - 1, "\(task): \(names)")
      let lastProgress = names.lastIndex(of: "progress") ?? 0
      #expect(lastProgress < finished, "\(task): \(names)")
    }
    #expect(fixture.events().contains { $0["event"] as? String == "progress" && $0["task"] as? String == "slow.bin" })
  }
}
