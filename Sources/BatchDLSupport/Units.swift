/// The largest values a manifest, a list file and the command line may hold: far beyond any real
/// use, and small enough that no sum, product or conversion of them can overflow.
public enum Limits {
  /// Durations (timeouts, backoff): 3650d, about ten years.
  public static let interval = Interval(milliseconds: 3650 * 86_400_000)
  /// Sizes and rates (`size`, `cache.*`, `larger_than`, `rate_limit`): 1024TB (2^50 bytes).
  public static let bytes: Int64 = 1 << 50
  /// Counts (`max_concurrent`, `max_connections_per_host`, `retry.attempts`, `--jobs`, `--shards`).
  public static let count = 1_000_000
  /// Seconds `wait --timeout` may wait: the same ten years.
  public static let waitSeconds = Double(interval.milliseconds / 1000)
  /// What one manifest file may hold.
  public static let manifestBytes = 64 << 20
  /// What one `list:` file may hold: bytes, lines, and bytes in one line.
  public static let listBytes: Int64 = 1 << 30
  public static let listLines = 10_000_000
  public static let listLineBytes = 1 << 20
}

/// A number as written in a manifest: its value, or why it has none.
package enum Parsed<Value> {
  case value(Value)
  /// Well formed, but too large for a 64-bit count.
  case tooLarge
  case invalid
}

/// A byte count written as `123`, `10KB`, `20MB`, `1GB` or `2TB` (powers of 1024).
public enum ByteSize {
  private static let units: [(suffix: String, factor: Int64)] = [
    ("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10),
    ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10),
    ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1),
  ]

  /// Parses a size; nil when the text is not one (or is too large to count).
  public static func parse(_ text: String) -> Int64? {
    if case .value(let bytes) = parsed(text) { return bytes }
    return nil
  }

  package static func parsed(_ text: String) -> Parsed<Int64> {
    let trimmed = text.trimmingSpaces
    for unit in units where trimmed.hasSuffix(unit.suffix) {
      let number = String(trimmed.dropLast(unit.suffix.count)).trimmingSpaces
      return scaled(number, by: unit.factor)
    }
    return scaled(trimmed, by: 1)
  }

  private static func scaled(_ number: String, by factor: Int64) -> Parsed<Int64> {
    if let whole = Int64(number), whole >= 0 {
      let (product, overflow) = whole.multipliedReportingOverflow(by: factor)
      return overflow ? .tooLarge : .value(product)
    }
    if isDigits(number) { return .tooLarge }
    guard factor > 1, number.contains("."), let fraction = Double(number), fraction >= 0, fraction.isFinite else {
      return .invalid
    }
    guard fraction * Double(factor) < 9.0e18 else { return .tooLarge }
    return .value(Int64(fraction * Double(factor)))
  }

  /// The shortest exact spelling of `bytes` (`10MB`, `1536`), as the manifest would write it.
  public static func format(_ bytes: Int64) -> String {
    for unit in units.prefix(4) where bytes >= unit.factor && bytes % unit.factor == 0 {
      return "\(bytes / unit.factor)\(unit.suffix)"
    }
    return "\(bytes)"
  }
}

/// A length of time in milliseconds, written as `500ms`, `30s`, `5m`, `2h` or `7d`.
public struct Interval: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var milliseconds: Int64

  public init(milliseconds: Int64) {
    self.milliseconds = milliseconds
  }

  /// `value` seconds; values past what milliseconds can hold become the largest interval.
  public static func seconds(_ value: Int64) -> Interval {
    let (product, overflow) = value.multipliedReportingOverflow(by: 1000)
    return Interval(milliseconds: overflow ? (value < 0 ? .min : .max) : product)
  }

  private static let units: [(suffix: String, factor: Int64)] = [
    ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000),
  ]

  /// Parses an interval; nil when the text is not one (or is too long to count in milliseconds).
  /// A bare number is seconds.
  public static func parse(_ text: String) -> Interval? {
    if case .value(let interval) = parsed(text) { return interval }
    return nil
  }

  package static func parsed(_ text: String) -> Parsed<Interval> {
    let trimmed = text.trimmingSpaces
    if isDigits(trimmed) { return scaled(trimmed, by: 1000) }
    for unit in units where trimmed.hasSuffix(unit.suffix) {
      let number = String(trimmed.dropLast(unit.suffix.count)).trimmingSpaces
      if unit.suffix == "m" && number.hasSuffix("m") { continue }
      return scaled(number, by: unit.factor)
    }
    return .invalid
  }

  private static func scaled(_ number: String, by factor: Int64) -> Parsed<Interval> {
    if let whole = Int64(number), whole >= 0 {
      let (product, overflow) = whole.multipliedReportingOverflow(by: factor)
      return overflow ? .tooLarge : .value(Interval(milliseconds: product))
    }
    if isDigits(number) { return .tooLarge }
    guard let fraction = Double(number), fraction >= 0, fraction.isFinite else { return .invalid }
    guard fraction * Double(factor) < 9.0e18 else { return .tooLarge }
    return .value(Interval(milliseconds: Int64(fraction * Double(factor))))
  }

  public var description: String {
    for unit in Self.units.reversed() where milliseconds >= unit.factor && milliseconds % unit.factor == 0 {
      return "\(milliseconds / unit.factor)\(unit.suffix)"
    }
    return "\(milliseconds)ms"
  }

  public static func < (lhs: Interval, rhs: Interval) -> Bool { lhs.milliseconds < rhs.milliseconds }
}

/// Whether `text` is an optional `+` and one or more ASCII digits (what `Int64(_:)` reads when it fits).
package func isDigits(_ text: String) -> Bool {
  var digits = Substring(text)
  if digits.first == "+" { digits = digits.dropFirst() }
  return !digits.isEmpty && digits.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
}

extension String {
  package var trimmingSpaces: String {
    var view = Substring(self)
    while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
    while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
    return String(view)
  }
}
