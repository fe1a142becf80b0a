import Foundation
import TestServer
import TestSupport
import Testing

/// A response head larger than libcurl takes fails `bad-response` at once, over HTTP/2 as over
/// HTTP/1.1: another try gets the same head.
@Suite(.serialized) struct ResponseHeadLimitTests {
  /// nginx's `add_header` lines: `count` headers of 3,500 bytes each (a value of nginx's
  /// configuration is at most 4 KB).
  static func headers(_ count: Int) -> String {
    (0..<count).map { "add_header X-Padding-\($0) \(String(repeating: "y", count: 3500));" }.joined(separator: " ")
  }

  /// Runs one download of `url` with `http_version` and three tries; returns the task's error.
  func fail(_ url: String, http: String, trusting ca: String? = nil) throws -> (status: Int32, error: [String: Any]) {
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          \(ca.map { "tls: {ca_file: \($0)}" } ?? "")
          network: {http_version: "\(http)"}
          retry: {attempts: 3, backoff: 10ms}
          tasks:
            - download: \(url)
              to: a.bin
      """)
    let outcome = try fixture.run()
    #expect(!fixture.folder.exists("a.bin"))
    let error = try #require(try fixture.tasks()["a.bin"]?["error"] as? [String: Any], "\(outcome.stderr)")
    return (outcome.status, error)
  }

  @Test func aHeadPastTheLimitOverHTTP2IsABadResponseTriedOnce() throws {
    // 140 KB of headers: more than libcurl holds of an HTTP/2 head (128 KB), less than it takes
    // over HTTP/1.1 (300 KB).
    let nginx = try NginxServer(
      serverDirectives: """
        location /big { \(Self.headers(40)) return 200 "hello\\n"; }
        location /huge { \(Self.headers(100)) return 200 "hello\\n"; }
        """)
    let ca = nginx.certificates.caCertificate
    for (path, http) in [("/big", "2"), ("/big", "auto"), ("/huge", "2"), ("/huge", "1.1")] {
      let before = nginx.requests(for: path).count
      let (status, error) = try fail(nginx.url(path), http: http, trusting: ca)
      #expect(status == 1)
      #expect(error["code"] as? String == "bad-response", "\(path) over \(http): \(error)")
      #expect((error["message"] as? String)?.contains("response head") == true, "\(error)")
      #expect(nginx.requests(for: path).count - before == 1, "\(path) over \(http) was asked once, not again")
    }
  }

  @Test func aHeadOfManyLinesPastTheLimitOverHTTP1IsABadResponseTriedOnce() throws {
    // The test server (HTTP/1.1): 100 lines of 3,500 bytes, each below libcurl's limit for one line.
    let fixture = try RunFixture()
    var headers: [String: String] = [:]
    for index in 0..<100 { headers["X-Padding-\(index)"] = String(repeating: "z", count: 3500) }
    fixture.server.route("/a.bin", .fixed(.text(200, "hello\n", headers: headers)))
    let (status, error) = try fail(fixture.server.url("/a.bin"), http: "1.1")
    #expect(status == 1)
    #expect(error["code"] as? String == "bad-response", "\(error)")
    #expect(fixture.server.requests(for: "/a.bin").count == 1)
  }
}
