import Crypto
import Foundation

/// Digests other than the SHA-256 every download computes as it goes: a Metalink document may
/// give only SHA-512 (or, with a warning, SHA-1 or MD5). Computed with swift-crypto on the
/// finished file before it is put in place.
package enum FileDigest {
  /// The hex digest of the file at `path`, or nil when it cannot be read.
  package static func hex(of path: String, algorithm: DigestAlgorithm) -> String? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return hex(of: path, extents: [ByteExtent(start: 0, end: Int64(info.st_size))], algorithm: algorithm)?.first
  }

  /// The hex digests of the file at `path` over each of `extents` (in any order), or nil when it
  /// cannot be read whole.
  package static func hex(of path: String, extents: [ByteExtent], algorithm: DigestAlgorithm) -> [String]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var digests: [String] = []
    digests.reserveCapacity(extents.count)
    for extent in extents {
      var hasher = AnyHasher(algorithm)
      var position = extent.start
      while position < extent.end {
        let want = Int(min(Int64(buffer.count), extent.end - position))
        let count = buffer.withUnsafeMutableBytes {
          SystemCalls.preadRetrying(fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: position)
        }
        if count <= 0 { return nil }
        buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        position += Int64(count)
      }
      digests.append(hasher.finalize())
    }
    return digests
  }

  /// The hex digest of `bytes`.
  package static func hex(of bytes: [UInt8], algorithm: DigestAlgorithm) -> String {
    var hasher = AnyHasher(algorithm)
    bytes.withUnsafeBytes { hasher.update($0) }
    return hasher.finalize()
  }

  private enum AnyHasher {
    case sha256(SHA256)
    case sha512(SHA512)
    case sha1(Insecure.SHA1)
    case md5(Insecure.MD5)

    init(_ algorithm: DigestAlgorithm) {
      switch algorithm {
      case .sha256: self = .sha256(SHA256())
      case .sha512: self = .sha512(SHA512())
      case .sha1: self = .sha1(Insecure.SHA1())
      case .md5: self = .md5(Insecure.MD5())
      }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
      switch self {
      case .sha256(var hasher):
        hasher.update(bufferPointer: bytes)
        self = .sha256(hasher)
      case .sha512(var hasher):
        hasher.update(bufferPointer: bytes)
        self = .sha512(hasher)
      case .sha1(var hasher):
        hasher.update(bufferPointer: bytes)
        self = .sha1(hasher)
      case .md5(var hasher):
        hasher.update(bufferPointer: bytes)
        self = .md5(hasher)
      }
    }

    func finalize() -> String {
      switch self {
      case .sha256(let hasher): return hasher.finalize().hexString
      case .sha512(let hasher): return hasher.finalize().hexString
      case .sha1(let hasher): return hasher.finalize().hexString
      case .md5(let hasher): return hasher.finalize().hexString
      }
    }
  }
}
