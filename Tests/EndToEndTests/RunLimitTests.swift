import Foundation
import TestServer
import TestSupport
import Testing

/// Caps, rate limits, request bodies and memory bounds of `batchdl run`.
@Suite struct RunLimitTests {
  @Test func jobsCapsTransfersAcrossHosts() throws {
    let fixture = try RunFixture()
    for index in 0..<6 {
      fixture.server.route(
        "/f\(index)",
        .file(
          FileResource(
            body: Array(repeating: 7, count: 32 << 10), trickle: Trickle(chunkBytes: 8 << 10, interval: 0.05))))
    }
    let port = fixture.server.port
    let tasks = (0..<6).map { index in
      let host = index % 2 == 0 ? "127.0.0.1" : "localhost"
      return "      - download: http://\(host):\(port)/f\(index)\n        to: f\(index)"
    }.joined(separator: "\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          network: {max_connections_per_host: 6, max_concurrent: 6}
          tasks:
      \(tasks)
      """)
    let result = try fixture.run(["--jobs", "2"])
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.server.maxActiveRequests == 2)
  }

  @Test func rateLimitSlowsTheSession() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a", .file(Array(repeating: 1, count: 150 << 10)))
    fixture.server.route("/b", .file(Array(repeating: 2, count: 150 << 10)))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          network: {rate_limit: 100KB/s}
          tasks:
            - download: BASE/a
            - download: BASE/b
      """)
    let start = Date()
    let result = try fixture.run()
    let elapsed = Date().timeIntervalSince(start)
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    // 300 KiB at 100 KiB/s for the whole session cannot take less than about two seconds.
    #expect(elapsed > 1.8, "took \(elapsed) s")
    #expect(fixture.bytes("a")?.count == 150 << 10)
  }

  @Test func requestBodiesAreSent() throws {
    let fixture = try RunFixture()
    fixture.server.route("/echo", .uploadSink)
    fixture.server.route("/search", .uploadSink)
    fixture.folder.write("query.json", "{\"q\": \"from a file\"}")
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          headers: {Content-Type: application/json}
          tasks:
            - data: BASE/search
              body: '{"q": "inline"}'
              to: search.json
            - upload: BASE/echo
              method: PATCH
              body_file: query.json
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let search = try #require(fixture.server.requests(for: "/search").first)
    #expect(search.method == "POST")
    #expect(search.bodyText == "{\"q\": \"inline\"}")
    #expect(search.header("content-type") == "application/json")
    let echo = try #require(fixture.server.requests(for: "/echo").first)
    #expect(echo.method == "PATCH")
    #expect(echo.bodyText == "{\"q\": \"from a file\"}")
    #expect(fixture.folder.read("search.json")?.contains("\"bytes\"") == true)
  }

  @Test func aDataBodyPastTheMemoryBoundFails() throws {
    let fixture = try RunFixture()
    fixture.server.route("/huge", .file(Array(repeating: 0, count: (16 << 20) + 1)))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - data: BASE/huge
              to: huge.bin
      """)
    let result = try fixture.run()
    #expect(result.status == 1)
    let task = try #require(try fixture.tasks()["huge.bin"])
    #expect((task["error"] as? [String: Any])?["code"] as? String == "body-too-large")
    #expect(((task["error"] as? [String: Any])?["message"] as? String)?.contains("become_download") == true)
    #expect(!fixture.folder.exists("huge.bin"))
  }

  @Test func progressBarsDrawOnRequest() throws {
    let fixture = try RunFixture()
    fixture.server.route(
      "/slow",
      .file(
        FileResource(body: Array(repeating: 3, count: 60 << 10), trickle: Trickle(chunkBytes: 6 << 10, interval: 0.05)))
    )
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/slow
      """)
    let result = try BinaryRunner.run(["run", "manifest.yaml", "--progress", "always"], in: fixture.folder.path)
    #expect(result.status == 0)
    // Lines rewritten in place (erased to their end), and wrapping and the cursor back on at the end.
    #expect(result.stderr.contains("\u{1B}[K"))
    #expect(result.stderr.hasSuffix("\u{1B}[?7h\u{1B}[?25h"))
    #expect(result.stderr.contains("0/1 tasks"))
    #expect(result.stderr.contains("completed slow"))
    #expect(result.stdout.contains("done: 1 completed, 0 failed"))
  }

  /// Runs a download to `to` in `dest: out/`, where `out/link` leads to a folder outside.
  func runThroughALinkOut(to: String) throws -> (RunFixture, TemporaryDirectory, BinaryRunner.Outcome) {
    let fixture = try RunFixture()
    let outside = TemporaryDirectory()
    fixture.server.route("/a", .text("a\n"))
    try FileManager.default.createDirectory(atPath: fixture.folder.path + "/out", withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(
      atPath: fixture.folder.path + "/out/link", withDestinationPath: outside.path)
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          dest: out/
          tasks:
            - download: BASE/a
              to: \(to)
      """)
    return (fixture, outside, try fixture.run())
  }

  @Test func unsafeDestinationsThroughSymlinksAreRefused() throws {
    let (fixture, outside, result) = try runThroughALinkOut(to: "link/a.txt")
    #expect(result.status == 1)
    #expect((try fixture.tasks()["out/link/a.txt"]?["error"] as? [String: Any])?["code"] as? String == "unsafe-path")
    #expect(!outside.exists("a.txt"))
    #expect(fixture.server.requests.isEmpty)
  }

  @Test func aDestinationThatALinkLeadsToATLSFileIsRefused() throws {
    // dest is a link to the folder that holds the session's CA file: `to: ca.pem` is that file.
    let fixture = try RunFixture()
    fixture.server.route("/ca.pem", .text("an attacker's CA\n"))
    fixture.folder.write("real/ca.pem", "the user's CA\n")
    try FileManager.default.createSymbolicLink(
      atPath: fixture.folder.path + "/link", withDestinationPath: fixture.folder.path + "/real")
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          dest: link/
          tls: {ca_file: real/ca.pem}
          tasks:
            - download: BASE/ca.pem
              to: ca.pem
      """)
    let result = try fixture.run()
    #expect(result.status == 1)
    #expect(fixture.folder.read("real/ca.pem") == "the user's CA\n")
    let error = try fixture.tasks()["link/ca.pem"]?["error"] as? [String: Any]
    #expect(error?["code"] as? String == "unsafe-path", "\(String(describing: error))")
    #expect(fixture.server.requests.isEmpty, "refused before anything is sent")
  }

  @Test func noFolderIsMadeThroughASymlinkThatLeadsOut() throws {
    // The folders of a refused destination were made outside dest before the check refused it.
    let (fixture, outside, result) = try runThroughALinkOut(to: "link/sub/deeper/a.txt")
    #expect(result.status == 1)
    let error = try fixture.tasks()["out/link/sub/deeper/a.txt"]?["error"] as? [String: Any]
    #expect(error?["code"] as? String == "unsafe-path")
    #expect(!outside.exists("sub"), "nothing is created outside dest")
    #expect(fixture.server.requests.isEmpty)
  }
}
