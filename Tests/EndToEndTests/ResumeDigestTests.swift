import Foundation
import TestServer
import TestSupport
import Testing

/// A download resumed in a later run whose joined bytes fail the task's `sha256:` (the file changed
/// upstream under the same validators) is fetched again whole, once, before it fails
/// (docs/sources.md).
@Suite struct ResumeDigestTests {
  /// One download of `/big.bin` expecting `sha256`.
  static func manifest(sha256: String) -> String {
    """
    version: 1
    defaults:
      retry: {attempts: 2, backoff: 100ms}
    sessions:
      main:
        tasks:
          - download: BASE/big.bin
            sha256: \(sha256)
    """
  }

  /// Interrupts a download of `old` under `ETag: "v1"`, then serves `new` under the same ETag.
  func interrupted(old: [UInt8], new: [UInt8], expecting sha256: String) throws -> RunFixture {
    let fixture = try RunFixture()
    fixture.server.route("/big.bin", trickling(old, etag: "v1"))
    fixture.manifest(Self.manifest(sha256: sha256))
    _ = try fixture.interrupt(signal: SIGKILL)
    #expect(fixture.checkpointBytes() > 0)
    fixture.server.route("/big.bin", .file(FileResource(body: new, etag: .strong("v1"))))
    fixture.server.clearLog()
    return fixture
  }

  @Test func aJoinedFileThatFailsTheDigestIsFetchedAgainWhole() throws {
    let old = TestData.pseudoRandomBytes(count: 3 << 20, seed: 51)
    let new = TestData.pseudoRandomBytes(count: 3 << 20, seed: 52)
    let fixture = try interrupted(old: old, new: new, expecting: SHA256Digest.hex(new))
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.holds("big.bin", new))
    let exchanges = fixture.server.exchanges(for: "/big.bin")
    #expect(exchanges.count == 2, "\(exchanges)")
    #expect(exchanges.first?.ifRange == "\"v1\"" && exchanges.first?.status == 206)
    #expect(exchanges.last?.range == nil && exchanges.last?.status == 200)
    #expect(try fixture.tasks()["big.bin"]?["resumed_from"] as? Int == 0)
    #expect(!fixture.folder.exists("big.bin.batchdl-part"))
  }

  @Test func aFileThatFailsTheDigestWholeTooFailsAfterOneWholeFetch() throws {
    let old = TestData.pseudoRandomBytes(count: 3 << 20, seed: 53)
    let new = TestData.pseudoRandomBytes(count: 3 << 20, seed: 54)
    let fixture = try interrupted(old: old, new: new, expecting: String(repeating: "ab", count: 32))
    let result = try fixture.run()
    #expect(result.status == 1)
    #expect(!fixture.folder.exists("big.bin"))
    let exchanges = fixture.server.exchanges(for: "/big.bin")
    #expect(exchanges.map(\.status) == [206, 200], "one resumed request, one whole, no more")
    let error = try #require(try fixture.tasks()["big.bin"]?["error"] as? [String: Any])
    #expect(error["code"] as? String == "checksum-mismatch", "\(error)")
  }
}
