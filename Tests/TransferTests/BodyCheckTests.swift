import Crypto
import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// Whether a body is what its task expects, by everything the task has: the one rule the engine
/// (sources, pieces, segments, repair) and the run (before it places a file) go through. Each row:
/// what is expected, what arrived, and where it is (in memory or in a file).
@Suite struct BodyCheckTests {
  static let body = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
  static let pieceLength: Int64 = 16 << 10

  static func hex(_ bytes: [UInt8], _ algorithm: DigestAlgorithm = .sha256) -> String {
    FileDigest.hex(of: bytes, algorithm: algorithm)
  }

  static var pieces: PieceDigests {
    let hashes = stride(from: 0, to: body.count, by: Int(pieceLength)).map {
      hex(Array(body[$0..<min($0 + Int(pieceLength), body.count)]))
    }
    return PieceDigests(length: pieceLength, algorithm: .sha256, hashes: hashes)
  }

  /// The body with one byte changed at `offset`.
  static func corrupted(at offset: Int) -> [UInt8] {
    var bytes = body
    bytes[offset] ^= 0xFF
    return bytes
  }

  enum Expect: String, CaseIterable, Sendable {
    case nothing, size, sha256, sha512, pieces, sha256AndPieces, sizeAndPieces
  }

  enum Arrived: String, CaseIterable, Sendable {
    case right, badSecondPiece, short
  }

  static func check(_ expect: Expect) -> BodyCheck {
    let size = Int64(body.count)
    switch expect {
    case .nothing: return BodyCheck()
    case .size: return BodyCheck(size: size)
    case .sha256: return BodyCheck(digest: ExpectedDigest(algorithm: .sha256, hex: hex(body)))
    case .sha512: return BodyCheck(digest: ExpectedDigest(algorithm: .sha512, hex: hex(body, .sha512)))
    case .pieces: return BodyCheck(pieces: pieces)
    case .sha256AndPieces:
      return BodyCheck(digest: ExpectedDigest(algorithm: .sha256, hex: hex(body)), pieces: pieces)
    case .sizeAndPieces: return BodyCheck(size: size, pieces: pieces)
    }
  }

  static func bytes(_ arrived: Arrived) -> [UInt8] {
    switch arrived {
    case .right: body
    case .badSecondPiece: corrupted(at: Int(pieceLength) + 5)
    case .short: Array(body.dropLast(100))
    }
  }

  /// The verdict each row must give.
  static func expected(_ expect: Expect, _ arrived: Arrived) -> BodyCheck.Verdict {
    switch (expect, arrived) {
    case (.nothing, _): return .nothingExpected
    case (_, .right): return .verified
    case (.size, .badSecondPiece): return .verified  // the size is all it has
    case (.size, .short), (.sizeAndPieces, .short): return .wrongSize(expected: Int64(body.count))
    case (.sha256, let arrived), (.sha512, let arrived):
      let algorithm: DigestAlgorithm = expect == .sha256 ? .sha256 : .sha512
      return .wrongDigest(received: hex(bytes(arrived), algorithm))
    case (.pieces, .badSecondPiece), (.sha256AndPieces, .badSecondPiece), (.sizeAndPieces, .badSecondPiece):
      return .badPieces([1])
    case (.pieces, .short), (.sha256AndPieces, .short):
      // 40,000 - 100 bytes still make three pieces of 16 KiB: the last one is what differs.
      return .badPieces([2])
    }
  }

  @Test(arguments: Expect.allCases, Arrived.allCases)
  func everyDigestTheTaskHasIsChecked(expect: Expect, arrived: Arrived) throws {
    let bytes = Self.bytes(arrived)
    let check = Self.check(expect)
    let want = Self.expected(expect, arrived)
    // In memory, with the SHA-256 computed as the body streamed, and without it.
    #expect(check.verdict(size: Int64(bytes.count), sha256: Self.hex(bytes), body: .memory(bytes)) == want)
    #expect(check.verdict(size: Int64(bytes.count), sha256: "", body: .memory(bytes)) == want)
    // In a file, read back.
    let folder = TemporaryDirectory()
    let path = folder.path + "/body"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    #expect(check.verdict(size: Int64(bytes.count), sha256: Self.hex(bytes), body: .file(path)) == want)
  }

  @Test func aBodyThatDoesNotFitItsPiecesIsWrongWhateverItsBytes() {
    let longer = Self.body + [UInt8](repeating: 0, count: Int(Self.pieceLength))
    #expect(
      BodyCheck(pieces: Self.pieces).verdict(size: Int64(longer.count), sha256: "", body: .memory(longer))
        == .piecesDoNotFit)
  }

  @Test func everyPiecePassingDoesNotExcuseAWrongWholeDigest() {
    let check = BodyCheck(
      digest: ExpectedDigest(algorithm: .sha256, hex: String(repeating: "0", count: 64)), pieces: Self.pieces)
    #expect(
      check.verdict(size: Int64(Self.body.count), sha256: "", body: .memory(Self.body))
        == .wrongDigest(received: Self.hex(Self.body)))
  }

  @Test func aFileThatCannotBeReadIsNotVerified() {
    let path = TemporaryDirectory().path + "/missing"
    #expect(BodyCheck(pieces: Self.pieces).verdict(size: 40_000, sha256: "", body: .file(path)) == .unreadable)
    let sha512 = BodyCheck(digest: ExpectedDigest(algorithm: .sha512, hex: Self.hex(Self.body, .sha512)))
    #expect(sha512.verdict(size: 40_000, sha256: "", body: .file(path)) == .unreadable)
  }
}
