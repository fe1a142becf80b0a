import Crypto
import Foundation
import TestServer
import TestSupport
import Testing

/// A large body's blocks are written direct (O_DIRECT) on ext4 and XFS, past the page cache;
/// `BATCHDL_DIRECT_IO=off` writes them through it. Either way the file is whole and its SHA-256
/// is checked. What is cached is read with util-linux's `fincore` before the test reads the file.
@Suite struct DirectWriteTests {
  static let size = (12 << 20) + 777

  static func sha256(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
  }

  /// Runs a 12 MiB download; returns the bytes of the file in the page cache, and whether the
  /// folder's filesystem is one batchdl writes direct on.
  func download(environment: [String: String]) throws -> (cached: Int, direct: Bool) {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: Self.size, seed: 71)
    let digest = Self.sha256(body)
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/big.bin
              sha256: \(digest)
      """)
    let result = try fixture.run(environment: environment)
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(try fixture.tasks()["big.bin"]?["sha256"] as? String == digest)
    let fincore = try #require(ExternalTool.find("fincore"), "fincore (util-linux) is missing")
    let cached = try ExternalTool.run(
      fincore, ["--bytes", "--noheadings", "--output", "RES", fixture.folder.path + "/big.bin"])
    #expect(cached.status == 0, "\(cached.output)")
    let type = try ExternalTool.run("/usr/bin/stat", ["-f", "-c", "%T", fixture.folder.path]).stdout
    let direct = ["ext2/ext3", "xfs"].contains(type.trimmingCharacters(in: .whitespacesAndNewlines))
    let intact = fixture.holds("big.bin", body)
    #expect(intact)
    return (Int(cached.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1, direct)
  }

  @Test func aLargeBodyGoesPastThePageCacheOnExt4AndXFS() throws {
    let run = try download(environment: [:])
    #expect(run.cached >= 0)
    if run.direct {
      // The inline MiB, the first buffer and the last block at most.
      #expect(run.cached <= (1 << 20) + (4 << 20) + 8192, "\(run.cached) bytes cached")
    } else {
      #expect(run.cached >= Self.size - 8192, "\(run.cached) bytes cached")
    }
  }

  /// A body cut off past its direct blocks is never placed; the next run resumes from the
  /// checkpoint (off a block boundary: the resumed sink writes its first buffer through the page
  /// cache, then direct), gets a range that ends short, continues it, and the file comes out whole.
  @Test func aCutBodyIsNeverPlacedAndResumesThroughAShortRange() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: Self.size, seed: 72)
    let digest = Self.sha256(body)
    let manifest = { (attempts: Int) in
      """
      version: 1
      defaults:
        retry: {attempts: \(attempts), backoff: 100ms}
      sessions:
        main:
          tasks:
            - download: BASE/big.bin
              sha256: \(digest)
      """
    }
    // 6 MiB/s, so that checkpoints are made before the cut at 9 MiB.
    let cut = (9 << 20) + 5
    fixture.server.route(
      "/big.bin", .file(FileResource(body: body, etag: .strong("v1"), dropAfter: cut, rateLimit: 6 << 20)))
    fixture.manifest(manifest(1))
    let first = try fixture.run()
    #expect(first.status == 1, "\(first.stdout)\(first.stderr)")
    #expect(!fixture.folder.exists("big.bin"))
    #expect((try fixture.tasks()["big.bin"]?["error"] as? [String: Any])?["code"] as? String == "network")
    let saved = fixture.checkpointBytes()
    #expect(saved > 1 << 20 && saved <= Int64(cut), "checkpoint at \(saved)")

    let short = (10 << 20) + 3
    fixture.server.route(
      "/big.bin", .file(FileResource(body: body, etag: .strong("v1"), rangeFault: .shortRange(upper: short))))
    fixture.server.clearLog()
    fixture.manifest(manifest(2))
    let second = try fixture.run()
    #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
    #expect(try fixture.tasks()["big.bin"]?["sha256"] as? String == digest)
    let intact = fixture.holds("big.bin", body)
    #expect(intact)
    let starts = fixture.server.requests(for: "/big.bin").map(rangeOffset)
    #expect(starts == [saved, Int64(short + 1)], "\(starts)")
  }

  @Test func directWritesTurnedOffGoThroughThePageCache() throws {
    let run = try download(environment: ["BATCHDL_DIRECT_IO": "off"])
    #expect(run.cached >= Self.size - 8192, "\(run.cached) bytes cached")
  }
}
