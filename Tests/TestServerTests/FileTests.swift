import Foundation
import TestServer
import Testing

/// File routes: plain GET and HEAD, ranges, validators, conditional requests.
@Suite struct FileTests {
  let server: TestHTTPServer
  let lastModified = Date(timeIntervalSince1970: 1_704_067_200)

  init() throws {
    server = try TestHTTPServer()
    server.route("/hello.txt", .text("hello, world\n", etag: .strong("v1"), lastModified: lastModified))
  }

  @Test func getAnswersTheFileAndRecordsTheRequest() throws {
    let result = try curl("-i", "-H", "X-Custom: Yes", server.url("/hello.txt?x=1"))
    #expect(result.status == 0, "\(result.errorText)")
    let reply = result.reply
    #expect(reply.status == 200)
    #expect(reply.bodyText == "hello, world\n")
    #expect(reply.headers["content-length"] == "13")
    #expect(reply.headers["content-type"] == "text/plain; charset=utf-8")
    #expect(reply.headers["etag"] == "\"v1\"")
    #expect(reply.headers["last-modified"] == "Mon, 01 Jan 2024 00:00:00 GMT")
    let logged = server.requests(for: "/hello.txt")
    #expect(logged.count == 1)
    #expect(logged.first?.method == "GET")
    #expect(logged.first?.query == "x=1")
    #expect(logged.first?.headers["x-custom"] == "Yes")
    #expect(logged.first?.connectionID == 1)
  }

  @Test func headSendsHeadersWithoutBody() throws {
    let reply = try curl("-i", "-I", server.url("/hello.txt")).reply
    #expect(reply.status == 200)
    #expect(reply.headers["content-length"] == "13")
    #expect(reply.body.isEmpty)
  }

  @Test func unknownPathIs404() throws {
    let reply = try curl("-i", server.url("/missing")).reply
    #expect(reply.status == 404)
    #expect(reply.bodyText.contains("not found"))
  }

  @Test func rangeRequestsAnswer206WithContentRange() throws {
    let closed = try curl("-i", "-H", "Range: bytes=2-5", server.url("/hello.txt")).reply
    #expect(closed.status == 206)
    #expect(closed.headers["content-range"] == "bytes 2-5/13")
    #expect(closed.bodyText == "llo,")
    let open = try curl("-i", "-H", "Range: bytes=7-", server.url("/hello.txt")).reply
    #expect(open.status == 206)
    #expect(open.headers["content-range"] == "bytes 7-12/13")
    #expect(open.bodyText == "world\n")
    let suffix = try curl("-i", "-H", "Range: bytes=-3", server.url("/hello.txt")).reply
    #expect(suffix.headers["content-range"] == "bytes 10-12/13")
  }

  @Test func unsatisfiableRangeIs416() throws {
    let reply = try curl("-i", "-H", "Range: bytes=13-", server.url("/hello.txt")).reply
    #expect(reply.status == 416)
    #expect(reply.headers["content-range"] == "bytes */13")
  }

  @Test func ifRangeMismatchAnswersTheWholeFile() throws {
    let stale = try curl("-i", "-H", "Range: bytes=7-", "-H", "If-Range: \"v0\"", server.url("/hello.txt")).reply
    #expect(stale.status == 200)
    #expect(stale.bodyText == "hello, world\n")
    let current = try curl("-i", "-H", "Range: bytes=7-", "-H", "If-Range: \"v1\"", server.url("/hello.txt")).reply
    #expect(current.status == 206)
    let byDate = try curl(
      "-i", "-H", "Range: bytes=7-", "-H", "If-Range: Mon, 01 Jan 2024 00:00:00 GMT", server.url("/hello.txt")
    ).reply
    #expect(byDate.status == 206)
  }

  @Test func weakETagNeverSatisfiesIfRange() throws {
    server.route("/weak", .file(Array("0123456789".utf8), etag: .weak("w1")))
    let reply = try curl("-i", "-H", "Range: bytes=5-", "-H", "If-Range: W/\"w1\"", server.url("/weak")).reply
    #expect(reply.status == 200)
    #expect(reply.headers["etag"] == "W/\"w1\"")
  }

  @Test func matchingValidatorsAnswer304() throws {
    let byTag = try curl("-i", "-H", "If-None-Match: \"v1\"", server.url("/hello.txt")).reply
    #expect(byTag.status == 304)
    #expect(byTag.body.isEmpty)
    let byDate = try curl("-i", "-H", "If-Modified-Since: Tue, 02 Jan 2024 00:00:00 GMT", server.url("/hello.txt"))
      .reply
    #expect(byDate.status == 304)
    let changed = try curl("-i", "-H", "If-None-Match: \"v0\"", server.url("/hello.txt")).reply
    #expect(changed.status == 200)
    let older = try curl("-i", "-H", "If-Modified-Since: Sun, 31 Dec 2023 00:00:00 GMT", server.url("/hello.txt"))
      .reply
    #expect(older.status == 200)
  }

  @Test func ignoreRangeAlwaysAnswersTheWholeFile() throws {
    server.route("/plain", .file(FileResource(body: Array("abcdef".utf8), ignoreRange: true)))
    let reply = try curl("-i", "-H", "Range: bytes=2-", server.url("/plain")).reply
    #expect(reply.status == 200)
    #expect(reply.bodyText == "abcdef")
    #expect(reply.headers["accept-ranges"] == nil)
  }

  @Test func routeCanBeReplacedBetweenRuns() throws {
    server.route("/changing", .text("first\n", etag: .strong("1")))
    #expect(try curl(server.url("/changing")).text == "first\n")
    server.route("/changing", .text("second\n", etag: .strong("2")))
    let reply = try curl("-i", "-H", "Range: bytes=3-", "-H", "If-Range: \"1\"", server.url("/changing")).reply
    #expect(reply.status == 200)
    #expect(reply.bodyText == "second\n")
  }

  @Test func contentEncodingIsSentAsGiven() throws {
    let body: [UInt8] = [0x1f, 0x8b, 0x08, 0x00]
    server.route("/gz", .file(FileResource(body: body, contentType: "text/plain", contentEncoding: "gzip")))
    let reply = try curl("-i", server.url("/gz")).reply
    #expect(reply.headers["content-encoding"] == "gzip")
    #expect(reply.body == body)
  }

  @Test func chunkedFileIsFramedByChunks() throws {
    server.route("/chunked", .file(FileResource(body: Array("abc".utf8), chunked: true)))
    let raw = try curl("-i", "--raw", server.url("/chunked")).reply
    #expect(raw.headers["transfer-encoding"] == "chunked")
    #expect(raw.bodyText == "3\r\nabc\r\n0\r\n\r\n")
  }

  @Test func otherMethodsAre405() throws {
    let reply = try curl("-i", "-X", "DELETE", server.url("/hello.txt")).reply
    #expect(reply.status == 405)
    #expect(reply.headers["allow"] == "GET, HEAD")
  }
}
