import Foundation
import TestServer
import TestSupport
import Testing

/// `batchdl run` end to end: the built binary against the loopback server with faults.
@Suite struct RunTests {
  static let fast = """
    defaults:
      retry: {attempts: 3, backoff: 100ms, max_backoff: 500ms}
      timeouts: {request: 5s}
    """

  @Test func downloadsDataAndUploadsWithADuplicateRequest() throws {
    let fixture = try RunFixture()
    let blob = TestData.pseudoRandomBytes(count: 3 << 20, seed: 7)
    fixture.server.route("/files/blob.bin", .file(blob, etag: .strong("b1")))
    fixture.server.route("/api/info.json", .fixed(.json(200, "{\"version\": 3}")))
    fixture.server.route("/upload/put", .uploadSink)
    fixture.server.route("/upload/form", .uploadSink)
    fixture.folder.write("payload.txt", "payload for upload\n")
    fixture.manifest(
      """
      version: 1
      \(Self.fast)
      sessions:
        main:
          dest: out/
          tasks:
            - download: BASE/files/blob.bin
              sha256: \(SHA256Digest.hex(blob))
              size: \(blob.count)
            - download: BASE/files/./blob.bin#again
              to: copies/blob.bin
            - data: BASE/api/info.json
              to: info.json
            - data: BASE/api/info.json?v=2
            - upload: BASE/upload/put
              from: payload.txt
            - upload: BASE/upload/form
              form: {channel: nightly, file: "@payload.txt"}
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let blobIntact = fixture.holds("out/blob.bin", blob)
    #expect(blobIntact, "out/blob.bin differs")
    let copyIntact = fixture.holds("out/copies/blob.bin", blob)
    #expect(copyIntact, "out/copies/blob.bin differs")
    #expect(fixture.folder.read("out/info.json") == "{\"version\": 3}")
    #expect(fixture.server.requests(for: "/files/blob.bin").count == 1)
    let tasks = try fixture.tasks()
    #expect(tasks["out/blob.bin"]?["source"] as? String == "network")
    #expect(tasks["out/copies/blob.bin"]?["source"] as? String == "duplicate")
    #expect(tasks["out/blob.bin"]?["sha256"] as? String == SHA256Digest.hex(blob))
    let put = try #require(fixture.server.requests(for: "/upload/put").first)
    #expect(put.method == "PUT")
    #expect(put.bodyText == "payload for upload\n")
    let form = try #require(fixture.server.requests(for: "/upload/form").first)
    #expect(form.method == "POST")
    #expect(form.header("content-type")?.hasPrefix("multipart/form-data") == true)
    #expect(form.bodyText.contains("payload for upload"))
    #expect(form.bodyText.contains("nightly"))
    // Downloads ask for the bytes as they are.
    #expect(fixture.server.requests(for: "/files/blob.bin").first?.header("accept-encoding") == "identity")
    #expect(fixture.files().allSatisfy { !$0.hasSuffix(".batchdl-part") })
    let summary = try fixture.summary()
    #expect(summary["tasks"] as? Int == 6)
    #expect(summary["requests"] as? Int == 5)
    #expect(summary["completed"] as? Int == 6)
  }

  /// Files are placed beside the engine's thread; a task that comes after a download must still
  /// find that file in place when it starts.
  @Test func aTaskAfterADownloadFindsItsFileInPlace() throws {
    let fixture = try RunFixture()
    var tasks = ""
    for index in 0..<12 {
      fixture.server.route("/small/\(index).txt", .fixed(Response(status: 200, body: Array("body \(index)\n".utf8))))
      fixture.server.route("/back/\(index)", .uploadSink)
      tasks += """
            - download: BASE/small/\(index).txt
              id: get-\(index)
              to: got/\(index).txt
              sha256: \(SHA256Digest.hex(Array("body \(index)\n".utf8)))
            - upload: BASE/back/\(index)
              from: got/\(index).txt
              after: get-\(index)

        """
    }
    fixture.manifest(
      """
      version: 1
      sessions:
        chain:
          tasks:
      \(tasks)
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let report = try fixture.tasks()
    for index in 0..<12 {
      #expect(fixture.server.requests(for: "/back/\(index)").first?.bodyText == "body \(index)\n")
      // A small body is hashed where it is placed: the report still has its digest.
      #expect(report["get-\(index)"]?["sha256"] as? String == SHA256Digest.hex(Array("body \(index)\n".utf8)))
    }
  }

  @Test func notFoundFailsAtOnceAndLeavesNothing() throws {
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      \(Self.fast)
      sessions:
        main:
          tasks:
            - download: BASE/missing.bin
      """)
    let result = try fixture.run()
    #expect(result.status == 1)
    let task = try #require(try fixture.tasks()["missing.bin"])
    #expect(task["outcome"] as? String == "failed")
    #expect((task["error"] as? [String: Any])?["code"] as? String == "http-404")
    #expect(task["attempts"] as? Int == 1)
    #expect(fixture.server.requests(for: "/missing.bin").count == 1)
    #expect(!fixture.folder.exists("missing.bin"))
    #expect(!fixture.folder.exists("missing.bin.batchdl-part"))
    // A failed task is said on standard error (cron mail keeps it when stdout is thrown away).
    #expect(result.stderr.contains("failed    missing.bin  http-404"))
  }

  @Test func checksumMismatchFailsAndLeavesNothing() throws {
    let fixture = try RunFixture()
    fixture.server.route("/f.bin", .text("not what you expected"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/f.bin
              sha256: \(String(repeating: "ab", count: 32))
            - download: BASE/f.bin
              to: sized.bin
              size: 3
      """)
    let result = try fixture.run()
    #expect(result.status == 1)
    let tasks = try fixture.tasks()
    #expect((tasks["f.bin"]?["error"] as? [String: Any])?["code"] as? String == "checksum-mismatch")
    #expect((tasks["sized.bin"]?["error"] as? [String: Any])?["code"] as? String == "size-mismatch")
    #expect(fixture.files().filter { !$0.hasPrefix(".batchdl/") } == ["events.jsonl", "manifest.yaml", "report.json"])
  }

  @Test func droppedConnectionIsRetriedIntoACorrectFile() throws {
    let fixture = try RunFixture()
    let blob = TestData.pseudoRandomBytes(count: 2 << 20, seed: 3)
    fixture.server.route("/f.bin", .file(FileResource(body: blob, dropAfter: 700_000, dropTimes: 2)))
    fixture.manifest(
      """
      version: 1
      \(Self.fast)
      sessions:
        main:
          tasks:
            - download: BASE/f.bin
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let fileIntact = fixture.holds("f.bin", blob)
    #expect(fileIntact, "f.bin differs")
    #expect(try fixture.tasks()["f.bin"]?["attempts"] as? Int == 3)
    #expect(fixture.events().filter { $0["event"] as? String == "retrying" }.count == 2)
  }

  @Test func serviceUnavailableHonoursRetryAfter() throws {
    let fixture = try RunFixture()
    fixture.server.route(
      "/busy", .sequence([.text(503, "busy", headers: ["Retry-After": "1"]), .text(200, "ready\n")]))
    fixture.manifest(
      """
      version: 1
      \(Self.fast)
      sessions:
        main:
          tasks:
            - download: BASE/busy
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.folder.read("busy") == "ready\n")
    let retry = try #require(fixture.events().first { $0["event"] as? String == "retrying" })
    #expect((retry["delay_ms"] as? Int ?? 0) >= 1000)
    #expect((retry["error"] as? [String: Any])?["code"] as? String == "http-503")
  }

  @Test func retriesStopAfterTheAttemptsAllowed() throws {
    let fixture = try RunFixture()
    fixture.server.route("/down", .fixed(.text(500, "broken")))
    fixture.manifest(
      """
      version: 1
      \(Self.fast)
      sessions:
        main:
          tasks:
            - download: BASE/down
      """)
    let result = try fixture.run()
    #expect(result.status == 1)
    #expect(fixture.server.requests(for: "/down").count == 3)
    #expect(try fixture.tasks()["down"]?["attempts"] as? Int == 3)
  }

  @Test func aStalledResponseTimesOutAndIsRetried() throws {
    let fixture = try RunFixture()
    fixture.server.route(
      "/slow", .file(FileResource(body: Array("finally\n".utf8), stallAfterHeaders: 4, stallTimes: 1)))
    fixture.manifest(
      """
      version: 1
      defaults:
        retry: {attempts: 2, backoff: 100ms}
        timeouts: {request: 1s}
      sessions:
        main:
          tasks:
            - download: BASE/slow
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.folder.read("slow") == "finally\n")
    let retry = try #require(fixture.events().first { $0["event"] as? String == "retrying" })
    #expect((retry["error"] as? [String: Any])?["code"] as? String == "timeout")
  }

  @Test func redirectsAreFollowedButNeverToFileURLs() throws {
    let fixture = try RunFixture()
    fixture.server.route("/moved", .redirect(status: 302, location: "/real"))
    fixture.server.route("/real", .text("real content\n"))
    fixture.server.route("/evil", .redirect(status: 302, location: "file:///etc/passwd"))
    fixture.manifest(
      """
      version: 1
      \(Self.fast)
      sessions:
        main:
          tasks:
            - download: BASE/moved
            - download: BASE/evil
      """)
    let result = try fixture.run()
    #expect(result.status == 1)
    #expect(fixture.folder.read("moved") == "real content\n")
    let evil = try #require(try fixture.tasks()["evil"])
    #expect((evil["error"] as? [String: Any])?["code"] as? String == "protocol")
    #expect(!fixture.folder.exists("evil"))
  }

  @Test func credentialsStayWithTheirOrigin() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    other.route("/echo", .echoHeaders)
    fixture.server.route("/away", .redirect(status: 302, location: other.url("/echo")))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          headers:
            Authorization: "Bearer ${E2E_SECRET}"
            Cookie: "session=${E2E_SECRET}"
          tasks:
            - download: BASE/away
              to: echoed.json
      """)
    let result = try fixture.run(environment: ["E2E_SECRET": "tok-3f9a7c1d"])
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.server.requests(for: "/away").first?.header("authorization") == "Bearer tok-3f9a7c1d")
    let echoed = try #require(other.requests(for: "/echo").first)
    #expect(echoed.header("authorization") == nil)
    #expect(echoed.header("cookie") == nil)
  }

  /// Every header treated as a secret stays with its origin: the well-known ones and any whose
  /// value came from `${VAR}`; a redirect within the origin keeps them (and URL credentials).
  @Test func everySecretHeaderStaysWithItsOrigin() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    other.route("/echo", .echoHeaders)
    fixture.server.route("/echo", .echoHeaders)
    fixture.server.route("/away", .redirect(status: 302, location: other.url("/echo")))
    fixture.server.route("/near", .redirect(status: 301, location: "/hop"))
    fixture.server.route("/hop", .redirect(status: 307, location: fixture.server.url("/echo")))
    let userURL = fixture.server.baseURL.replacingOccurrences(of: "http://", with: "http://u:p4ss-word@")
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          headers:
            X-Api-Key: "key-1"
            X-Auth-Token: "token-2"
            X-Custom: "${E2E_SECRET}"
            X-Plain: "visible"
          tasks:
            - download: BASE/away
              to: away.json
            - download: \(userURL)/near
              to: near.json
      """)
    let result = try fixture.run(environment: ["E2E_SECRET": "tok-3f9a7c1d"])
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.server.requests(for: "/away").first?.header("x-api-key") == "key-1")
    let away = try #require(other.requests(for: "/echo").first)
    #expect(away.header("x-api-key") == nil)
    #expect(away.header("x-auth-token") == nil)
    #expect(away.header("x-custom") == nil)
    #expect(away.header("x-plain") == "visible")
    let near = try #require(fixture.server.requests(for: "/echo").first)
    #expect(near.header("x-api-key") == "key-1")
    #expect(near.header("x-auth-token") == "token-2")
    #expect(near.header("x-custom") == "tok-3f9a7c1d")
    #expect(near.header("authorization")?.hasPrefix("Basic ") == true)
    #expect(try fixture.tasks()["near.json"]?["outcome"] as? String == "completed")
  }

  /// Redirects that batchdl follows itself keep libcurl's limits: http and https only, 10 hops.
  @Test func selfFollowedRedirectsKeepTheLimits() throws {
    let fixture = try RunFixture()
    fixture.server.route("/loop", .redirect(status: 302, location: "/loop"))
    fixture.server.route("/file", .redirect(status: 302, location: "file:///etc/passwd"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          headers: {X-Api-Key: "key-1"}
          tasks:
            - download: BASE/loop
              to: loop.bin
            - download: BASE/file
              to: file.bin
      """)
    let result = try fixture.run()
    #expect(result.status == 1)
    let tasks = try fixture.tasks()
    #expect((tasks["loop.bin"]?["error"] as? [String: Any])?["code"] as? String == "too-many-redirects")
    #expect((tasks["file.bin"]?["error"] as? [String: Any])?["code"] as? String == "protocol")
    #expect(fixture.server.requests(for: "/loop").count == 11)
    #expect(!fixture.folder.exists("loop.bin") && !fixture.folder.exists("file.bin"))
  }

  /// Handles are reused within a session: nothing of one task's request may reach the next.
  @Test func aReusedHandleCarriesNothingOfTheTaskBefore() throws {
    let fixture = try RunFixture()
    for name in ["first", "second", "third"] { fixture.server.route("/\(name)", .echoHeaders) }
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          network: {max_concurrent: 1}
          tasks:
            - download: BASE/first
              headers: {X-Only-First: "yes"}
            - data: BASE/second
              method: POST
              body: "second body"
            - download: BASE/third
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.server.requests(for: "/first").first?.header("x-only-first") == "yes")
    let second = try #require(fixture.server.requests(for: "/second").first)
    #expect(second.header("x-only-first") == nil)
    #expect(second.method == "POST")
    let third = try #require(fixture.server.requests(for: "/third").first)
    #expect(third.header("x-only-first") == nil)
    #expect(third.method == "GET")
    #expect(third.bodyText.isEmpty)
  }

  @Test func secretsNeverReachReportsEventsOrOutput() throws {
    let fixture = try RunFixture()
    fixture.server.route("/private/data.json", .fixed(.json(200, "{}")))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          headers:
            Authorization: "Bearer ${E2E_SECRET}"
          tasks:
            - data: BASE/private/data.json?token=${E2E_SECRET}
            - download: BASE/private/missing?token=${E2E_SECRET}
      """)
    let result = try fixture.run(["--junit", "junit.xml"], environment: ["E2E_SECRET": "tok-5e6d7c8b"])
    #expect(result.status == 1)
    #expect(fixture.server.requests.first?.header("authorization") == "Bearer tok-5e6d7c8b")
    for name in ["report.json", "events.jsonl", "junit.xml"] {
      let text = try #require(fixture.folder.read(name))
      #expect(!text.contains("tok-5e6d7c8b"), "\(name)")
    }
    #expect(!result.stdout.contains("tok-5e6d7c8b"))
    #expect(!result.stderr.contains("tok-5e6d7c8b"))
    #expect(fixture.folder.read("report.json")?.contains("token=${E2E_SECRET}") == true)
  }

  @Test func aPerHostCapOfTwoIsRespected() throws {
    let fixture = try RunFixture()
    for index in 0..<8 {
      fixture.server.route(
        "/f\(index)",
        .file(
          FileResource(
            body: Array(repeating: UInt8(index), count: 64 << 10),
            trickle: Trickle(chunkBytes: 16 << 10, interval: 0.05))))
    }
    let tasks = (0..<8).map { "      - download: BASE/f\($0)" }.joined(separator: "\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          network: {max_connections_per_host: 2, max_concurrent: 8}
          tasks:
      \(tasks)
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.server.maxActiveRequests == 2)
    #expect(fixture.server.maxOpenConnections <= 2)
    #expect(fixture.server.requests.count == 8)
  }

  @Test func aDataTaskBecomesADownloadByContentType() throws {
    let fixture = try RunFixture()
    let archive = TestData.pseudoRandomBytes(count: 100_000, seed: 11)
    fixture.server.route("/latest", .file(archive, contentType: "application/zip"))
    fixture.server.route("/small", .fixed(.json(200, "{\"ok\": true}")))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          dest: out/
          tasks:
            - data: BASE/latest
              become_download: {content_type: [application/zip]}
            - data: BASE/small
              to: small.json
              become_download: {content_type: [application/zip], larger_than: 1MB}
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let archiveIntact = fixture.holds("out/latest", archive)
    #expect(archiveIntact, "out/latest differs")
    #expect(fixture.folder.read("out/small.json") == "{\"ok\": true}")
    let became = fixture.events().filter { $0["event"] as? String == "became_download" }
    #expect(became.count == 1)
    #expect(became.first?["task"] as? String == "out/latest")
  }

  @Test func eventsFollowTheDelegateCallbacks() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a", .text("a\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        one:
          tasks:
            - download: BASE/a
      """)
    let result = try fixture.run()
    #expect(result.status == 0)
    let names = fixture.events().compactMap { $0["event"] as? String }.filter { $0 != "progress" }
    #expect(names == ["response", "finished", "completed", "session_finished"])
  }

  @Test func reportsAreStableAcrossRuns() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a", .text("a\n"))
    fixture.server.route("/b", .text("b\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        one:
          tasks:
            - download: BASE/b
            - download: BASE/a
      """)
    // Two runs that do the same work (a fresh state folder each time) write the same reports.
    try fixture.run(["--junit", "junit.xml", "--state", "state-1"])
    let first = fixture.folder.read("report.json")
    let junit = fixture.folder.read("junit.xml")
    try fixture.run(["--junit", "junit.xml", "--state", "state-2"])
    #expect(fixture.folder.read("report.json") == first)
    #expect(fixture.folder.read("junit.xml") == junit)
    // A third run finds nothing to do, and says so the same way each time.
    try fixture.run(["--state", "state-2"])
    let unchanged = fixture.folder.read("report.json")
    try fixture.run(["--state", "state-2"])
    #expect(fixture.folder.read("report.json") == unchanged)
    #expect(unchanged?.contains("\"unchanged\":2") == true)
    #expect(first?.contains("\"time") == false)
    let ids = try fixture.tasks().keys.sorted()
    #expect(ids == ["a", "b"])
    #expect(junit?.contains("<testcase classname=\"one\" name=\"a\"/>") == true)
  }

  @Test func aSecondRunOnTheSameStateFolderExits4() throws {
    let fixture = try RunFixture()
    fixture.server.route(
      "/slow",
      .file(FileResource(body: Array(repeating: 1, count: 40_000), trickle: Trickle(chunkBytes: 1000, interval: 0.05))))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/slow
      """)
    let process = try fixture.start()
    defer { process.waitUntilExit() }
    let deadline = Date().addingTimeInterval(10)
    while fixture.server.requests(for: "/slow").isEmpty && Date() < deadline { usleep(20_000) }
    let second = try BinaryRunner.run(["run", "manifest.yaml"], in: fixture.folder.path)
    #expect(second.status == 4)
    #expect(second.stderr.contains("pid \(process.processIdentifier)"), "\(second.stderr)")
    // The holder's command, since when, and that the next run picks up; never another --state,
    // which for a mirror would write the same dest from two runs.
    #expect(second.stderr.contains("batchdl run manifest.yaml"), "\(second.stderr)")
    #expect(second.stderr.contains(", since 20"), "\(second.stderr)")
    #expect(second.stderr.contains("the next timer or cron run will pick up"), "\(second.stderr)")
    #expect(!second.stderr.contains("--state"), "\(second.stderr)")
  }

  @Test func quietRunsPrintOnlyFailures() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a", .text("a\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/a
      """)
    let result = try BinaryRunner.run(["run", "manifest.yaml", "--quiet"], in: fixture.folder.path)
    #expect(result.status == 0)
    #expect(result.stdout.isEmpty)
    #expect(result.stderr.isEmpty)
  }
}
