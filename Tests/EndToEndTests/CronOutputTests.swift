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

  /// A run that stops before running (exit 2 or 4) writes a report that says why, and `report diff`
  /// calls it a regression: a CI step diffed yesterday's report and passed.
  @Test func aRunThatDoesNotRunWritesAReportThatDiffFails() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
      """)
    #expect(try fixture.run().status == 0)
    try FileManager.default.moveItem(
      atPath: fixture.folder.path + "/report.json", toPath: fixture.folder.path + "/old.json")
    // Another run holds the lock: exit 4.
    let lock = fixture.folder.path + "/.batchdl/locks/\(try #require(fixture.manifestKey())).lock"
    let held = open(lock, O_RDWR | O_CREAT, 0o600)
    #expect(flock(held, LOCK_EX | LOCK_NB) == 0)
    let locked = try fixture.run()
    close(held)
    #expect(locked.status == 4, "\(locked.stderr)")
    let report = try fixture.report()
    let notRun = try #require(report["not_run"] as? [String: Any], "\(report)")
    #expect(notRun["exit_status"] as? Int == 4)
    #expect((report["tasks"] as? [Any])?.isEmpty == true)
    let diff = try BinaryRunner.run(["report", "diff", "old.json", "report.json"], in: fixture.folder.path)
    #expect(diff.status == 1, "\(diff.stdout)")
    #expect(diff.stdout.contains("did not run (exit 4)"), "\(diff.stdout)")
    // An invalid manifest: exit 2, and the same.
    fixture.folder.write("manifest.yaml", "version: 1\nsessions: {s: {tasks: [{download: 'not a url'}]}}\n")
    let invalid = try fixture.run()
    #expect(invalid.status == 2)
    #expect((try fixture.report()["not_run"] as? [String: Any])?["exit_status"] as? Int == 2)
    let markdown = try BinaryRunner.run(
      ["report", "diff", "old.json", "report.json", "--markdown"], in: fixture.folder.path)
    #expect(markdown.status == 1 && markdown.stdout.contains("did not run"), "\(markdown.stdout)")
  }

  /// A nightly diff of a living mirror: files updated upstream are changes, not regressions;
  /// completed → unchanged is no change at all; most tasks missing is said loudly.
  @Test func aDiffOfALivingMirrorFailsOnlyOnFailures() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
            - download: BASE/b.bin
              to: b.bin
      """)
    #expect(try fixture.run().status == 0)
    try FileManager.default.moveItem(
      atPath: fixture.folder.path + "/report.json", toPath: fixture.folder.path + "/first.json")
    #expect(try fixture.run().status == 0)
    let quiet = try BinaryRunner.run(["report", "diff", "first.json", "report.json"], in: fixture.folder.path)
    #expect(quiet.status == 0)
    #expect(quiet.stdout.contains("no changes"), "completed → unchanged is not a change: \(quiet.stdout)")
    fixture.server.route("/a.bin", .file(.version(3, length: 3000)))
    #expect(try fixture.run(["--refresh"]).status == 0)
    let updated = try BinaryRunner.run(["report", "diff", "first.json", "report.json"], in: fixture.folder.path)
    #expect(updated.status == 0, "\(updated.stdout)")
    #expect(updated.stdout.contains("~ a.bin: sha256"), "\(updated.stdout)")
    // The same manifest with another dest: every id changed.
    let moved = fixture.folder.read("manifest.yaml")?.replacingOccurrences(
      of: "retry: {attempts: 1}", with: "retry: {attempts: 1}\n    dest: elsewhere/")
    fixture.folder.write("manifest.yaml", moved ?? "")
    #expect(try fixture.run().status == 0)
    let elsewhere = try BinaryRunner.run(["report", "diff", "first.json", "report.json"], in: fixture.folder.path)
    #expect(elsewhere.stdout.contains("warning: 2 of the 2 tasks of the old report are missing"), "\(elsewhere.stdout)")
    let strict = try BinaryRunner.run(
      ["report", "diff", "first.json", "report.json", "--fail-on", "default,removed"], in: fixture.folder.path)
    #expect(strict.status == 1)
  }

  /// `summary.requests` is what the run sent, the same in the report and in `session_finished`: a
  /// re-run that sent nothing said 277 in one and 0 in the other.
  @Test func requestsAreWhatTheRunSentInTheReportAndTheEvents() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
            - download: BASE/b.bin
              to: b.bin
      """)
    func counts() throws -> (report: Int?, event: Int?) {
      let report = try fixture.summary()["requests"] as? Int
      let finished = fixture.events().last { $0["event"] as? String == "session_finished" }
      return (report, (finished?["summary"] as? [String: Any])?["requests"] as? Int)
    }
    #expect(try fixture.run().status == 0)
    let first = try counts()
    #expect(first.report == 2 && first.event == 2, "\(first)")
    #expect(try fixture.run().status == 0)
    let again = try counts()
    #expect(again.report == 0 && again.event == 0, "\(again)")
  }

  /// A third column on a list line (`URL DEST sha256:…`) became part of the file name; now the
  /// size and digest columns are checked like a task's.
  @Test func aListLinesDigestAndSizeAreChecked() throws {
    let fixture = try RunFixture()
    let one = FileResource.versionBytes(1, length: 2000)
    fixture.server.route("/a.bin", .file(.version(1, length: 2000)))
    fixture.server.route("/b.bin", .file(.version(2, length: 2000)))
    fixture.folder.write(
      "urls.txt",
      """
      \(fixture.server.url("/a.bin"))  "a copy.bin"  sha256:\(SHA256Digest.hex(one))  size:2000
      \(fixture.server.url("/b.bin"))  b.bin  sha256:\(SHA256Digest.hex(FileResource.versionBytes(3, length: 2000)))

      """)
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          tasks:
            - list: urls.txt
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(fixture.holds("a copy.bin", one))
    #expect(!fixture.folder.exists("b.bin"))
    let tasks = try fixture.tasks()
    #expect((tasks["b.bin"]?["error"] as? [String: Any])?["code"] as? String == "checksum-mismatch", "\(tasks)")
  }

  /// Setup errors that stop a run before any task exit with a code that says nothing ran (5 for a
  /// state folder that cannot be used, 2 for an output path that cannot be written), not 1, the code
  /// of a task that failed; the report says why.
  @Test func aRunThatCannotStartSaysNothingRan() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
      """)
    fixture.folder.write("not-a-folder", "x")
    let state = try fixture.run(["--state", "not-a-folder/state"])
    #expect(state.status == 5, "\(state.stderr)")
    #expect(state.stderr.contains("nothing was sent"), "\(state.stderr)")
    #expect((try fixture.report()["not_run"] as? [String: Any])?["exit_status"] as? Int == 5)
    // plan, status and cache read the same folder, and say the same (they said pending, exit 0).
    for command in [["plan"], ["status"], ["cache", "stats"]] {
      let read = try BinaryRunner.run(
        command + ["manifest.yaml", "--state", "not-a-folder/state"], in: fixture.folder.path)
      #expect(read.status == 5, "\(command): \(read.output)")
    }
    let events = try BinaryRunner.run(
      ["run", "manifest.yaml", "--report", "report.json", "--events", "not-a-folder/events.jsonl"],
      in: fixture.folder.path)
    #expect(events.status == 2, "\(events.stderr)")
    #expect((try fixture.report()["not_run"] as? [String: Any])?["exit_status"] as? Int == 2)
    #expect(fixture.server.requests(for: "/a.bin").isEmpty)
  }

  /// Two unrelated manifests in one folder share the default state folder: the second cron job got
  /// exit 4. Each manifest has its own lock (and cookie jars, caches, session reports); the same
  /// manifest run twice still gets 4.
  @Test func twoManifestsInOneFolderRunAtOnce() throws {
    let fixture = try RunFixture()
    fixture.server.route("/slow.bin", .file(.version(1, length: 1_000_000, rateLimit: 300_000)))
    fixture.server.route("/b.bin", .file(.version(2, length: 2000)))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/slow.bin
              to: slow.bin
      """)
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/b.bin
              to: b.bin
      """, name: "other.yaml")
    let first = try fixture.start()
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline && fixture.checkpointBytes() == 0 && !fixture.folder.exists("slow.bin") {
      usleep(20_000)
    }
    let other = try BinaryRunner.run(["run", "other.yaml", "--progress", "never"], in: fixture.folder.path)
    let again = try BinaryRunner.run(["run", "manifest.yaml", "--progress", "never"], in: fixture.folder.path)
    first.waitUntilExit()
    #expect(other.status == 0, "\(other.stderr)")
    #expect(fixture.bytes("b.bin") == FileResource.versionBytes(2, length: 2000))
    #expect(again.status == 4, "\(again.stderr)")
    #expect(first.terminationStatus == 0)
    let locks = try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path + "/.batchdl/locks")
    #expect(locks.count == 2, "\(locks)")
  }

  /// Ids were absolute paths when `dest` was absolute: the same manifest run with another `dest`
  /// (another machine, a CI workspace) diffed as every task removed and added, exit 0.
  @Test func idsAreTheSameWhateverTheAbsoluteDest() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: 2000)))
    fixture.server.route("/b.bin", .file(.version(2, length: 2000)))
    func manifest(dest: String) {
      fixture.manifest(
        """
        version: 1
        sessions:
          s:
            dest: \(dest)
            tasks:
              - download: BASE/a.bin
                to: sub/a.bin
              - download: BASE/b.bin
                after: [sub/a.bin]
        """)
    }
    manifest(dest: fixture.folder.path + "/one")
    #expect(try fixture.run().status == 0)
    #expect(try fixture.tasks().keys.sorted() == ["b.bin", "sub/a.bin"])
    #expect(fixture.holds("one/sub/a.bin", FileResource.versionBytes(1, length: 2000)))
    try FileManager.default.moveItem(
      atPath: fixture.folder.path + "/report.json", toPath: fixture.folder.path + "/one.json")
    manifest(dest: fixture.folder.path + "/two")
    #expect(try fixture.run().status == 0)
    #expect(try fixture.tasks().keys.sorted() == ["b.bin", "sub/a.bin"])
    let diff = try BinaryRunner.run(["report", "diff", "one.json", "report.json"], in: fixture.folder.path)
    #expect(diff.status == 0 && diff.stdout.contains("no changes"), "\(diff.stdout)")
  }

  /// A nightly mirror asked upstream whether an unpinned file changed only with --refresh, which
  /// the examples did not give: `refresh:` in the manifest says it.
  @Test func refreshInTheManifestAsksAgainOnceTheCheckIsOld() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
      """, session: "    refresh: 2s")
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests(for: "/a.bin").count == 1)
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests(for: "/a.bin").count == 1, "checked 0 s ago: no request")
    usleep(2_100_000)
    #expect(try fixture.run().status == 0)
    let asked = fixture.server.requests(for: "/a.bin")
    #expect(asked.count == 2)
    #expect(asked.last?.header("if-none-match") != nil, "a conditional request")
    #expect(try fixture.tasks()["a.bin"]?["source"] as? String == "not-modified")
    // The 304 counts as a check: the next run asks nothing.
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests(for: "/a.bin").count == 2)
    // refresh: always asks every run; never (the default) never does.
    fixture.manifest(
      (fixture.folder.read("manifest.yaml") ?? "").replacingOccurrences(of: "refresh: 2s", with: "refresh: always"))
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests(for: "/a.bin").count == 3)
    fixture.manifest(
      (fixture.folder.read("manifest.yaml") ?? "").replacingOccurrences(of: "refresh: always", with: "refresh: never"))
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests(for: "/a.bin").count == 3)
  }

  /// `--report` is written as a shell's `>` would: through a link (which stays), into what is not
  /// a regular file (a FIFO, `/dev/stdout`); as root, a device node was replaced by a file.
  @Test func aReportGoesThroughLinksAndIntoFIFOsAndStandardOutput() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
      """)
    let folder = fixture.folder.path
    #expect(symlink("target.json", folder + "/link.json") == 0)
    #expect(try BinaryRunner.run(["run", "manifest.yaml", "--report", "link.json"], in: folder).status == 0)
    var info = stat()
    #expect(lstat(folder + "/link.json", &info) == 0 && info.st_mode & S_IFMT == S_IFLNK, "the link stays")
    #expect(fixture.folder.read("target.json")?.contains("batchdl-report/1") == true)

    #expect(mkfifo(folder + "/out.fifo", 0o600) == 0)
    let reader = Process()
    reader.executableURL = URL(fileURLWithPath: "/bin/cat")
    reader.arguments = [folder + "/out.fifo"]
    let pipe = Pipe()
    reader.standardOutput = pipe
    try reader.run()
    #expect(try BinaryRunner.run(["run", "manifest.yaml", "--report", "out.fifo"], in: folder).status == 0)
    let read = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    reader.waitUntilExit()
    #expect(read.contains("batchdl-report/1"), "\(read)")
    #expect(stat(folder + "/out.fifo", &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the FIFO stays")

    let stdout = try BinaryRunner.run(
      ["run", "manifest.yaml", "--report", "/dev/stdout", "--quiet"], in: folder)
    #expect(stdout.status == 0, "\(stdout.stderr)")
    #expect(stdout.stdout.contains("batchdl-report/1"), "\(stdout.stdout)")
    #expect(lstat("/dev/stdout", &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
  }

  /// A warning of a committed manifest mailed every night a quiet run succeeded.
  @Test func aQuietRunThatSucceedsPrintsNothingEvenWithAManifestWarning() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
              mirrors: [BASE/a.bin]
      """)
    let quiet = try fixture.run(["--quiet"])
    #expect(quiet.status == 0)
    #expect(quiet.stderr.isEmpty && quiet.stdout.isEmpty, "\(quiet.stdout)\(quiet.stderr)")
    let loud = try fixture.run()
    #expect(loud.stderr.contains("warning: mirror"), "\(loud.stderr)")
  }

  /// An output that cannot be written is a usage error before anything is sent: a --junit path
  /// that could not be written was found only once every task had run, and said "the report".
  @Test func anOutputThatCannotBeWrittenIsAUsageErrorBeforeTheRun() throws {
    let fixture = try Self.fixture(
      """
            - download: BASE/a.bin
              to: a.bin
      """)
    fixture.folder.write("afile", "x")
    let junit = try fixture.run(["--junit", "afile/junit.xml"])
    #expect(junit.status == 2, "\(junit.stderr)")
    #expect(junit.stderr.contains("cannot write --junit afile/junit.xml"), "\(junit.stderr)")
    #expect(fixture.server.requests(for: "/a.bin").isEmpty)
    #expect((try fixture.report()["not_run"] as? [String: Any])?["exit_status"] as? Int == 2)
    // A report that cannot be written is said, not left stale in silence.
    let lost = try BinaryRunner.run(["run", "manifest.yaml", "--report", "afile/report.json"], in: fixture.folder.path)
    #expect(lost.status == 2)
    #expect(lost.stderr.contains("cannot write --report afile/report.json"), "\(lost.stderr)")
    // Nor may a report overwrite the manifest or a task's file.
    let manifest = try fixture.run(["--report", "manifest.yaml"])
    #expect(manifest.status == 2 && manifest.stderr.contains("it is the manifest itself"), "\(manifest.stderr)")
    #expect(fixture.folder.read("manifest.yaml")?.hasPrefix("version: 1") == true)
    let destination = try fixture.run(["--report", "a.bin"])
    #expect(destination.status == 2 && destination.stderr.contains("it is the destination of task a.bin"))
    #expect(fixture.server.requests(for: "/a.bin").isEmpty)
  }

  /// `dest: /srv/m/x` and `dest: x/` in a manifest in /srv/m name one folder: two sessions wrote one
  /// file, each with exit 0, and every run fetched both again.
  @Test func anAbsoluteAndARelativeDestOfOneFolderAreSeenToClash() throws {
    let fixture = try RunFixture()
    fixture.server.route("/one", .text("one\n"))
    fixture.server.route("/two", .text("two\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        a:
          dest: \(fixture.folder.path)/x
          tasks: [{download: BASE/one, to: a.txt}]
        b:
          dest: x/
          tasks: [{download: BASE/two, to: a.txt}]
      """)
    let outcome = try BinaryRunner.run(["validate", "manifest.yaml"], in: fixture.folder.path)
    #expect(outcome.status == 2, "\(outcome.output)")
    #expect(outcome.output.contains("two different requests write 'x/a.txt'"), "\(outcome.output)")
  }

  /// A task under an absolute dest and one under a relative dest had one id: every run sent one
  /// of them again, and report diff showed changes that were not.
  @Test func idsStayUniqueWhenAnAbsoluteAndARelativeDestMeet() throws {
    let fixture = try RunFixture()
    fixture.server.route("/one", .text("one\n"))
    fixture.server.route("/two", .text("two\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        a:
          dest: /tmp/batchdl-ids-\(getpid())/d3
          tasks: [{download: BASE/one, to: x/a.txt}]
        b:
          dest: x/
          tasks: [{download: BASE/two, to: a.txt}]
      """)
    defer { try? FileManager.default.removeItem(atPath: "/tmp/batchdl-ids-\(getpid())") }
    let first = try fixture.run()
    #expect(first.status == 0, "\(first.stderr)")
    let ids = try fixture.tasks().keys.sorted()
    #expect(ids.count == 2 && Set(ids).count == 2, "\(ids)")
    fixture.server.clearLog()
    let second = try fixture.run()
    #expect(second.status == 0, "\(second.stderr)")
    #expect(fixture.server.requests(for: "/one").isEmpty && fixture.server.requests(for: "/two").isEmpty)
  }
}
