import Foundation
import TestServer
import Testing

/// What real mirrors do: capped connections, lying bytes, fixed statuses, ignored ranges, other
/// versions, refused connections; and the exchange log and path counters that show it.
@Suite struct MirrorTests {
  let server: TestHTTPServer
  let body = TestData.pseudoRandomBytes(count: 10_000, seed: 11)

  init() throws {
    server = try TestHTTPServer()
  }

  @Test func rateLimitPacesEachResponse() throws {
    let big = TestData.pseudoRandomBytes(count: 300_000, seed: 3)
    server.route("/capped", .file(FileResource(body: big, etag: .strong("c"), rateLimit: 1_000_000)))
    let result = try curl("-o", "-", server.url("/capped"))
    #expect(result.status == 0, "\(result.errorText)")
    #expect(result.output == big)
    // 300,000 bytes at 1 MB/s in pieces of 50,000: the last piece is due 0.25 s after the first.
    #expect(result.seconds >= 0.25)
    #expect(server.exchanges(for: "/capped").map(\.bytesSent) == [300_000])
  }

  @Test func parallelRangesOfACappedFileAreCountedWithoutTiming() throws {
    let big = TestData.pseudoRandomBytes(count: 800_000, seed: 4)
    // 200,000 bytes at 100 KB/s take about two seconds each: the four requests overlap.
    server.route("/capped", .file(FileResource(body: big, etag: .strong("c"), rateLimit: 100_000)))
    let ranges = (0..<4).map { ($0 * 200_000, $0 * 200_000 + 199_999) }
    let running = try ranges.map { lower, upper in
      try RunningCurl([
        "-o", "-", "-H", "Range: bytes=\(lower)-\(upper)", "-H", "If-Range: \"c\"", server.url("/capped"),
      ])
    }
    let results = running.map { $0.wait() }
    #expect(results.allSatisfy { $0.status == 0 })
    #expect(results.flatMap(\.output) == big)
    let stats = server.stats(for: "/capped")
    #expect(stats.requests == 4)
    #expect(stats.rangeRequests == 4)
    #expect(stats.connections == 4)
    #expect(stats.maxConcurrent == 4)
    #expect(stats.maxConcurrentRanges == 4)
    #expect(stats.bytesSent == 800_000)
    let exchanges = server.exchanges(for: "/capped")
    #expect(Set(exchanges.compactMap(\.range)) == Set(ranges.map { "bytes=\($0.0)-\($0.1)" }))
    #expect(exchanges.allSatisfy { $0.status == 206 && $0.bytesSent == 200_000 && $0.isComplete })
    #expect(exchanges.allSatisfy { $0.ifRange == "\"c\"" })
    #expect(server.stats(for: "/other") == PathStats())
  }

  @Test func corruptionInvertsBytesAndKeepsLengthAndETag() throws {
    server.route(
      "/liar", .file(FileResource(body: body, etag: .strong("v1"), corruptions: [Corruption(bytes: 1000...1999)])))
    var expected = body
    for index in 1000...1999 { expected[index] = ~expected[index] }
    let whole = try curl("-i", server.url("/liar")).reply
    #expect(whole.status == 200)
    #expect(whole.headers["etag"] == "\"v1\"")
    #expect(whole.headers["content-length"] == "10000")
    #expect(whole.body == expected)
    let clean = try curl("-i", "-H", "Range: bytes=5000-5999", server.url("/liar")).reply
    #expect(clean.status == 206)
    #expect(clean.body == Array(body[5000...5999]))
    let straddling = try curl("-i", "-H", "Range: bytes=1500-2499", server.url("/liar")).reply
    #expect(straddling.headers["content-range"] == "bytes 1500-2499/10000")
    #expect(straddling.body == Array(expected[1500...2499]))
    #expect(server.exchanges(for: "/liar").map(\.corrupted) == [true, false, true])
  }

  @Test func corruptionOnlyOnTheNthRequest() throws {
    server.route(
      "/liar",
      .file(FileResource(body: body, etag: .strong("v1"), corruptions: [Corruption(bytes: 0...9, onRequest: 2)])))
    let answers = try (0..<3).map { _ in try curl("-o", "-", server.url("/liar")).output }
    #expect(answers[0] == body)
    #expect(answers[1] != body)
    #expect(answers[1].count == body.count)
    #expect(Array(answers[1][10...]) == Array(body[10...]))
    #expect(answers[2] == body)
  }

  @Test func corruptionTimesCountsOnlyAnswersThatSendTheBytes() throws {
    // The piece is sent wrong once; a request elsewhere in the file does not use that up, and
    // the piece's second fetch is right: what a repair of one piece needs.
    server.route(
      "/liar",
      .file(FileResource(body: body, etag: .strong("v1"), corruptions: [Corruption(bytes: 4096...8191, times: 1)])))
    let elsewhere = try curl("-o", "-", "-H", "Range: bytes=0-4095", server.url("/liar")).output
    #expect(elsewhere == Array(body[0...4095]))
    let first = try curl("-o", "-", "-H", "Range: bytes=4096-8191", server.url("/liar")).output
    #expect(first.count == 4096)
    #expect(first != Array(body[4096...8191]))
    let again = try curl("-o", "-", "-H", "Range: bytes=4096-8191", server.url("/liar")).output
    #expect(again == Array(body[4096...8191]))
    #expect(server.exchanges(for: "/liar").map(\.corrupted) == [false, true, false])
  }

  @Test(arguments: [503, 404, 410])
  func statusAnswersEveryRequest(status: Int) throws {
    server.route("/gone", .status(status, headers: ["Retry-After": "1"]))
    let plain = try curl("-i", server.url("/gone")).reply
    #expect(plain.status == status)
    #expect(plain.headers["retry-after"] == "1")
    let ranged = try curl("-i", "-H", "Range: bytes=0-9", server.url("/gone")).reply
    #expect(ranged.status == status)
    #expect(try curl("-i", "-I", server.url("/gone")).reply.status == status)
    #expect(server.exchanges(for: "/gone").map(\.status) == [status, status, status])
  }

  @Test func wholeBodyFaultClaimsRangesButAnswers200() throws {
    server.route("/whole", .file(FileResource(body: body, etag: .strong("v1"), rangeFault: .wholeBody)))
    let head = try curl("-i", "-I", server.url("/whole")).reply
    #expect(head.headers["accept-ranges"] == "bytes")
    let reply = try curl("-i", "-H", "Range: bytes=100-199", "-H", "If-Range: \"v1\"", server.url("/whole")).reply
    #expect(reply.status == 200)
    #expect(reply.headers["content-range"] == nil)
    #expect(reply.body == body)
    #expect(server.exchanges(for: "/whole").last?.bytesSent == body.count)
  }

  @Test func twoServersServeTwoVersionsOfOneFile() throws {
    let other = try TestHTTPServer()
    defer { other.stop() }
    server.route("/file.bin", .file(.version(1, length: 5000)))
    other.route("/file.bin", .file(.version(2, length: 5000)))
    let first = try curl("-i", server.url("/file.bin")).reply
    let second = try curl("-i", other.url("/file.bin")).reply
    #expect(first.body == FileResource.versionBytes(1, length: 5000))
    #expect(second.body == FileResource.versionBytes(2, length: 5000))
    #expect(first.body.count == second.body.count)
    #expect(first.body != second.body)
    let firstTag = try #require(first.headers["etag"])
    #expect(firstTag != second.headers["etag"])
    #expect(FileResource.version(1, length: 5000).etag?.headerValue == firstTag)
    // The first version's validator does not hold at the second server: the whole file comes back.
    let resumed = try curl("-i", "-H", "Range: bytes=2500-", "-H", "If-Range: \(firstTag)", other.url("/file.bin"))
      .reply
    #expect(resumed.status == 200)
    #expect(resumed.body == second.body)
  }

  @Test func refusedPortRefusesEveryConnection() throws {
    let refused = try RefusedPort()
    #expect(refused.url("/a.bin") == "http://127.0.0.1:\(refused.port)/a.bin")
    for _ in 0..<3 {
      let result = try curl("-o", "-", refused.url("/a.bin"))
      #expect(result.status == 7, "\(result.errorText)")
    }
    #expect(RawConnection(port: refused.port) == nil)
    // Nothing else can take the port while it is held.
    #expect(throws: TestServerError.self) { try TestHTTPServer(port: refused.port) }
  }

  @Test func exchangeLogRecordsEachAnswer() throws {
    server.route("/file", .file(FileResource(body: body, etag: .strong("v1"))))
    server.route("/cut", .file(FileResource(body: body, dropAfter: 1000, dropTimes: 1)))
    _ = try curl("-o", "-", "-H", "Range: bytes=100-", "-H", "If-Range: \"v1\"", server.url("/file"))
    _ = try curl("-I", server.url("/file"))
    _ = try curl("-o", "-", server.url("/missing"))
    _ = try curl("-o", "-", server.url("/cut"))
    let exchanges = server.exchanges
    #expect(
      exchanges.dropLast() == [
        Exchange(
          method: "GET", path: "/file", range: "bytes=100-", ifRange: "\"v1\"", status: 206, bodyBytes: 9900,
          bytesSent: 9900, connectionID: 1),
        Exchange(method: "HEAD", path: "/file", status: 200, bodyBytes: 0, bytesSent: 0, connectionID: 2),
        Exchange(method: "GET", path: "/missing", status: 404, bodyBytes: 20, bytesSent: 20, connectionID: 3),
      ])
    let cut = try #require(exchanges.last)
    #expect(cut.status == 200)
    #expect(cut.bodyBytes == 10_000)
    #expect(cut.bytesSent == 1000)
    #expect(!cut.isComplete)
    #expect(server.stats(for: "/missing").requests == 1)
    server.clearLog()
    #expect(server.exchanges.isEmpty)
    _ = try curl("-o", "-", server.url("/file"))
    #expect(server.exchanges.map(\.bytesSent) == [10_000])
  }

  @Test func resetStatsStartsPathCountersAfresh() throws {
    server.route("/file", .file(FileResource(body: body)))
    _ = try curl("-o", "-", "-H", "Range: bytes=0-9", server.url("/file"))
    #expect(server.stats(for: "/file").rangeRequests == 1)
    server.resetStats()
    #expect(server.stats(for: "/file") == PathStats())
    _ = try curl("-o", "-", server.url("/file"))
    let stats = server.stats(for: "/file")
    #expect(stats.requests == 1)
    #expect(stats.rangeRequests == 0)
    #expect(stats.maxConcurrent == 1)
    #expect(stats.bytesSent == 10_000)
  }
}
