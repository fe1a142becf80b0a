import BatchDLStore
import BatchDLSupport
import Foundation
import TestServer
import TestSupport
import Testing

/// `prune:` end to end: the built binary deletes only what it placed and no task names any more,
/// never a file the user put there or changed, never outside `dest`, never through a link, never
/// after a failure, and never more than `max_delete`.
@Suite struct PruneTests {
  /// A fixture serving `/f/NAME` for each name (its body `NAME\n`), with a list `files.txt` of
  /// `names` and a session `mirror` (dest `m/`, `prune`) downloading the list.
  static func fixture(_ names: [String], prune: String = "true") throws -> RunFixture {
    let fixture = try RunFixture()
    for name in names + ["late-1", "late-2"] {
      fixture.server.route("/f/" + name, .file(Array("\(name)\n".utf8), etag: .strong(name)))
    }
    list(fixture, names)
    manifest(fixture, prune: prune)
    return fixture
  }

  /// Writes the manifest of `fixture(_:prune:)` with another `prune`.
  static func manifest(_ fixture: RunFixture, prune: String) {
    fixture.manifest(
      """
      version: 1
      defaults:
        retry: {attempts: 1}
        timeouts: {request: 5s}
      sessions:
        mirror:
          dest: m/
          prune: \(prune)
          tasks:
            - list: files.txt
      """)
  }

  /// Rewrites `files.txt` with one line per name (a name with a `/` keeps it as its destination).
  static func list(_ fixture: RunFixture, _ names: [String]) {
    fixture.folder.write(
      "files.txt", names.map { "\(fixture.server.url("/f/" + $0)) \($0)\n" }.joined())
  }

  static func report(_ fixture: RunFixture) throws -> [String: Any] {
    let data = Data((fixture.folder.read("report.json") ?? "").utf8)
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
  }

  static func exists(_ fixture: RunFixture, _ name: String) -> Bool {
    var info = stat()
    return lstat(fixture.folder.path + "/" + name, &info) == 0
  }

  @Test func deletesWhatItPlacedAndNoTaskNamesAndNothingElse() throws {
    let fixture = try Self.fixture(["a", "b", "sub/deep/c", "sub/d"])
    var result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    // The user's own files, beside batchdl's and in its folders.
    fixture.folder.write("m/mine.txt", "mine")
    fixture.folder.write("m/sub/mine.txt", "mine too")
    Self.list(fixture, ["a", "sub/d"])
    result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(fixture.folder.read("m/a") == "a\n")
    #expect(fixture.folder.read("m/sub/d") == "sub/d\n")
    #expect(!Self.exists(fixture, "m/b"))
    #expect(!Self.exists(fixture, "m/sub/deep/c"))
    // The folder pruning emptied goes; the one still holding the user's file stays.
    #expect(!Self.exists(fixture, "m/sub/deep"))
    #expect(fixture.folder.read("m/mine.txt") == "mine")
    #expect(fixture.folder.read("m/sub/mine.txt") == "mine too")
    let report = try Self.report(fixture)
    #expect(report["pruned"] as? [String] == ["m/b", "m/sub/deep/c"])
    let prune = try #require((report["prune"] as? [[String: Any]])?.first)
    #expect(prune["outcome"] as? String == "pruned")
    #expect(prune["deleted"] as? [String] == ["m/b", "m/sub/deep/c"])
    let events = fixture.events().filter { $0["event"] as? String == "pruned" }
    #expect(events.compactMap { $0["path"] as? String }.sorted() == ["m/b", "m/sub/deep/c"])
    // A third run has nothing left to delete.
    result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(try Self.report(fixture)["pruned"] as? [String] == [])
  }

  @Test func filesPlacedBeforePlacementsWereRecordedAreAdopted() throws {
    let fixture = try Self.fixture(["a", "b", "c"])
    #expect(try fixture.run().status == 0)
    // A state folder of an earlier batchdl: results, but no record of the files placed.
    do {
      let db = try SQLiteDatabase(path: fixture.folder.path + "/.batchdl/state.sqlite")
      try db.execute("DELETE FROM placed")
    }
    // The next run finds every file unchanged (no request) and adopts them.
    var result = try fixture.run()
    #expect(fixture.server.requests(for: "/f/b").count == 1)
    #expect(result.status == 0, "\(result.stderr)")
    Self.list(fixture, ["a"])
    result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(!Self.exists(fixture, "m/b"))
    #expect(!Self.exists(fixture, "m/c"))
    #expect(fixture.folder.read("m/a") == "a\n")
    #expect(try Self.report(fixture)["pruned"] as? [String] == ["m/b", "m/c"])
  }

  @Test func aSessionThatStartsPruningAdoptsTheFilesItsTasksName() throws {
    let fixture = try Self.fixture(["a", "b", "c"], prune: "false")
    #expect(try fixture.run().status == 0)
    let store = try #require(try StateStore.open(folder: fixture.folder.path + "/.batchdl", readOnly: true))
    #expect(try store.placed().isEmpty)
    // prune: is set, and the list loses c in the same edit: c was never recorded, so it stays;
    // a and b are adopted.
    Self.manifest(fixture, prune: "true")
    Self.list(fixture, ["a", "b"])
    var result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(fixture.folder.read("m/c") == "c\n")
    #expect(try Self.report(fixture)["pruned"] as? [String] == [])
    Self.list(fixture, ["a"])
    result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(!Self.exists(fixture, "m/b"))
    #expect(fixture.folder.read("m/c") == "c\n")
    #expect(try Self.report(fixture)["pruned"] as? [String] == ["m/b"])
  }

  @Test func aFileTheUserReplacedSurvives() throws {
    let fixture = try Self.fixture(["a", "b", "c"])
    #expect(try fixture.run().status == 0)
    // Replaced (a new file), and changed in place.
    unlink(fixture.folder.path + "/m/b")
    fixture.folder.write("m/b", "my own b\n")
    let handle = try #require(FileHandle(forWritingAtPath: fixture.folder.path + "/m/c"))
    handle.seekToEndOfFile()
    handle.write(Data("more\n".utf8))
    handle.closeFile()
    Self.list(fixture, ["a"])
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(fixture.folder.read("m/b") == "my own b\n")
    #expect(fixture.folder.read("m/c") == "c\nmore\n")
    #expect(result.stderr.contains("prune leaves m/b"), "\(result.stderr)")
    #expect(try Self.report(fixture)["pruned"] as? [String] == [])
  }

  @Test func aRunWithAFailedTaskPrunesNothing() throws {
    let fixture = try Self.fixture(["a", "b"])
    #expect(try fixture.run().status == 0)
    fixture.server.route("/f/broken", .fixed(.text(404, "no")))
    Self.list(fixture, ["a", "broken"])
    let result = try fixture.run()
    #expect(result.status == 1, "\(result.stderr)")
    #expect(fixture.folder.read("m/b") == "b\n")
    #expect(result.stderr.contains("prune skipped"), "\(result.stderr)")
    let report = try Self.report(fixture)
    let prune = try #require((report["prune"] as? [[String: Any]])?.first)
    #expect(prune["outcome"] as? String == "skipped")
    #expect((prune["reason"] as? String)?.contains("failed") == true)
    #expect(report["pruned"] as? [String] == [])
  }

  @Test func anInterruptedRunPrunesNothing() throws {
    let fixture = try Self.fixture(["a", "b"])
    #expect(try fixture.run().status == 0)
    fixture.server.route("/f/big", trickling(TestData.pseudoRandomBytes(count: 4 << 20, seed: 3), etag: "big"))
    Self.list(fixture, ["a", "big"])
    let status = try fixture.interrupt(signal: SIGINT, after: 100_000, ["--report", "report.json"])
    #expect(status == 3)
    #expect(fixture.folder.read("m/b") == "b\n")
    let prune = try #require((try Self.report(fixture)["prune"] as? [[String: Any]])?.first)
    #expect(prune["outcome"] as? String == "skipped")
    #expect(prune["reason"] as? String == "the run was interrupted")
  }

  @Test func aDescriptorThatCannotBeFetchedBlocksPrune() throws {
    let fixture = try Self.fixture(["a", "b"])
    for name in ["x", "y"] { fixture.server.route("/f/" + name, .file(Array("\(name)\n".utf8), etag: .strong(name))) }
    let document = """
      <?xml version="1.0" encoding="UTF-8"?>
      <metalink xmlns="urn:ietf:params:xml:ns:metalink">
        <file name="x"><url>\(fixture.server.url("/f/x"))</url></file>
        <file name="y"><url>\(fixture.server.url("/f/y"))</url></file>
      </metalink>
      """
    fixture.server.route("/doc.meta4", .fixed(.text(200, document)))
    fixture.manifest(
      """
      version: 1
      defaults:
        retry: {attempts: 1}
        timeouts: {request: 5s}
      sessions:
        mirror:
          dest: m/
          prune: true
          tasks:
            - list: files.txt
            - metalink: BASE/doc.meta4
              to: docs/
      """)
    var result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(fixture.folder.read("m/docs/y") == "y\n")
    // The document cannot be fetched now, and the list lost b: nothing goes, not even b.
    fixture.server.route("/doc.meta4", .fixed(.text(500, "down")))
    Self.list(fixture, ["a"])
    result = try fixture.run()
    #expect(fixture.folder.read("m/b") == "b\n")
    #expect(fixture.folder.read("m/docs/x") == "x\n")
    #expect(fixture.folder.read("m/docs/y") == "y\n")
    #expect(result.stderr.contains("prune skipped"), "\(result.stderr)")
    let prune = try #require((try Self.report(fixture)["prune"] as? [[String: Any]])?.first)
    #expect(prune["outcome"] as? String == "skipped")
    #expect((prune["reason"] as? String)?.contains("doc.meta4") == true, "\(prune)")
  }

  @Test func aShrunkenListDeletesNothingAndExitsSix() throws {
    let names = (0..<10).map { "file-\($0)" }
    let fixture = try Self.fixture(names, prune: "{max_delete: \"50%\"}")
    #expect(try fixture.run().status == 0)
    Self.list(fixture, Array(names.prefix(2)))
    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path)
    #expect(plan.status == 0, "\(plan.stderr)")
    #expect(plan.stdout.contains("the run would delete nothing and fail with prune-limit"), "\(plan.stdout)")
    #expect(plan.stdout.contains("would delete 8 of the 10 files"), "\(plan.stdout)")
    let json = try BinaryRunner.run(["plan", "manifest.yaml", "--json"], in: fixture.folder.path)
    let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
    let planned = try #require((object["prune"] as? [[String: Any]])?.first)
    #expect(planned["limit_exceeded"] as? Bool == true)
    #expect((planned["error"] as? [String: Any])?["code"] as? String == "prune-limit")

    let result = try fixture.run()
    #expect(result.status == 6, "\(result.stderr)")
    #expect(result.stderr.contains("would delete 8 of the 10 files"), "\(result.stderr)")
    #expect(result.stderr.contains("--no-prune"), "\(result.stderr)")
    for name in names { #expect(fixture.folder.read("m/" + name) == "\(name)\n") }
    let report = try Self.report(fixture)
    let prune = try #require((report["prune"] as? [[String: Any]])?.first)
    #expect(prune["outcome"] as? String == "refused")
    #expect((prune["error"] as? [String: Any])?["code"] as? String == "prune-limit")
    #expect(prune["would_delete"] as? Int == 8)
    #expect(report["pruned"] as? [String] == [])
    // report diff calls it a regression, by default.
    try FileManager.default.copyItem(
      atPath: fixture.folder.path + "/report.json", toPath: fixture.folder.path + "/refused.json")

    // --no-prune: the run succeeds and deletes nothing.
    let kept = try fixture.run(["--no-prune"])
    #expect(kept.status == 0, "\(kept.stderr)")
    for name in names { #expect(fixture.folder.read("m/" + name) == "\(name)\n") }
    let skipped = try #require((try Self.report(fixture)["prune"] as? [[String: Any]])?.first)
    #expect(skipped["outcome"] as? String == "skipped")
    #expect(skipped["reason"] as? String == "--no-prune")
    let diff = try BinaryRunner.run(
      ["report", "diff", "report.json", "refused.json"], in: fixture.folder.path)
    #expect(diff.status == 1, "\(diff.stdout)\(diff.stderr)")
    #expect(diff.stdout.contains("(prune mirror): prune refused (prune-limit)"), "\(diff.stdout)")
    let lenient = try BinaryRunner.run(
      ["report", "diff", "report.json", "refused.json", "--fail-on", "failure"], in: fixture.folder.path)
    #expect(lenient.status == 0, "\(lenient.stdout)\(lenient.stderr)")
  }

  @Test func planListsEachDeleteAndTheSpace() throws {
    let fixture = try Self.fixture(["a", "b", "c"])
    #expect(try fixture.run().status == 0)
    Self.list(fixture, ["a", "late-1"])
    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path)
    #expect(plan.status == 0, "\(plan.stderr)")
    #expect(plan.stdout.contains("    delete m/b\n"), "\(plan.stdout)")
    #expect(plan.stdout.contains("    delete m/c\n"), "\(plan.stdout)")
    #expect(!plan.stdout.contains("delete m/a"), "\(plan.stdout)")
    #expect(plan.stdout.contains("space: 0 B to write and 1 file of unknown size in m/"), "\(plan.stdout)")
    #expect(plan.stdout.contains("free on that filesystem"), "\(plan.stdout)")
    // The plan changed nothing.
    #expect(fixture.folder.read("m/b") == "b\n")
  }

  @Test func anEphemeralSessionCannotPrune() throws {
    let folder = TemporaryDirectory()
    folder.write(
      "manifest.yaml",
      """
      version: 1
      sessions:
        once:
          kind: ephemeral
          prune: {max_delete: 5}
          tasks:
            - download: http://127.0.0.1:9/x
      """)
    let result = try BinaryRunner.run(["validate", "manifest.yaml"], in: folder.path)
    #expect(result.status == 2)
    #expect(
      result.stderr.contains("manifest.yaml:5:12: error: prune is not allowed in an ephemeral session"),
      "\(result.stderr)")
  }

  @Test func recordsThatEscapeDestAreNeverDeleted() throws {
    let fixture = try Self.fixture(["a", "b"])
    #expect(try fixture.run().status == 0)
    let outside = TemporaryDirectory()
    outside.write("victim", "victim\n")
    fixture.folder.write("beside", "beside\n")
    fixture.folder.write("m/../m-sibling", "sibling\n")
    // A state folder edited to name files outside dest, each with the identity it has now, so
    // that only the path rule stands between them and unlink.
    let store = try #require(try StateStore.open(folder: fixture.folder.path + "/.batchdl", scope: Self.scope(fixture)))
    var records: [PlacedFile] = []
    for (path, file) in [
      ("../" + FileAccess.name(of: fixture.folder.path) + "/beside", fixture.folder.path + "/beside"),
      (outside.path + "/victim", outside.path + "/victim"), ("m/../beside", fixture.folder.path + "/beside"),
      ("beside", fixture.folder.path + "/beside"), ("m-sibling", fixture.folder.path + "/m-sibling"),
      ("manifest.yaml", fixture.folder.path + "/manifest.yaml"),
    ] {
      let identity = try #require(FileIdentity(path: file))
      records.append(PlacedFile(session: "mirror", path: path, identity: identity))
    }
    try store.update(placed: records)
    Self.list(fixture, ["a"])
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(outside.read("victim") == "victim\n")
    #expect(fixture.folder.read("beside") == "beside\n")
    #expect(fixture.folder.read("m-sibling") == "sibling\n")
    #expect(fixture.folder.read("manifest.yaml") != nil)
    #expect(!Self.exists(fixture, "m/b"))
    #expect(result.stderr.contains("prune leaves"), "\(result.stderr)")
    #expect(try Self.report(fixture)["pruned"] as? [String] == ["m/b"])
  }

  @Test func aLinkAtARecordedPathIsNotFollowed() throws {
    let fixture = try Self.fixture(["a", "b", "sub/c"])
    #expect(try fixture.run().status == 0)
    let outside = TemporaryDirectory()
    // m/b becomes a link to a file outside; m/sub moves outside (its file keeps its inode) and a
    // link to it takes its place.
    outside.write("target", "target\n")
    unlink(fixture.folder.path + "/m/b")
    #expect(symlink(outside.path + "/target", fixture.folder.path + "/m/b") == 0)
    #expect(rename(fixture.folder.path + "/m/sub", outside.path + "/sub") == 0)
    #expect(symlink(outside.path + "/sub", fixture.folder.path + "/m/sub") == 0)
    Self.list(fixture, ["a"])
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(outside.read("target") == "target\n")
    #expect(outside.read("sub/c") == "sub/c\n")
    #expect(Self.exists(fixture, "m/b"))
    #expect(try Self.report(fixture)["pruned"] as? [String] == [])
  }

  static func scope(_ fixture: RunFixture) -> StateScope {
    StateScope(manifest: "../manifest.yaml", directory: fixture.folder.path)
  }
}
