import Crypto

/// Hexadecimal digits, written and read in one place: digests and request keys in lower case,
/// `%XX` in URLs (URL normalization) and in the spellings of secrets (the redactor).
package enum Hex {
  package static var lowerDigits: StaticString { "0123456789abcdef" }
  package static var upperDigits: StaticString { "0123456789ABCDEF" }

  /// The value of the digit `byte` (UTF-8, either case); nil when it is not one.
  package static func value(of byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: return byte - 0x30
    case 0x41...0x46: return byte - 0x41 + 10
    case 0x61...0x66: return byte - 0x61 + 10
    default: return nil
    }
  }

  /// `bytes` with every `%XX` decoded (a `%` without two hex digits after it stays as it is).
  package static func percentDecoded(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var index = 0
    while index < bytes.count {
      if bytes[index] == 0x25, index + 2 < bytes.count, let high = Hex.value(of: bytes[index + 1]),
        let low = Hex.value(of: bytes[index + 2])
      {
        out.append(high << 4 | low)
        index += 3
      } else {
        out.append(bytes[index])
        index += 1
      }
    }
    return out
  }

  /// Appends `byte` as `%XX`, its digits upper- or lower-case.
  package static func appendPercentEncoded(_ byte: UInt8, to out: inout [UInt8], upperCase: Bool) {
    (upperCase ? upperDigits : lowerDigits).withUTF8Buffer { digits in
      out.append(0x25)
      out.append(digits[Int(byte >> 4)])
      out.append(digits[Int(byte & 0xF)])
    }
  }
}

extension Sequence where Element == UInt8 {
  package var hexString: String {
    Array(self).withUnsafeBytes { hexDigits($0) }
  }
}

extension Digest {
  package var hexString: String { withUnsafeBytes { hexDigits($0) } }
}

/// Lower-case hexadecimal digits of `bytes`, written straight into the string's storage (every
/// finished file's checksum and every request key goes through here).
package func hexDigits(_ bytes: UnsafeRawBufferPointer) -> String {
  String(unsafeUninitializedCapacity: bytes.count * 2) { out in
    writeHexDigits(of: bytes, into: out)
    return bytes.count * 2
  }
}

/// Writes the lower-case hexadecimal digits of `bytes` into the first `2 × bytes.count` of `out`.
package func writeHexDigits(of bytes: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>) {
  Hex.lowerDigits.withUTF8Buffer { digits in
    for (index, byte) in bytes.enumerated() {
      out[index * 2] = digits[Int(byte >> 4)]
      out[index * 2 + 1] = digits[Int(byte & 0xF)]
    }
  }
}
