import BatchDLSupport
import Foundation
import TestServer
import TestSupport
import Testing

/// End-to-end tests of the defects found where two features meet: an absolute `dest` under a long
/// list, a file time beyond 2262, ids that move with `dest`, usage errors and stale reports. Each
/// runs the built binary and fails on a build without its fix.
@Suite(.serialized) struct MirrorTruthTests {
  /// A folder outside the manifest's, so that a `dest` in it stays absolute in the plan.
  static func outsideFolder() -> TemporaryDirectory { TemporaryDirectory() }

  /// `validate`, `plan --offline`, `status` and `cache stats` of the fixture's manifest: none dies by a signal.
  static func readOnlyCommands(_ fixture: RunFixture) throws -> [(String, BinaryRunner.Outcome)] {
    try [["validate"], ["plan", "--offline"], ["status"], ["cache", "stats"]].map { command in
      (command.joined(separator: " "), try BinaryRunner.run(command + ["manifest.yaml"], in: fixture.folder.path))
    }
  }

  // MARK: - Absolute dest

  /// A `list:` of 10 to 2,000 lines and 150 plain tasks under `dest: /abs/...`: no command traps
  /// (an id table held the index of a task not yet added).
  @Test(arguments: [10, 150, 2_000]) func aLongListUnderAnAbsoluteDestPlansAndRuns(lines: Int) throws {
    let fixture = try RunFixture()
    let outside = Self.outsideFolder()
    for index in 0..<lines { fixture.server.route("/f/\(index).bin", .file(.version(index, length: 64))) }
    let list = (0..<lines).map { fixture.server.url("/f/\($0).bin") }
    fixture.folder.write("list.txt", list.joined(separator: "\n") + "\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: \(outside.path)/srv/mirror
          tasks:
            - list: list.txt
      """)
    for (command, outcome) in try Self.readOnlyCommands(fixture) {
      #expect(
        [0, 1].contains(outcome.status) && !outcome.stderr.contains("Fatal error"), "\(command): \(outcome.stderr)")
    }
    let outcome = try fixture.run(timeout: 120)
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(
      FileManager.default.contents(atPath: outside.path + "/srv/mirror/7.bin").map { [UInt8]($0) }
        == FileResource.versionBytes(7, length: 64))
    let tasks = try fixture.tasks()
    #expect(tasks.count == lines)
    // Ids are relative to the absolute `dest`: the same on every machine.
    #expect(tasks["7.bin"] != nil)
    #expect(!tasks.keys.contains { $0.hasPrefix("/") }, "\(tasks.keys.sorted().prefix(5))")
  }

  /// 150 `download:` tasks and an index listing 300 files under an absolute `dest`.
  @Test func manyTasksAndALongListingUnderAnAbsoluteDest() throws {
    let fixture = try RunFixture()
    let outside = Self.outsideFolder()
    let names = (0..<300).map { "p\($0).bin" }
    fixture.server.route("/pub/", HostileReviewTests.listing(names))
    for (index, name) in names.enumerated() { fixture.server.route("/pub/" + name, .file(.version(index, length: 16))) }
    for index in 0..<150 { fixture.server.route("/d/\(index)", .file(.version(1000 + index, length: 16))) }
    let downloads = (0..<150).map { "      - download: BASE/d/\($0)\n        to: d/\($0).bin" }
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: \(outside.path)/m
          tasks:
      \(downloads.joined(separator: "\n"))
            - index: BASE/pub/
              to: pub/
      """)
    for (command, outcome) in try Self.readOnlyCommands(fixture) {
      #expect(!outcome.stderr.contains("Fatal error") && outcome.status < 64, "\(command): \(outcome.stderr)")
    }
    let outcome = try fixture.run(timeout: 180)
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(try fixture.tasks().count == 450)
    #expect(FileManager.default.fileExists(atPath: outside.path + "/m/pub/p299.bin"))
    let again = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path)
    #expect(again.status == 0 && !again.stderr.contains("Fatal error"), "\(again.stderr)")
  }

  /// Two sessions with absolute `dest`s both write `f.bin`: each id is the same on every machine
  /// (`SESSION:f.bin`), never the machine's path.
  @Test func twoAbsoluteDestsWithOneFileNameHavePortableIDs() throws {
    let fixture = try RunFixture()
    let outside = Self.outsideFolder()
    fixture.server.route("/a/f.bin", .file(.version(1, length: 32)))
    fixture.server.route("/b/f.bin", .file(.version(2, length: 32)))
    fixture.manifest(
      """
      version: 1
      sessions:
        one:
          dest: \(outside.path)/one
          tasks:
            - download: BASE/a/f.bin
        two:
          dest: \(outside.path)/two
          tasks:
            - download: BASE/b/f.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    let ids = try fixture.tasks().keys.sorted()
    #expect(ids == ["one:f.bin", "two:f.bin"], "\(ids)")
  }

  // MARK: - File times

  /// A `Last-Modified` in 2300 does not fit in nanoseconds: the run, the next run, `plan` and
  /// `status` all work (the placed file keeps that time).
  @Test func aFileTimeAfter2262NeverTraps() throws {
    let fixture = try RunFixture()
    // Sat, 01 Jan 2300 00:00:00 GMT
    let far = Date(timeIntervalSince1970: 10_413_792_000)
    fixture.server.route(
      "/far.bin", .file(FileResource(body: Array("far future".utf8), etag: .strong("v1"), lastModified: far)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/far.bin
      """)
    let first = try fixture.run()
    #expect(first.status == 0, "\(first.stderr)")
    #expect(fixture.holds("far.bin", Array("far future".utf8)))
    let second = try fixture.run()
    #expect(second.status == 0, "\(second.stderr)")
    for (command, outcome) in try Self.readOnlyCommands(fixture) {
      #expect(outcome.status == 0, "\(command): \(outcome.stderr)")
    }
    // A local file touched far into the future, in place of the file: still no trap.
    let far3000 = timespec(tv_sec: 32_503_680_000, tv_nsec: 0)
    var times = [far3000, far3000]
    #expect(utimensat(AT_FDCWD, fixture.folder.path + "/far.bin", &times, 0) == 0)
    let third = try fixture.run(["--refresh"])
    #expect(third.status == 0, "\(third.stderr)")
    #expect(try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path).status == 0)
  }

  // MARK: - Names are bytes

  /// A listing names `café.bin` in NFC and in NFD: two files upstream, two files in the mirror.
  @Test func aListingsNFCAndNFDNamesAreTwoFiles() throws {
    let fixture = try RunFixture()
    let nfc = "caf%C3%A9.bin"
    let nfd = "cafe%CC%81.bin"
    fixture.server.route("/pub/", HostileReviewTests.listing([nfc, nfd]))
    fixture.server.route("/pub/" + nfc, .file(FileResource(body: Array("composed".utf8), etag: .strong("c"))))
    fixture.server.route("/pub/" + nfd, .file(FileResource(body: Array("decomposed".utf8), etag: .strong("d"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: m/
          prune: {}
          tasks:
            - index: BASE/pub/
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(Self.contents(fixture, "m/caf\u{E9}.bin") == Array("composed".utf8))
    #expect(Self.contents(fixture, "m/cafe\u{301}.bin") == Array("decomposed".utf8))
    #expect(fixture.server.requests(for: "/pub/" + nfd).count == 1)
    let report =
      (try? JSONSerialization.jsonObject(with: Data((fixture.folder.read("report.json") ?? "").utf8))) as? [String: Any]
    #expect((report?["tasks"] as? [Any])?.count == 2)
    // A second night: both stay, neither is pruned for the other.
    let again = try fixture.run()
    #expect(again.status == 0, "\(again.stderr)")
    #expect(Self.contents(fixture, "m/caf\u{E9}.bin") == Array("composed".utf8))
    #expect(Self.contents(fixture, "m/cafe\u{301}.bin") == Array("decomposed".utf8))
    // A third night on which only the NFD file fails: `report diff` sees that task, not its twin.
    fixture.folder.write("good.json", fixture.folder.read("report.json") ?? "")
    fixture.server.route("/pub/" + nfd, .status(500))
    fixture.server.route("/pub/", HostileReviewTests.listing([nfc, nfd, "new.bin"]))
    fixture.server.route("/pub/new.bin", .file(.version(3, length: 8)))
    let third = try fixture.run(["--refresh"])
    #expect(third.status == 1, "\(third.stdout) \(third.stderr) \(fixture.server.requests.map(\.path))")
    let diff = try BinaryRunner.run(["report", "diff", "good.json", "report.json", "--json"], in: fixture.folder.path)
    #expect(diff.status == 1, "\(diff.stdout)")
    #expect(diff.stdout.contains("cafe\u{301}.bin"), "\(diff.stdout)")
  }

  // MARK: - Secrets, usage errors, locks

  /// A secret's value written into an explicit `id:` is refused before anything is sent: ids are
  /// kept in the state folder, which never holds a secret.
  @Test func anIDHoldingASecretIsAManifestError() throws {
    let fixture = try RunFixture()
    fixture.server.route("/f.bin", .file(.version(1, length: 16)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          headers: {Authorization: "Bearer ${TOKEN}"}
          tasks:
            - download: BASE/f.bin
              id: "file-sekrit-value"
      """)
    let outcome = try fixture.run(environment: ["TOKEN": "sekrit-value"])
    #expect(outcome.status == 2, "\(outcome.stderr)")
    #expect(outcome.stderr.contains("manifest.yaml:7:"), "\(outcome.stderr)")
    #expect(fixture.server.requests(for: "/f.bin").isEmpty)
    #expect(fixture.leaks(of: ["sekrit-value"], outputs: [outcome.stdout, outcome.stderr]).isEmpty)
  }

  /// A usage error (`--shard 3/2`, `--jobs 0`, `--shard auto` with no scheduler, an unknown option)
  /// exits 2 and leaves a report that says the run did not run, never the last run's.
  @Test(arguments: [["--shard", "3/2"], ["--jobs", "0"], ["--shard", "auto"], ["--no-such-option"], ["--jobs=0"]])
  func aUsageErrorReplacesTheLastReport(arguments: [String]) throws {
    let fixture = try RunFixture()
    fixture.server.route("/f.bin", .file(.version(1, length: 16)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/f.bin
      """)
    #expect(try fixture.run().status == 0)
    let good = fixture.folder.read("report.json") ?? ""
    #expect(good.contains("\"f.bin\""))
    let outcome = try fixture.run(arguments, environment: ["JOB_COMPLETION_INDEX": "", "SLURM_ARRAY_TASK_ID": ""])
    #expect(outcome.status == 2, "\(outcome.stderr)")
    let report = fixture.folder.read("report.json") ?? ""
    #expect(report.contains("\"not_run\""), "\(report)")
    #expect(!report.contains("\"f.bin\""), "\(report)")
    // `report diff` of the two sees a run that did not run: a regression.
    fixture.folder.write("good.json", good)
    let diff = try BinaryRunner.run(["report", "diff", "good.json", "report.json"], in: fixture.folder.path)
    #expect(diff.status == 1, "\(diff.stdout)")
  }

  /// A symbolic link to a running manifest is that manifest: the second run finds its lock (exit 4).
  @Test func aLinkToARunningManifestTakesItsLock() throws {
    let fixture = try RunFixture()
    fixture.server.route("/slow.bin", trickling(FileResource.versionBytes(1, length: 2 << 20), etag: "s"))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/slow.bin
      """)
    let other = TemporaryDirectory()
    #expect(symlink(fixture.folder.path + "/manifest.yaml", fixture.folder.path + "/link.yaml") == 0)
    #expect(symlink(fixture.folder.path + "/manifest.yaml", other.path + "/elsewhere.yaml") == 0)
    let first = try fixture.start()
    defer {
      kill(first.processIdentifier, SIGKILL)
      first.waitUntilExit()
    }
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline && fixture.server.requests(for: "/slow.bin").isEmpty { usleep(20_000) }
    let beside = try BinaryRunner.run(["run", "link.yaml", "--progress", "never"], in: fixture.folder.path)
    #expect(beside.status == 4, "\(beside.stderr)")
    let away = try BinaryRunner.run(["run", "elsewhere.yaml", "--progress", "never"], in: other.path)
    #expect(away.status == 4, "\(away.stderr)")
    // The link's run would have written beside the manifest, never beside the link.
    #expect(!FileManager.default.fileExists(atPath: other.path + "/slow.bin"))
  }

  // MARK: - Prune

  /// A download killed mid-way leaves its partial file; when upstream then drops the file, prune
  /// removes the partial file with the checkpoint (it stayed in the served tree forever).
  @Test func pruneRemovesThePartialFileOfAFileUpstreamDropped() throws {
    let fixture = try RunFixture()
    fixture.server.route("/pub/", HostileReviewTests.listing(["big.bin", "small.bin"]))
    fixture.server.route("/pub/big.bin", trickling(FileResource.versionBytes(1, length: 4 << 20), etag: "big"))
    fixture.server.route("/pub/small.bin", .file(.version(2, length: 64)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: m/
          prune: {}
          tasks:
            - index: BASE/pub/
      """)
    let status = try fixture.interrupt(signal: SIGKILL, after: 100_000)
    #expect(status == SIGKILL)
    #expect(fixture.folder.exists("m/big.bin.batchdl-part"))
    fixture.server.route("/pub/", HostileReviewTests.listing(["small.bin"]))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(!fixture.folder.exists("m/big.bin.batchdl-part"), "\(fixture.files())")
    #expect(fixture.holds("m/small.bin", FileResource.versionBytes(2, length: 64)))
    #expect(fixture.checkpointBytes() == 0)
  }

  // MARK: - Links below dest

  /// A folder below `dest` replaced by a link to a copy elsewhere: the file there is not this
  /// task's, however alike (the unchanged check followed the link; prune did not).
  @Test func theUnchangedCheckNeverFollowsALinkedFolderOutOfDest() throws {
    let fixture = try RunFixture()
    let outside = Self.outsideFolder()
    fixture.server.route("/f.bin", .file(.version(1, length: 64)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: m/
          tasks:
            - download: BASE/f.bin
              to: sub/f.bin
      """)
    #expect(try fixture.run().status == 0)
    // The folder moves out of dest, its file unchanged (size and time kept), and a link takes its place.
    #expect(rename(fixture.folder.path + "/m/sub", outside.path + "/sub") == 0)
    #expect(symlink(outside.path + "/sub", fixture.folder.path + "/m/sub") == 0)
    let outcome = try fixture.run()
    let task = try fixture.tasks()["m/sub/f.bin"]
    #expect(task?["outcome"] as? String == "failed", "\(outcome.stdout)\(outcome.stderr)")
    #expect(HostileReviewTests.code(task) == "unsafe-path", "\(outcome.stderr)")
    #expect(outcome.status == 1)
    // Nothing was written through the link.
    #expect((try? FileManager.default.contentsOfDirectory(atPath: outside.path + "/sub")) == ["f.bin"])
  }

  // MARK: - Nothing sent before the lock and the state folder

  /// A damaged database (exit 5) and a held lock (exit 4) stop a run before its documents are
  /// fetched: nothing is sent, and nothing is written beside the run that holds the folder.
  @Test func aDamagedStateOrAHeldLockSendsNoDocumentRequest() throws {
    let fixture = try RunFixture()
    fixture.server.route("/pub/", HostileReviewTests.listing(["slow.bin"]))
    fixture.server.route("/pub/slow.bin", trickling(FileResource.versionBytes(1, length: 1 << 20), etag: "s"))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - index: BASE/pub/
      """)
    #expect(try fixture.run().status == 0)
    // A held lock: the second run sends nothing.
    fixture.server.route("/pub/slow.bin", trickling(FileResource.versionBytes(2, length: 4 << 20), etag: "t"))
    let first = try fixture.start(["--refresh"])
    defer {
      kill(first.processIdentifier, SIGKILL)
      first.waitUntilExit()
    }
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline && fixture.server.requests(for: "/pub/slow.bin").count < 2 { usleep(20_000) }
    fixture.server.clearLog()
    let locked = try fixture.run()
    #expect(locked.status == 4, "\(locked.stderr)")
    #expect(fixture.server.requests(for: "/pub/").isEmpty, "\(fixture.server.requests.map(\.path))")
    kill(first.processIdentifier, SIGKILL)
    first.waitUntilExit()
    // A damaged database: exit 5, nothing sent.
    _ = fixture.folder.write(".batchdl/state.sqlite", String(repeating: "not a database ", count: 400))
    for suffix in ["-wal", "-shm"] { unlink(fixture.folder.path + "/.batchdl/state.sqlite" + suffix) }
    fixture.server.clearLog()
    let damaged = try fixture.run()
    #expect(damaged.status == 5, "\(damaged.stderr)")
    #expect(fixture.server.requests.isEmpty, "\(fixture.server.requests.map(\.path))")
    #expect((fixture.folder.read("report.json") ?? "").contains("\"not_run\""))
  }

  /// A file's bytes, opened by the path's own UTF-8 bytes (Foundation may change a name's
  /// normalization on its way to the system).
  static func contents(_ fixture: RunFixture, _ name: String) -> [UInt8]? {
    let descriptor = open(fixture.folder.path + "/" + name, O_RDONLY)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    let count = read(descriptor, &buffer, buffer.count)
    return count < 0 ? nil : Array(buffer.prefix(count))
  }
}
