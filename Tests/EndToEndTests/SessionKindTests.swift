import BatchDL
import Foundation
import TestServer
import TestSupport
import Testing

/// What each session kind keeps, and background sessions that outlive `run`.
@Suite struct SessionKindTests {
  @Test func aBackgroundDownloadOutlivesRunAndWaitWaitsForIt() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 400_000, seed: 41)
    fixture.server.route(
      "/iso", .file(FileResource(body: body, etag: .strong("i1"), trickle: Trickle(chunkBytes: 20_000, interval: 0.1))))
    fixture.server.route("/fg", .text("foreground\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        fg:
          tasks:
            - download: BASE/fg
        iso:
          kind: background
          identifier: org.example.iso
          on_finished: 'printf "%s %s" "$BATCHDL_SESSION" "$BATCHDL_REPORT" > hook.txt'
          tasks:
            - download: BASE/iso
              to: big.iso
      """)
    let started = Date()
    let run = try fixture.run()
    let returnedAfter = Date().timeIntervalSince(started)
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    #expect(run.stdout.contains("background session iso: worker started (pid "))
    #expect(fixture.folder.read("fg") == "foreground\n")
    // The download takes about two seconds; run came back while it went on.
    #expect(!fixture.folder.exists("big.iso"), "run returned after \(returnedAfter) s")

    // A second run during the transfer reattaches instead of starting another worker.
    let again = try fixture.run()
    #expect(again.stdout.contains("is running; it takes the new tasks next"), "\(again.stdout)")

    let status = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path)
    #expect(status.stdout.contains("worker org.example.iso: running (pid "))

    let wait = try BinaryRunner.run(["wait", "manifest.yaml", "--timeout", "30"], in: fixture.folder.path)
    #expect(wait.status == 0, "\(wait.stderr)")
    let intact = fixture.holds("big.iso", body)
    #expect(intact)
    #expect(fixture.server.requests(for: "/iso").filter { $0.header("range") == nil }.count == 1)
    let hook = try #require(fixture.folder.read("hook.txt"))
    #expect(hook.hasPrefix("iso /"))
    let reportPath = String(hook.dropFirst(4))
    #expect(
      FileManager.default.contents(atPath: reportPath).map { String(decoding: $0, as: UTF8.self) }?
        .contains("\"id\": ") != nil)
    let after = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path)
    #expect(after.stdout.contains("worker org.example.iso: finished (exit 0)"))
    #expect(fixture.folder.exists(".batchdl/workers/org.example.iso.log"))
  }

  @Test func foregroundRunsBackgroundSessionsInline() throws {
    let fixture = try RunFixture()
    fixture.server.route("/iso", .text("iso\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        iso:
          kind: background
          identifier: org.example.inline
          tasks:
            - download: BASE/iso
      """)
    let run = try fixture.run(["--foreground"])
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    #expect(fixture.folder.read("iso") == "iso\n")
    #expect(!run.stdout.contains("worker"))
  }

  @Test func anEphemeralSessionLeavesNothingButItsOutputs() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a", .file(Array(repeating: 5, count: 3000), etag: .strong("e")))
    fixture.manifest(
      """
      version: 1
      sessions:
        scratch:
          kind: ephemeral
          tasks:
            - download: BASE/a
      """)
    #expect(try fixture.run().status == 0)
    #expect(fixture.bytes("a")?.count == 3000)
    let state = try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path + "/.batchdl")
    #expect(state == ["locks"])
    // Nothing is remembered: the next run sends the request again.
    fixture.server.clearLog()
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests.count == 1)
  }

  @Test func cookiesPersistPerSessionButNotForEphemeralOnes() throws {
    let fixture = try RunFixture()
    fixture.server.route(
      "/login", .fixed(Response(status: 200, headers: ["Set-Cookie": "sid=abc123; Path=/"], body: Array("ok".utf8))))
    fixture.server.route("/whoami", .echoHeaders)
    fixture.server.route("/later", .echoHeaders)
    fixture.manifest(
      """
      version: 1
      sessions:
        keep:
          tasks:
            - download: BASE/login
            - download: BASE/whoami
              after: login
        scratch:
          kind: ephemeral
          tasks:
            - download: BASE/login?e=1
              to: login-e
      """)
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests(for: "/whoami").first?.header("cookie") == "sid=abc123")
    let cookies = ".batchdl/cookies/\(fixture.manifestKey() ?? "")/"
    let jar = fixture.folder.path + "/" + cookies + "keep.txt"
    #expect(fixture.folder.read(cookies + "keep.txt")?.contains("abc123") == true)
    var info = stat()
    #expect(stat(jar, &info) == 0 && info.st_mode & 0o077 == 0)
    #expect(!fixture.folder.exists(cookies + "scratch.txt"))
    // The next run (another process) sends the cookie from the jar.
    fixture.manifest(
      """
      version: 1
      sessions:
        keep:
          tasks:
            - download: BASE/later
      """)
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests(for: "/later").first?.header("cookie") == "sid=abc123")
  }

  @Test func waitsForConnectivityRidesOutAServerThatIsNotUpYet() throws {
    // A port with nothing listening yet: connecting fails until the server comes up.
    let probe = try TestHTTPServer()
    let port = probe.port
    probe.stop()
    let folder = TemporaryDirectory()
    folder.write(
      "manifest.yaml",
      """
      version: 1
      sessions:
        patient:
          timeouts: {resource: 20s}
          retry: {attempts: 1, backoff: 200ms, max_backoff: 500ms}
          network: {waits_for_connectivity: true}
          tasks:
            - download: http://127.0.0.1:\(port)/late.txt
        impatient:
          retry: {attempts: 1}
          tasks:
            - download: http://127.0.0.1:\(port)/late.txt?impatient
              to: impatient.txt
      """)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: BinaryRunner.executable)
    process.arguments = [
      "run", "manifest.yaml", "--progress", "never", "--report", "report.json", "--events", "events.jsonl",
    ]
    process.currentDirectoryURL = URL(fileURLWithPath: folder.path)
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    // The server comes up once the impatient task has ended and the patient one has found nothing
    // listening (its events say so), however long a loaded machine takes to get there.
    let refusedBoth = Poll.until {
      let events = Poll.jsonLines(folder.path + "/events.jsonl")
      return events.contains { $0["event"] as? String == "completed" && $0["session"] as? String == "impatient" }
        && events.contains { $0["event"] as? String == "retrying" && $0["task"] as? String == "late.txt" }
    }
    #expect(refusedBoth, "\(folder.read("events.jsonl") ?? "no events")")
    let server = try TestHTTPServer(port: port)
    defer { server.stop() }
    server.route("/late.txt", .text("finally up\n"))
    process.waitUntilExit()
    #expect(process.terminationStatus == 1)
    #expect(folder.read("late.txt") == "finally up\n")
    #expect(!folder.exists("impatient.txt"))
    #expect(folder.read("report.json")?.contains("\"code\":\"connect\"") == true)
  }
}
