import Foundation
import TestServer
import TestSupport
import Testing

/// What cron and CI are told: run the built binary as a crontab does (no terminal, stdout and
/// stderr apart, often `>/dev/null`), and check the exit status and each stream.
@Suite(.serialized) struct CronOutputTests {
  static func fixture(_ tasks: String, session extra: String = "") throws -> RunFixture {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: 2000)))
    fixture.server.route("/b.bin", .file(.version(2, length: 2000)))
    fixture.server.route("/gone.bin", .status(404))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
      \(extra)
          tasks:
      \(tasks)
      """)
    return fixture
  }

  @Test func aFailedHookFailsTheRunAndIsSaidOnStderrEvenWhenQuiet() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
      """, session: "    on_finished: 'echo hook ran; exit 7'")
    let outcome = try fixture.run(["--quiet"])
    #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)")
    #expect(outcome.stderr.contains("on_finished of session s exited with status 7"), "\(outcome.stderr)")
    #expect(!outcome.stdout.contains("on_finished"))
    let hooks = try #require(try fixture.report()["hooks"] as? [[String: Any]])
    #expect(hooks.count == 1)
    #expect(hooks.first?["session"] as? String == "s" && hooks.first?["exit_status"] as? Int == 7)
  }

  @Test func aHookThatSucceedsIsRecordedAndTheRunSucceeds() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
      """, session: "    on_finished: 'true'")
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(outcome.stderr.isEmpty, "\(outcome.stderr)")
    let hooks = try #require(try fixture.report()["hooks"] as? [[String: Any]])
    #expect(hooks.first?["exit_status"] as? Int == 0)
  }

  @Test func failuresGoToStderrAndProgressToStdout() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
            - download: BASE/gone.bin
              to: gone.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1)
    #expect(outcome.stderr.contains("gone.bin") && outcome.stderr.contains("http-404"), "\(outcome.stderr)")
    #expect(!outcome.stdout.contains("http-404"), "\(outcome.stdout)")
    #expect(outcome.stdout.contains("a.bin"), "what changed is on stdout: \(outcome.stdout)")
    #expect(outcome.stdout.contains("done: 1 completed"), "\(outcome.stdout)")
    // With stdout thrown away, as crontabs often do, the failure is still in the mail.
    let quiet = try fixture.run(["--quiet"])
    #expect(quiet.stderr.contains("http-404"))
  }

  @Test func offATerminalUnchangedFilesPrintNoLineUnlessVerbose() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
            - download: BASE/b.bin
              to: b.bin
      """)
    #expect(try fixture.run().status == 0)
    let again = try fixture.run()
    #expect(again.status == 0)
    let lines = again.stdout.split(separator: "\n")
    #expect(lines.count == 1 && lines.first?.hasPrefix("done: 0 completed, 2 unchanged") == true, "\(again.stdout)")
    #expect(again.stderr.isEmpty)
    let verbose = try fixture.run(["--verbose"])
    #expect(verbose.stdout.split(separator: "\n").filter { $0.hasPrefix("unchanged") }.count == 2, "\(verbose.stdout)")
  }

  @Test func sigtermIsNotToldToPressCtrlC() throws {
    let fixture = try RunFixture()
    fixture.server.route("/slow.bin", .file(.version(1, length: 2_000_000, rateLimit: 200_000)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/slow.bin
              to: slow.bin
      """)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: BinaryRunner.executable)
    process.arguments = ["run", "manifest.yaml", "--progress", "never"]
    process.currentDirectoryURL = URL(fileURLWithPath: fixture.folder.path)
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline && fixture.checkpointBytes() < 100_000 { usleep(20_000) }
    kill(process.processIdentifier, SIGTERM)
    process.waitUntilExit()
    let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(process.terminationStatus == 3)
    #expect(text.contains("stopping after checkpoints (SIGTERM)"), "\(text)")
    #expect(!text.contains("Ctrl-C"), "\(text)")
  }
}
