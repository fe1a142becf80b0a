import Crypto
import Testing

@testable import BatchDL
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// How a body that fails its check is told: to the engine, as the failure of the source that sent
/// it; to the run, as the failure of a task whose file is not placed. Codes and messages are the
/// reports'.
@Suite struct BodyCheckFailureTests {
  static let body = Array("the body of a file".utf8)
  static let sha256 = SHA256.hash(data: body).hexString

  static func result(_ bytes: [UInt8]) -> TransferResult {
    TransferResult(
      head: ResponseHead(), size: Int64(bytes.count), sha256: "", file: nil, fileIdentity: nil, body: bytes,
      becameDownload: false, attempts: 2, effectiveURL: "https://example.test/f")
  }

  @Test func aBodyThatPassesFailsNothing() {
    let check = BodyCheck(size: Int64(Self.body.count), digest: ExpectedDigest(algorithm: .sha256, hex: Self.sha256))
    #expect(check.failure(of: Self.result(Self.body), by: .source) == nil)
    #expect(check.failure(of: Self.result(Self.body), by: .placement) == nil)
    #expect(BodyCheck().failure(of: Self.result(Self.body), by: .placement) == nil)
  }

  @Test func aWrongSizeFailsWithSizeMismatch() throws {
    let check = BodyCheck(size: 5)
    let source = try #require(check.failure(of: Self.result(Self.body), by: .source))
    #expect(source.code == .sizeMismatch)
    #expect(source.message == "the source sent 18 bytes where size: says 5")
    #expect(source.attempts == 2)
    let placement = try #require(check.failure(of: Self.result(Self.body), by: .placement))
    #expect(placement.code == .sizeMismatch)
    #expect(placement.message == "expected 5 bytes, received 18; nothing was written to 'to'")
    #expect(placement.attempts == 2)
  }

  @Test func aWrongDigestFailsWithChecksumMismatch() throws {
    let expected = String(repeating: "ab", count: 32)
    let check = BodyCheck(digest: ExpectedDigest(algorithm: .sha256, hex: expected))
    let source = try #require(check.failure(of: Self.result(Self.body), by: .source))
    #expect(source.code == .checksumMismatch)
    #expect(source.message == "the bytes do not have the expected SHA-256 \(expected)")
    let placement = try #require(check.failure(of: Self.result(Self.body), by: .placement))
    #expect(placement.code == .checksumMismatch)
    #expect(
      placement.message == "expected sha256 \(expected), received \(Self.sha256); nothing was written to 'to'")
    let sha512 = String(repeating: "cd", count: 64)
    let other = BodyCheck(digest: ExpectedDigest(algorithm: .sha512, hex: sha512))
    let placed = try #require(other.failure(of: Self.result(Self.body), by: .placement))
    #expect(placed.message.hasPrefix("expected sha-512 \(sha512), received "))
  }

  @Test func anUnreadableFileFailsThePlacementOnly() throws {
    var result = Self.result([])
    result.body = nil
    result.file = "/nonexistent/batchdl-check"
    result.sha256 = ""
    let check = BodyCheck(digest: ExpectedDigest(algorithm: .sha512, hex: String(repeating: "cd", count: 64)))
    #expect(check.failure(of: result, by: .source) == nil)
    let placement = try #require(check.failure(of: result, by: .placement))
    #expect(placement.code == .read)
    #expect(placement.message == "cannot read the received file to check its sha-512; nothing was written to 'to'")
  }
}
