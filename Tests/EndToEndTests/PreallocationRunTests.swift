import BatchDL
import BatchDLStore
import Crypto
import Foundation
import TestServer
import TestSupport
import Testing

/// A download whose length is known has its blocks reserved before its body is written: a
/// filesystem that cannot hold it fails the task at once with `disk-full`, before the body is
/// fetched, leaving nothing; a reserved partial file resumes from its checkpoint alone.
@Suite struct PreallocationRunTests {
  static func sha256(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
  }

  /// 16 MiB into a 4 MiB filesystem, served at 1 MiB/s (sixteen seconds for the whole body, four
  /// to fill the filesystem): the run fails with `disk-full` right after the response head, one
  /// request, no file and no partial.
  @Test(.enabled(if: SmallFilesystem.permitted, "mounting a tmpfs is not permitted here (needs root)"))
  func aDownloadLargerThanItsFilesystemFailsDiskFullBeforeItsBody() throws {
    let fixture = try RunFixture()
    let small = try #require(SmallFilesystem(mebibytes: 4, at: fixture.folder.path + "/small"))
    let body = TestData.pseudoRandomBytes(count: 16 << 20, seed: 91)
    fixture.server.route(
      "/big.bin", .file(FileResource(body: body, etag: .strong("v1"), rateLimit: 1 << 20)))
    fixture.manifest(
      """
      version: 1
      defaults:
        retry: {attempts: 3, backoff: 100ms}
      sessions:
        main:
          dest: small/
          tasks:
            - download: BASE/big.bin
      """)
    let started = Date()
    let result = try fixture.run()
    let took = Date().timeIntervalSince(started)
    #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
    let error = try fixture.tasks()["small/big.bin"]?["error"] as? [String: Any]
    #expect(error?["code"] as? String == "disk-full", "\(String(describing: error))")
    #expect(result.stderr.contains("disk-full") || result.stderr.contains("free some space"), "\(result.stderr)")
    // The server saw the request once (disk-full is not retried), and the run did not wait for
    // the body, nor for the filesystem to fill up (four seconds at the server's rate).
    #expect(fixture.server.requests(for: "/big.bin").count == 1)
    #expect(took < 2, "the run took \(took) s")
    let left = (try? FileManager.default.contentsOfDirectory(atPath: small.path)) ?? []
    #expect(left.isEmpty, "\(left)")
    #expect(fixture.checkpointBytes() == 0)
  }

  /// A run killed in the middle of a reserved download leaves a partial file as long as the
  /// bytes it wrote (the reserved blocks past them do not count). A checkpoint that claims more
  /// than the file holds (what a reservation that set the size would have let through) is not
  /// resumed from: the next run fetches the file whole. The real checkpoint resumes it
  /// byte-identically.
  @Test func aReservedPartialFileResumesFromItsCheckpointAloneAndByteIdentically() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 92)
    fixture.server.route("/big.bin", trickling(body, etag: "v1"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/big.bin
              sha256: \(Self.sha256(body))
      """)
    let status = try fixture.interrupt(signal: SIGKILL)
    #expect(status != 0)
    let partial = fixture.folder.path + "/big.bin.batchdl-part"
    var info = stat()
    #expect(stat(partial, &info) == 0)
    let saved = fixture.checkpointBytes()
    #expect(
      saved > 0 && Int64(info.st_size) >= saved && Int64(info.st_size) < Int64(body.count),
      "size \(info.st_size), checkpoint \(saved)")
    #expect(fixture.bytes("big.bin.batchdl-part") == Array(body[0..<Int(info.st_size)]))

    // A checkpoint past the bytes written: refused, the file is fetched whole.
    try forgeCheckpoint(fixture, durable: Int64(body.count) - 4096)
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.server.clearLog()
    let whole = try fixture.run()
    #expect(whole.status == 0, "\(whole.stdout)\(whole.stderr)")
    #expect(fixture.server.requests(for: "/big.bin").map(rangeOffset) == [nil])
    #expect(fixture.holds("big.bin", body))

    // The same kill again, then the real checkpoint: a range from it, the same bytes.
    unlink(fixture.folder.path + "/big.bin")
    fixture.server.route("/big.bin", trickling(body, etag: "v1"))
    #expect(try fixture.interrupt(signal: SIGKILL, ["--refresh"]) != 0)
    let again = fixture.checkpointBytes()
    #expect(again > 0)
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.server.clearLog()
    let resumed = try fixture.run()
    #expect(resumed.status == 0, "\(resumed.stdout)\(resumed.stderr)")
    let offset = try #require(rangeOffset(fixture.server.requests(for: "/big.bin").first))
    #expect(offset >= again)
    #expect(fixture.holds("big.bin", body))
    #expect(!fixture.folder.exists("big.bin.batchdl-part"))
  }

  /// Sets the durable bytes of the fixture's one checkpoint.
  func forgeCheckpoint(_ fixture: RunFixture, durable: Int64) throws {
    let plan = try ManifestCheck.plan(path: fixture.folder.path + "/manifest.yaml")
    let store = try #require(try StateFolder(option: nil, manifest: plan.manifest).openStore())
    var point = try #require(try store.checkpoints().values.first)
    point.durable = durable
    try store.update(checkpoints: [point])
  }
}
