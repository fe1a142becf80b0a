/// A byte count written as `123`, `10KB`, `20MB`, `1GB` or `2TB` (powers of 1024).
public enum ByteSize {
  private static let units: [(suffix: String, factor: Int64)] = [
    ("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10),
    ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10),
    ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1),
  ]

  /// Parses a size; nil when the text is not one.
  public static func parse(_ text: String) -> Int64? {
    let trimmed = text.trimmingSpaces
    for unit in units where trimmed.hasSuffix(unit.suffix) {
      let number = String(trimmed.dropLast(unit.suffix.count)).trimmingSpaces
      return scaled(number, by: unit.factor)
    }
    return scaled(trimmed, by: 1)
  }

  private static func scaled(_ number: String, by factor: Int64) -> Int64? {
    if let whole = Int64(number), whole >= 0 {
      let (product, overflow) = whole.multipliedReportingOverflow(by: factor)
      return overflow ? nil : product
    }
    guard factor > 1, number.contains("."), let fraction = Double(number), fraction >= 0,
      fraction.isFinite, fraction * Double(factor) < 9.0e18
    else { return nil }
    return Int64(fraction * Double(factor))
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

  public static func seconds(_ value: Int64) -> Interval { Interval(milliseconds: value * 1000) }

  private static let units: [(suffix: String, factor: Int64)] = [
    ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000),
  ]

  /// Parses an interval; nil when the text is not one. A bare number is seconds.
  public static func parse(_ text: String) -> Interval? {
    let trimmed = text.trimmingSpaces
    if let seconds = Int64(trimmed), seconds >= 0 { return .seconds(seconds) }
    for unit in units where trimmed.hasSuffix(unit.suffix) {
      let number = String(trimmed.dropLast(unit.suffix.count)).trimmingSpaces
      if unit.suffix == "m" && number.hasSuffix("m") { continue }
      if let whole = Int64(number), whole >= 0 {
        let (product, overflow) = whole.multipliedReportingOverflow(by: unit.factor)
        return overflow ? nil : Interval(milliseconds: product)
      }
      if let fraction = Double(number), fraction >= 0, fraction.isFinite,
        fraction * Double(unit.factor) < 9.0e18
      {
        return Interval(milliseconds: Int64(fraction * Double(unit.factor)))
      }
      return nil
    }
    return nil
  }

  public var description: String {
    for unit in Self.units.reversed() where milliseconds >= unit.factor && milliseconds % unit.factor == 0 {
      return "\(milliseconds / unit.factor)\(unit.suffix)"
    }
    return "\(milliseconds)ms"
  }

  public static func < (lhs: Interval, rhs: Interval) -> Bool { lhs.milliseconds < rhs.milliseconds }
}

extension String {
  var trimmingSpaces: String {
    var view = Substring(self)
    while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
    while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
    return String(view)
  }
}
