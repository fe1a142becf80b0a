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

  /// Runs a 12 MiB download; returns the bytes of the file in the page cache, and whether the
  /// folder's filesystem is one batchdl writes direct on.
  func download(environment: [String: String]) throws -> (cached: Int, direct: Bool) {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: Self.size, seed: 71)
    let digest = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
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

  @Test func directWritesTurnedOffGoThroughThePageCache() throws {
    let run = try download(environment: ["BATCHDL_DIRECT_IO": "off"])
    #expect(run.cached >= Self.size - 8192, "\(run.cached) bytes cached")
  }
}
