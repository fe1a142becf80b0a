import Foundation
import TestServer
import Testing

/// Fault injection, response sequences and redirects.
@Suite struct FaultTests {
  let server: TestHTTPServer
  let body = TestData.pseudoRandomBytes(count: 10_000)

  init() throws {
    server = try TestHTTPServer()
  }

  @Test func dropAfterCutsTheBodyThenBehaves() throws {
    server.route("/drop", .file(FileResource(body: body, etag: .strong("d"), dropAfter: 1000, dropTimes: 1)))
    let cut = try curl("-o", "-", server.url("/drop"))
    #expect(cut.status == 18, "\(cut.errorText)")
    #expect(cut.output == Array(body[0..<1000]))
    let resumed = try curl("-i", "-H", "Range: bytes=1000-", "-H", "If-Range: \"d\"", server.url("/drop")).reply
    #expect(resumed.status == 206)
    #expect(resumed.body == Array(body[1000...]))
    #expect(server.requests(for: "/drop").count == 2)
  }

  @Test func dropsEveryTimeByDefault() throws {
    server.route("/drop", .file(FileResource(body: body, dropAfter: 0)))
    #expect(try curl("-o", "-", server.url("/drop")).status == 18)
    #expect(try curl("-o", "-", server.url("/drop")).status == 18)
  }

  @Test func stallDelaysTheBodyOnce() throws {
    server.route("/stall", .file(FileResource(body: body, stallAfterHeaders: 0.4, stallTimes: 1)))
    let slow = try curl("-o", "-", server.url("/stall"))
    #expect(slow.status == 0)
    #expect(slow.output == body)
    #expect(slow.seconds >= 0.4)
    let timedOut = try curl("-o", "-", "--max-time", "0.2", server.url("/stall"))
    #expect(timedOut.status == 0)
  }

  @Test func stallLongerThanTheClientTimeoutFailsIt() throws {
    server.route("/stall", .file(FileResource(body: body, stallAfterHeaders: 3)))
    let result = try curl("-o", "-", "--max-time", "0.3", server.url("/stall"))
    #expect(result.status == 28)
  }

  @Test func trickleSendsTheBodySlowly() throws {
    server.route(
      "/slow", .file(FileResource(body: Array(body[0..<400]), trickle: Trickle(chunkBytes: 100, interval: 0.1))))
    let result = try curl("-o", "-", server.url("/slow"))
    #expect(result.status == 0)
    #expect(result.output == Array(body[0..<400]))
    #expect(result.seconds >= 0.3)
  }

  @Test func sequenceAnswers503ThenRepeats200() throws {
    server.route(
      "/flaky",
      .sequence([
        .text(503, "busy\n", headers: ["Retry-After": "1"]),
        .text(200, "ok\n"),
      ]))
    let first = try curl("-i", server.url("/flaky")).reply
    #expect(first.status == 503)
    #expect(first.headers["retry-after"] == "1")
    for _ in 0..<2 {
      let next = try curl("-i", server.url("/flaky")).reply
      #expect(next.status == 200)
      #expect(next.bodyText == "ok\n")
    }
  }

  @Test func redirectSendsLocationAsGiven() throws {
    server.route("/away", .redirect(status: 302, location: "file:///etc/passwd"))
    let reply = try curl("-i", server.url("/away")).reply
    #expect(reply.status == 302)
    #expect(reply.headers["location"] == "file:///etc/passwd")

    server.route("/moved", .redirect(status: 301, location: server.url("/target")))
    server.route("/target", .text("arrived\n"))
    let followed = try curl("-L", server.url("/moved"))
    #expect(followed.text == "arrived\n")
  }

  @Test func handlerAnswersAnything() throws {
    server.route("/custom") { request in
      Response.text(418, "method \(request.method) query \(request.query ?? "-")\n", headers: ["X-Teapot": "yes"])
    }
    let reply = try curl("-i", "-X", "POST", server.url("/custom?q=1")).reply
    #expect(reply.status == 418)
    #expect(reply.headers["x-teapot"] == "yes")
    #expect(reply.bodyText == "method POST query q=1\n")
  }

  @Test func shortContentLengthFromAHandlerEndsInAPartialTransfer() throws {
    server.route("/lies", .fixed(Response(status: 200, headers: ["Content-Length": "100"], body: [1, 2, 3])))
    let result = try curl("-o", "-", server.url("/lies"))
    #expect(result.status == 18)
  }
}
