import Foundation
import TestServer
import TestSupport
import Testing

/// SIGINT and SIGTERM from the first moments of `batchdl run`: while the manifest is read, its
/// Metalink document fetched and the run planned, a signal stops the run in order (exit 3, the
/// report written, nothing placed), as it does during the transfers; it never kills the process.
@Suite(.serialized) struct EarlySignalTests {
  static let body = FileResource.versionBytes(1, length: 200_000)

  static func document(_ fixture: RunFixture) -> String {
    """
    <?xml version="1.0"?>
    <metalink xmlns="urn:ietf:params:xml:ns:metalink">
      <file name="f.bin"><url priority="1">\(fixture.server.url("/f.bin"))</url></file>
    </metalink>
    """
  }

  static func fixture(document: FileResource? = nil) throws -> RunFixture {
    let fixture = try RunFixture()
    fixture.server.route(
      "/doc.meta4",
      .file(
        document
          ?? FileResource(text: Self.document(fixture), contentType: "application/metalink4+xml", etag: .strong("d"))))
    fixture.server.route("/f.bin", trickling(Self.body, etag: "f1"))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: BASE/doc.meta4
      """)
    return fixture
  }

  /// A started `batchdl run`, as a shell or systemd starts it: every signal unblocked and at its
  /// default (a test thread may block some, and a child inherits its mask).
  struct Started {
    let pid: pid_t

    init(_ fixture: RunFixture) throws {
      pid = try CleanSpawn.start(
        BinaryRunner.executable,
        [
          "run", fixture.folder.path + "/manifest.yaml", "--report", fixture.folder.path + "/report.json",
          "--progress", "never", "--quiet",
        ])
    }

    /// How it ended: `exit N` or `signal N`.
    func wait() -> String {
      let status = CleanSpawn.wait(pid)
      let signal = status & 0x7f
      return signal == 0 ? "exit \((status >> 8) & 0xff)" : "signal \(signal)"
    }
  }

  /// Starts a run and waits (at most 10 s) until the server has had request number `count` for the
  /// document: the run is past its start and reading its manifest.
  static func startReading(_ fixture: RunFixture, count: Int) throws -> Started {
    let started = try Started(fixture)
    let deadline = Date().addingTimeInterval(10)
    while fixture.server.requests(for: "/doc.meta4").count < count && Date() < deadline { usleep(500) }
    return started
  }

  /// The document takes a second to come: SIGTERM while the run waits for it.
  @Test func aSignalWhileTheManifestIsReadExits3WithTheReport() throws {
    var slow = FileResource(text: "", contentType: "application/metalink4+xml", etag: .strong("d"))
    slow.stallAfterHeaders = 1
    let fixture = try Self.fixture(document: slow)
    slow.body = Array(Self.document(fixture).utf8)
    fixture.server.route("/doc.meta4", .file(slow))
    let started = try Self.startReading(fixture, count: 1)
    kill(started.pid, SIGTERM)
    #expect(started.wait() == "exit 3")
    let task = try #require(try fixture.tasks()["f.bin"], "the report lists the planned task")
    #expect(task["outcome"] as? String == "cancelled", "\(task)")
    #expect(!fixture.folder.exists("f.bin"))
  }

  /// SIGTERM 0-20 ms after the run asked for its document: during the fetch, the planning, the
  /// opening of the state and the start of the transfers. Every run exits 3 (0 if it was done),
  /// with its report.
  @Test func aSignalInTheFirstMillisecondsNeverKillsTheRun() throws {
    let fixture = try Self.fixture()
    var ends: [String] = []
    for attempt in 1...20 {
      unlink(fixture.folder.path + "/report.json")
      let started = try Self.startReading(fixture, count: attempt)
      usleep(UInt32.random(in: 0...20_000))
      kill(started.pid, SIGTERM)
      let end = started.wait()
      ends.append(end)
      if end == "exit 3" {
        #expect(try fixture.tasks()["f.bin"] != nil, "attempt \(attempt): an interrupted run writes its report")
      }
    }
    #expect(ends.allSatisfy { $0 == "exit 3" || $0 == "exit 0" }, "\(ends)")
  }

  /// SIGINT as the binary starts, before its manifest is read (the few milliseconds of the dynamic
  /// loader aside, where no program can take a signal): exit 3, never death by the signal.
  @Test func aSignalAsTheRunStartsExits3() throws {
    let fixture = try Self.fixture()
    var ends: [String] = []
    for _ in 1...10 {
      let started = try Started(fixture)
      // Past the loader: the process has blocked or caught SIGINT (batchdl's first act).
      let deadline = Date().addingTimeInterval(5)
      while !Self.takesCharge(of: SIGINT, started.pid) && Date() < deadline { usleep(200) }
      kill(started.pid, SIGINT)
      ends.append(started.wait())
    }
    #expect(ends.allSatisfy { $0 == "exit 3" || $0 == "exit 0" }, "\(ends)")
  }

  /// Whether process `pid` blocks or catches `signal` (its /proc status).
  static func takesCharge(of signal: Int32, _ pid: pid_t) -> Bool {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
    let bit = UInt64(1) << UInt64(signal - 1)
    return status.split(separator: "\n").contains { line in
      guard line.hasPrefix("SigBlk:") || line.hasPrefix("SigCgt:") else { return false }
      let mask = UInt64(line.split(separator: "\t").last ?? "", radix: 16) ?? 0
      return mask & bit != 0
    }
  }
}
