import BatchDLStore
import Foundation
import TestServer
import TestSupport
import Testing

/// Prune removes the partial files no task names any more, checkpointed or not (issue 38, item 6):
/// those of a run killed before its first checkpoint, of a download whose server gives no
/// validator, and those an older release left beside a file prune deletes; never another
/// manifest's in a shared `partial_dir:`, never a file batchdl did not make, never through a link.
@Suite(.serialized) struct OrphanPartialTests {
  /// The names in `folder` below the fixture's, none when it does not exist.
  func names(_ fixture: RunFixture, _ folder: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: fixture.folder.path + "/" + folder)) ?? []).sorted()
  }

  /// A manifest of one session `main` (dest `dest`, pruning) with `tasks`, its partial files in
  /// `partialDir` when given.
  static func manifest(dest: String = "pub", partialDir: String?, _ tasks: String) -> String {
    """
    version: 1
    defaults:
      retry: {attempts: 1}
    sessions:
      main:
        dest: \(dest)
    \(partialDir.map { "    partial_dir: \($0)\n" } ?? "")    prune: true
        tasks:
    \(tasks)
    """
  }

  /// Starts `batchdl run MANIFEST` and kills it (SIGKILL: nothing more is written) once a partial
  /// file of `name` in `folder` holds bytes (or after 20 s).
  func kill(_ fixture: RunFixture, manifest: String = "manifest.yaml", once folder: String, name: String) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: BinaryRunner.executable)
    process.arguments = ["run", manifest, "--progress", "never", "--quiet"]
    process.currentDirectoryURL = URL(fileURLWithPath: fixture.folder.path)
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline {
      let partials = names(fixture, folder).filter { $0.hasSuffix(name + ".batchdl-part") }
      let sizes = partials.compactMap { fixture.bytes(folder + "/" + $0)?.count }
      if sizes.contains(where: { $0 > 0 }) { break }
      usleep(20_000)
    }
    Foundation.kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }

  /// A slow download with no `ETag` and no `Last-Modified`: never checkpointed.
  static func noValidator(_ seed: UInt64) -> Behavior {
    .file(
      FileResource(
        body: TestData.pseudoRandomBytes(count: 3 << 20, seed: seed),
        trickle: Trickle(chunkBytes: 32 << 10, interval: 0.05)))
  }

  @Test(arguments: [nil, "../.partial"])
  func pruneRemovesThePartialFileOfADownloadThatWasNeverCheckpointed(partialDir: String?) throws {
    let fixture = try RunFixture()
    fixture.server.route("/big.bin", Self.noValidator(383))
    fixture.server.route("/small.txt", .file(Array("small\n".utf8), etag: .strong("s1")))
    fixture.manifest(Self.manifest(partialDir: partialDir, "      - download: BASE/big.bin"))
    let folder = partialDir == nil ? "pub" : ".partial"
    try kill(fixture, once: folder, name: "big.bin")
    // No validator, so no checkpoint: only the record made before the first byte knows the file.
    #expect(fixture.checkpointBytes() == 0)
    let left = names(fixture, folder).filter { $0.hasSuffix("big.bin.batchdl-part") }
    #expect(left.count == 1, "\(names(fixture, folder))")

    // Upstream dropped big.bin: the manifest names another file now.
    fixture.manifest(Self.manifest(partialDir: partialDir, "      - download: BASE/small.txt"))
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(!names(fixture, folder).contains { $0.hasSuffix(".batchdl-part") }, "\(names(fixture, folder))")
    #expect(result.stdout.contains("pruned the partial file"), "\(result.stdout)")
    #expect(fixture.folder.read("pub/small.txt") == "small\n")
    // Its record is gone too: a third run has nothing to say.
    let again = try fixture.run()
    #expect(again.status == 0 && !again.stdout.contains("pruned the partial file"), "\(again.stdout)")
  }

  @Test func aPartialDirSharedWithAnotherManifestKeepsThatManifestsFiles() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", Self.noValidator(384))
    fixture.server.route("/b.bin", trickling(TestData.pseudoRandomBytes(count: 3 << 20, seed: 385), etag: "b1"))
    fixture.server.route("/small.txt", .file(Array("small\n".utf8), etag: .strong("s1")))
    // Two manifests, one folder, one state folder, one partial_dir; each its own dest.
    fixture.manifest(
      Self.manifest(dest: "pub-a", partialDir: "../.partial", "      - download: BASE/a.bin"), name: "a.yaml")
    fixture.manifest(
      Self.manifest(dest: "pub-b", partialDir: "../.partial", "      - download: BASE/b.bin"), name: "b.yaml")
    try kill(fixture, manifest: "b.yaml", once: ".partial", name: "b.bin")
    let ofB = names(fixture, ".partial")
    #expect(ofB.count == 1 && ofB.first?.hasSuffix("-b.bin.batchdl-part") == true, "\(ofB)")
    try kill(fixture, manifest: "a.yaml", once: ".partial", name: "a.bin")
    // A file of the same shape that no run made (another tool's, or a copy) is left alone too.
    fixture.folder.write(".partial/0123456789abcdef-a.bin.batchdl-part", "not batchdl's\n")
    #expect(names(fixture, ".partial").count == 3, "\(names(fixture, ".partial"))")

    fixture.manifest(
      Self.manifest(dest: "pub-a", partialDir: "../.partial", "      - download: BASE/small.txt"), name: "a.yaml")
    let result = try BinaryRunner.run(
      ["run", "a.yaml", "--progress", "never"], in: fixture.folder.path, timeout: 60)
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let after = names(fixture, ".partial")
    #expect(after.count == 2, "\(after)")
    #expect(after.contains { $0.hasSuffix("-b.bin.batchdl-part") }, "\(after)")
    #expect(after.contains("0123456789abcdef-a.bin.batchdl-part"), "\(after)")
    #expect(!after.contains { $0.hasSuffix("-a.bin.batchdl-part") && !$0.hasPrefix("0123456789abcdef") }, "\(after)")
  }

  @Test func pruneRemovesThePartialFileBesideAFileItDeletesButNoLink() throws {
    let fixture = try PruneTests.fixture(["a", "b", "c"])
    var result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    // Left by a run of a release that recorded no partial file (or by hand): beside a and b.
    fixture.folder.write("m/a.batchdl-part", "half of a\n")
    fixture.folder.write("outside.txt", "the user's\n")
    #expect(symlink(fixture.folder.path + "/outside.txt", fixture.folder.path + "/m/b.batchdl-part") == 0)
    PruneTests.list(fixture, ["c"])
    result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(!PruneTests.exists(fixture, "m/a") && !PruneTests.exists(fixture, "m/b"))
    #expect(!PruneTests.exists(fixture, "m/a.batchdl-part"), "\(names(fixture, "m"))")
    // A link is never followed nor removed: it is not a partial file batchdl wrote.
    #expect(PruneTests.exists(fixture, "m/b.batchdl-part"))
    #expect(fixture.folder.read("outside.txt") == "the user's\n")
  }
}
