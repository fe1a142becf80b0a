import Crypto

/// SHA-256 digests of uploads, as lowercase hex.
public enum SHA256Digest {
  /// The digest of `bytes` as 64 lowercase hex digits.
  public static func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(64)
    for byte in SHA256.hash(data: bytes) {
      out.append(digits[Int(byte >> 4)])
      out.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
  }
}
