import BatchDL
import BatchDLStore
import BatchDLSupport
import Foundation
import TestServer
import TestSupport
import Testing

/// The state folder's layout and what every command does with it: shards, several manifests in
/// one folder, a project folder that moves, and a damaged, empty or unwritable database.
@Suite struct StateFolderTests {
  static let twoFiles = """
    version: 1
    sessions:
      main:
        tasks:
          - download: BASE/a.txt
          - download: BASE/b.txt
    """

  /// A fixture whose manifest (two small downloads) has run once.
  func finishedFixture() throws -> RunFixture {
    let fixture = try RunFixture()
    fixture.server.route("/a.txt", .text("a\n"))
    fixture.server.route("/b.txt", .text("b\n"))
    fixture.manifest(Self.twoFiles)
    let first = try fixture.run()
    #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
    return fixture
  }

  func batchdl(_ arguments: [String], in fixture: RunFixture) throws -> BinaryRunner.Outcome {
    try BinaryRunner.run(arguments, in: fixture.folder.path)
  }

  var database: String { ".batchdl/state.sqlite" }

  // MARK: - A damaged database

  enum Damage: String, CaseIterable {
    case junk
    case truncated
  }

  @Test(arguments: Damage.allCases) func aDamagedDatabaseGetsOneMessageAndCacheClearResetsIt(damage: Damage) throws {
    let fixture = try finishedFixture()
    let path = fixture.folder.path + "/" + database
    switch damage {
    case .junk:
      let junk = Data(TestData.pseudoRandomBytes(count: 20_000, seed: 61))
      #expect(FileManager.default.createFile(atPath: path, contents: junk))
    case .truncated:
      let size = FileAccess.status(path)?.size ?? 0
      #expect(size > 8192)
      #expect(truncate(path, 8192) == 0)
    }
    unlink(fixture.folder.path + "/report.json")
    let advice = "batchdl cache clear --yes manifest.yaml"

    let run = try fixture.run()
    #expect(run.status == 5, "\(run.stdout)\(run.stderr)")
    #expect(run.stderr.contains("state.sqlite") && run.stderr.contains("damaged"), "\(run.stderr)")
    #expect(run.stderr.contains(advice), "\(run.stderr)")
    // The report says that nothing ran.
    let tasks = try fixture.tasks()
    #expect(tasks.count == 2, "\(fixture.folder.read("report.json") ?? "no report")")
    #expect(tasks.values.allSatisfy { $0["outcome"] as? String == "cancelled" })

    for command in [["plan", "manifest.yaml"], ["status", "manifest.yaml"], ["status", "manifest.yaml", "--json"]] {
      let outcome = try batchdl(command, in: fixture)
      #expect(outcome.status == 5, "\(command): \(outcome.stdout)\(outcome.stderr)")
      #expect(outcome.stderr.contains(advice), "\(command): \(outcome.stderr)")
    }

    let cleared = try batchdl(["cache", "clear", "--yes", "manifest.yaml"], in: fixture)
    #expect(cleared.status == 0, "\(cleared.stdout)\(cleared.stderr)")
    let plan = try batchdl(["plan", "manifest.yaml"], in: fixture)
    #expect(plan.status == 0, "\(plan.stderr)")
    let again = try fixture.run()
    #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
    #expect(fixture.folder.read("a.txt") == "a\n")
  }

  @Test func anEmptyDatabaseIsAFreshState() throws {
    let fixture = try finishedFixture()
    #expect(truncate(fixture.folder.path + "/" + database, 0) == 0)
    let plan = try batchdl(["plan", "manifest.yaml"], in: fixture)
    #expect(plan.status == 0, "\(plan.stderr)")
    #expect(plan.stdout.contains("not fetched before"), "\(plan.stdout)")
    let status = try batchdl(["status", "manifest.yaml"], in: fixture)
    #expect(status.status == 0, "\(status.stderr)")
    #expect(status.stdout.contains("2 tasks: 0 done, 0 partial, 2 pending, 0 failed"), "\(status.stdout)")
    let stats = try batchdl(["cache", "stats", "manifest.yaml"], in: fixture)
    #expect(stats.status == 0, "\(stats.stderr)")
    let run = try fixture.run()
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    let after = try batchdl(["status", "manifest.yaml"], in: fixture)
    #expect(after.stdout.contains("2 tasks: 2 done"), "\(after.stdout)")
  }

  /// A run killed before SQLite folded its log back leaves tables only in `state.sqlite-wal`;
  /// without that file, the database has no tables at all.
  @Test func aDatabaseWithoutItsLogIsAFreshState() throws {
    let fixture = try RunFixture()
    fixture.server.route("/small.txt", .text("small\n"))
    fixture.server.route(
      "/big.bin",
      trickling(TestData.pseudoRandomBytes(count: 2 << 20, seed: 62), etag: "v1"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/small.txt
            - download: BASE/big.bin
              priority: low
      """)
    let process = try fixture.start()
    let deadline = Date().addingTimeInterval(20)
    var results = 0
    while Date() < deadline && results < 1 {
      usleep(50_000)
      results = (try? StateStore.open(folder: fixture.folder.path + "/.batchdl", readOnly: true)?.results().count) ?? 0
    }
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    #expect(results >= 1)
    unlink(fixture.folder.path + "/" + database + "-wal")
    unlink(fixture.folder.path + "/" + database + "-shm")
    for command in [["plan", "manifest.yaml"], ["status", "manifest.yaml"], ["cache", "stats", "manifest.yaml"]] {
      let outcome = try batchdl(command, in: fixture)
      #expect(outcome.status == 0, "\(command): \(outcome.stdout)\(outcome.stderr)")
    }
    fixture.server.route("/big.bin", .text("big\n"))
    let run = try fixture.run()
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
  }

  @Test func aFullDiskIsCalledAFullDisk() throws {
    let fixture = try finishedFixture()
    let path = fixture.folder.path + "/" + database
    unlink(path)
    #expect(symlink("/dev/full", path) == 0)
    unlink(fixture.folder.path + "/report.json")
    let run = try fixture.run()
    #expect(run.status == 5, "\(run.stdout)\(run.stderr)")
    #expect(run.stderr.contains("full"), "\(run.stderr)")
    #expect(!run.stderr.contains("damaged") && !run.stderr.contains("cache clear"), "\(run.stderr)")
    #expect(try fixture.tasks().count == 2)
  }

  // MARK: - Shards

  @Test func planAndStatusSeeWhatShardedRunsRecorded() throws {
    let fixture = try RunFixture()
    // Sixteen requests: the shards split them by the hash of their keys (the server's port is in
    // them), and with six, one shard got them all in about one run in thirty.
    let names = (0..<16).map { "n\($0)" }
    for name in names { fixture.server.route("/\(name).txt", .text("\(name)\n")) }
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
      \(names.map { "      - download: BASE/\($0).txt" }.joined(separator: "\n"))
      """)
    for shard in ["0/2", "1/2"] {
      let run = try fixture.run(["--shard", shard])
      #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    }
    #expect(names.allSatisfy { fixture.folder.read("\($0).txt") == "\($0)\n" })
    for shard in ["0/2", "1/2"] {
      let plan = try batchdl(["plan", "manifest.yaml", "--shard", shard], in: fixture)
      #expect(plan.status == 0, "\(plan.stderr)")
      #expect(!plan.stdout.contains("not fetched before"), "\(shard): \(plan.stdout)")
    }
    let status = try batchdl(["status", "manifest.yaml"], in: fixture)
    #expect(status.status == 0, "\(status.stderr)")
    #expect(status.stdout.contains("16 tasks: 16 done, 0 partial, 0 pending, 0 failed"), "\(status.stdout)")
    let one = try batchdl(["status", "manifest.yaml", "--shard", "1/2"], in: fixture)
    #expect(one.status == 0, "\(one.stderr)")
    let lines = one.stdout.split(separator: "\n")
    #expect(lines.count < 17 && lines.dropLast().allSatisfy { $0.hasPrefix("done") }, "\(one.stdout)")
    // Each shard's second run costs nothing.
    fixture.server.clearLog()
    for shard in ["0/2", "1/2"] {
      #expect(try fixture.run(["--shard", shard]).status == 0)
    }
    #expect(fixture.server.requests.isEmpty)
  }

  // MARK: - Several manifests, one state folder

  @Test func manifestsSharingAStateFolderKeepTheirOwnResults() throws {
    let fixture = try RunFixture()
    fixture.server.route("/one.txt", .text("one\n"))
    fixture.server.route("/two.txt", .text("two\n"))
    for name in ["one", "two"] {
      fixture.folder.write(
        "\(name)/manifest.yaml",
        """
        version: 1
        sessions:
          main:
            tasks:
              - download: \(fixture.server.baseURL)/\(name).txt
                to: file.txt
        """)
    }
    func run(_ name: String) throws -> BinaryRunner.Outcome {
      try BinaryRunner.run(
        ["run", "manifest.yaml", "--state", "../shared", "--progress", "never"],
        in: fixture.folder.path + "/" + name)
    }
    for name in ["one", "two"] {
      let outcome = try run(name)
      #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
    }
    fixture.server.clearLog()
    for name in ["one", "two", "one"] {
      let outcome = try run(name)
      #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
    }
    #expect(fixture.server.requests.isEmpty, "\(fixture.server.requests.map(\.path))")
    #expect(fixture.folder.read("one/file.txt") == "one\n")
    #expect(fixture.folder.read("two/file.txt") == "two\n")
  }

  // MARK: - A project folder that moves

  @Test func aMovedProjectFolderResumesItsDownload() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 63)
    fixture.server.route(
      "/big.bin",
      trickling(body, etag: "v1"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/big.bin
              to: files/big.bin
      """)
    let process = try fixture.start()
    let deadline = Date().addingTimeInterval(20)
    var saved: Int64 = 0
    while Date() < deadline && saved < 200_000 {
      usleep(50_000)
      saved =
        (try? StateStore.open(folder: fixture.folder.path + "/.batchdl", readOnly: true)?.checkpoints())?.values
        .map(\.durable).max() ?? 0
    }
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    #expect(saved > 0)

    let elsewhere = TemporaryDirectory()
    let moved = elsewhere.path + "/project"
    #expect(rename(fixture.folder.path, moved) == 0)
    // Put it back for the fixture's clean-up, whatever happens.
    defer { _ = rename(moved, fixture.folder.path) }
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.server.clearLog()
    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: moved)
    #expect(plan.stdout.contains("resume from byte"), "\(plan.stdout)")
    let run = try BinaryRunner.run(
      ["run", "manifest.yaml", "--progress", "never", "--report", "report.json"], in: moved)
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    let range = fixture.server.requests(for: "/big.bin").first?.header("range") ?? ""
    #expect(range.hasPrefix("bytes=") && !range.hasPrefix("bytes=0-"), "range: \(range)")
    let intact = FileManager.default.contents(atPath: moved + "/files/big.bin").map { [UInt8]($0) } == body
    #expect(intact)
    #expect(!FileManager.default.fileExists(atPath: moved + "/files/big.bin.batchdl-part"))
  }
}
