#if canImport(Glibc)
  import Glibc
#endif

/// Number and column formatting for lines printed once per task (`status`, the progress display's
/// finished lines). Foundation's `String(format:)` and `padding(toLength:)` go through CFString and
/// cost about 20 µs a call, which is most of `status` on 100,000 tasks; these give the same text.
public enum TextFormat {
  /// `value` with `decimals` digits after the point, rounded as printf's `%.Nf` rounds.
  public static func fixed(_ value: Double, decimals: Int) -> String {
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
