#if canImport(Glibc)
  import Glibc
#endif

/// Number and column formatting for lines printed once per task (`status`, the progress display's
/// finished lines). Foundation's `String(format:)` and `padding(toLength:)` go through CFString and
/// cost about 20 µs a call, which is most of `status` on 100,000 tasks; these give the same text.
public enum TextFormat {
  /// `value` with `decimals` digits after the point, rounded as printf's `%.Nf` rounds (the exact
  /// binary value, ties to even). Up to 3 decimals and magnitudes below 2^53 are worked out in
  /// integers; anything else goes to `vsnprintf` (whose variadic list costs about 9,000
  /// instructions a call in Swift).
  public static func fixed(_ value: Double, decimals: Int) -> String {
    guard value.isFinite, (0...3).contains(decimals), value.magnitude < 0x1p53 else {
      return printf(value, decimals: decimals)
    }
    let scale: UInt64 = [1, 10, 100, 1000][decimals]
    var units: UInt64 = 0
    if value != 0 && value.exponent >= -64 {
      // value = significand × 2^shift exactly, with a 53-bit integer significand.
      let significand = value.significandBitPattern | (value.isNormal ? 1 << 52 : 0)
      let shift = Int(value.exponent) - 52
      let scaled = significand * scale  // < 2^63: the significand has 53 bits and scale ≤ 1000
      if shift >= 0 {
        units = scaled << UInt64(shift)
      } else if -shift < 64 {
        let dropped = UInt64(-shift)
        units = scaled >> dropped
        let rest = scaled & ((1 << dropped) - 1)
        let half: UInt64 = 1 << (dropped - 1)
        if rest > half || (rest == half && units & 1 == 1) { units += 1 }
      }
    }
    var digits = String(units)
    if decimals > 0 {
      if digits.utf8.count <= decimals {
        digits = String(repeating: "0", count: decimals + 1 - digits.utf8.count) + digits
      }
      digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -decimals))
    }
    return value.sign == .minus ? "-" + digits : digits
  }

  /// `%.Nf` through the C library.
  package static func printf(_ value: Double, decimals: Int) -> String {
    let digits = Int32(max(0, min(decimals, 9)))
    return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 352) { buffer -> String in
      guard let base = buffer.baseAddress else { return "\(value)" }
      let count = withVaList([digits, value]) { vsnprintf(base, buffer.count, "%.*f", $0) }
      guard count >= 0 else { return "\(value)" }
      return String(
        decoding: UnsafeRawBufferPointer(start: base, count: min(Int(count), buffer.count - 1)), as: UTF8.self)
    }
  }

  /// `text` cut or padded with spaces to `width` characters, as `padding(toLength:withPad:" ")`.
  public static func padded(_ text: String, to width: Int) -> String {
    let count = text.count
    if count == width { return text }
    if count > width { return String(text.prefix(width)) }
    return text + String(repeating: " ", count: width - count)
  }

  /// `value` right-aligned in `width` columns, as printf's `%Nd`.
  public static func rightAligned(_ value: Int, width: Int) -> String {
    let text = String(value)
    return text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
  }

  /// `value` with leading zeros to `width` digits, as printf's `%0Nd` (for non-negative values).
  public static func zeroPadded(_ value: Int, width: Int) -> String {
    let text = String(value)
    return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
  }
}
