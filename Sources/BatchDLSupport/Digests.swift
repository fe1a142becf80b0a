import Crypto
import Foundation

/// A digest algorithm a download can be checked with, strongest first.
public enum DigestAlgorithm: String, CaseIterable, Sendable, Comparable {
  case sha256 = "sha-256"
  case sha512 = "sha-512"
  case sha1 = "sha-1"
  case md5

  /// The algorithm a Metalink `type` (or checksum tag) names: `sha-256`, `sha256`, `SHA-256`...
  public init?(named text: String) {
    let name = text.trimmingSpaces.lowercased().replacingOccurrences(of: "-", with: "")
    switch name {
    case "sha256": self = .sha256
    case "sha512": self = .sha512
    case "sha1": self = .sha1
    case "md5": self = .md5
    default: return nil
    }
  }

  /// Hexadecimal digits in one digest.
  public var hexLength: Int {
    switch self {
    case .sha256: return 64
    case .sha512: return 128
    case .sha1: return 40
    case .md5: return 32
    }
  }

  /// False for MD5 and SHA-1, which collisions can be made for.
  public var isStrong: Bool { self == .sha256 || self == .sha512 }

  /// The order of preference: SHA-256 (what every download computes anyway), SHA-512, SHA-1, MD5.
  package var rank: Int {
    switch self {
    case .sha256: return 0
    case .sha512: return 1
    case .sha1: return 2
    case .md5: return 3
    }
  }

  public static func < (lhs: DigestAlgorithm, rhs: DigestAlgorithm) -> Bool { lhs.rank < rhs.rank }
}

/// An expected digest: the algorithm and its lower-case hexadecimal value.
public struct ExpectedDigest: Hashable, Sendable {
  public var algorithm: DigestAlgorithm
  public var hex: String

  public init(algorithm: DigestAlgorithm, hex: String) {
    self.algorithm = algorithm
    self.hex = hex
  }

  /// `text` as a digest of `algorithm` (spaces around it dropped, upper case accepted), or why not.
  public static func parse(_ text: String, algorithm: DigestAlgorithm) -> Result<ExpectedDigest, DigestProblem> {
    let lowered = text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    if let bad = lowered.first(where: { !("0"..."9").contains($0) && !("a"..."f").contains($0) }) {
      return .failure(
        DigestProblem(
          "a \(algorithm.rawValue) hash is \(algorithm.hexLength) hexadecimal digits (0-9, a-f), found '\(ShownText.escaped(String(bad)))'"
        ))
    }
    guard lowered.count == algorithm.hexLength else {
      return .failure(
        DigestProblem(
          "a \(algorithm.rawValue) hash is \(algorithm.hexLength) hexadecimal digits, found \(lowered.count)"))
    }
    return .success(ExpectedDigest(algorithm: algorithm, hex: lowered))
  }
}

/// Why a text is not a digest of an algorithm.
public struct DigestProblem: Error, Hashable, Sendable {
  public var message: String
  public init(_ message: String) { self.message = message }
}
