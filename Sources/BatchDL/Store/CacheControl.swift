import Foundation

/// The `Cache-Control` directives of a response that `HTTPCache` acts on (RFC 9111 §5.2.2).
///
/// Directive names are case-insensitive; values may be tokens or quoted strings. Directives the
/// cache has no use for (`private`, `public`, `s-maxage`, `proxy-revalidate`, `immutable`,
/// `stale-while-revalidate`...) are ignored: this is a private cache without stale serving.
struct CacheControl: Equatable {
  /// `max-age` in seconds, nil when absent. The first occurrence wins; a value that is not a
  /// number reads as 0 (stale), and values above 2^31 are capped (RFC 9111 §1.2.2).
  var maxAge: Int?
  var noStore = false
  /// `no-cache`, with or without field names (a qualified `no-cache="..."` is treated like the
  /// plain one: the whole response must be revalidated).
  var noCache = false
  var mustRevalidate = false

  /// The directives of every `Cache-Control` field line of `head`, taken together.
  init(_ head: ResponseHead) {
    self.init(head.fields.lazy.filter { $0.name == "cache-control" }.map(\.value).joined(separator: ","))
  }

  /// The directives of one field value (`max-age=60, must-revalidate`).
  init(_ value: String) {
    for directive in Self.split(value) {
      let (name, argument) = Self.nameAndArgument(directive)
      switch name {
      case "max-age":
        if maxAge == nil { maxAge = argument.flatMap(Self.deltaSeconds) ?? 0 }
      case "no-store": noStore = true
      case "no-cache": noCache = true
      case "must-revalidate": mustRevalidate = true
      default: break
      }
    }
  }

  /// The directives of a field value, split at commas outside quoted strings, trimmed, empty ones
  /// dropped.
  private static func split(_ value: String) -> [Substring] {
    var parts: [Substring] = []
    var start = value.startIndex
    var quoted = false
    var escaped = false
    var index = value.startIndex
    while index < value.endIndex {
      let character = value[index]
      if escaped {
        escaped = false
      } else if quoted && character == "\\" {
        escaped = true
      } else if character == "\"" {
        quoted.toggle()
      } else if character == "," && !quoted {
        parts.append(value[start..<index])
        start = value.index(after: index)
      }
      index = value.index(after: index)
    }
    parts.append(value[start...])
    return parts.map { $0.trimmingCharacters(in: .whitespaces)[...] }.filter { !$0.isEmpty }
  }

  /// `name` lower-cased, and the argument after `=` (unquoted), if any.
  private static func nameAndArgument(_ directive: Substring) -> (String, String?) {
    guard let equals = directive.firstIndex(of: "=") else {
      return (directive.trimmingCharacters(in: .whitespaces).lowercased(), nil)
    }
    let name = directive[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
    var argument = directive[directive.index(after: equals)...].trimmingCharacters(in: .whitespaces)
    if argument.count >= 2, argument.hasPrefix("\""), argument.hasSuffix("\"") {
      var unquoted = ""
      var escaped = false
      for character in argument.dropFirst().dropLast() {
        if !escaped && character == "\\" {
          escaped = true
          continue
        }
        escaped = false
        unquoted.append(character)
      }
      argument = unquoted
    }
    return (name, argument)
  }

  /// A `delta-seconds` value: digits only, capped at 2^31; nil when it is not one.
  static func deltaSeconds(_ text: String) -> Int? {
    guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
    let cap = 1 << 31
    var value = 0
    for digit in text.utf8 {
      value = value * 10 + Int(digit - 0x30)
      if value >= cap { return cap }
    }
    return value
  }
}

/// How long a stored response stays fresh, and how old it is (RFC 9111 §4.2, simplified).
enum Freshness {
  /// The freshness lifetime in seconds: `max-age`, else `Expires` minus `Date` (the time stored
  /// when `Date` is missing or invalid), else 0. There is no heuristic freshness: a response
  /// with neither is stale at once. An invalid `Expires` (`0`, `-1`...) means stale.
  static func lifetime(of head: ResponseHead, control: CacheControl, stored: Date) -> TimeInterval {
    if let maxAge = control.maxAge { return TimeInterval(maxAge) }
    guard let expiresText = first("expires", in: head) else { return 0 }
    guard let expires = HTTPDate.parse(expiresText) else { return 0 }
    let date = first("date", in: head).flatMap(HTTPDate.parse) ?? stored
    return max(0, expires.timeIntervalSince(date))
  }

  /// The current age in seconds: the time since `stored` (never negative) plus the `Age` field,
  /// when it is a valid number. No correction for the response delay or apparent age.
  static func age(of head: ResponseHead, stored: Date, now: Date) -> TimeInterval {
    let resident = max(0, now.timeIntervalSince(stored))
    let initial = first("age", in: head).flatMap { CacheControl.deltaSeconds($0.trimmingSpaces) } ?? 0
    return resident + TimeInterval(initial)
  }

  /// The first value of `name`: RFC 9111 lets a cache use the first of repeated `Expires`/`Date`.
  private static func first(_ name: String, in head: ResponseHead) -> String? {
    head.fields.first { $0.name == name }?.value
  }
}

/// HTTP-date parsing (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms.
enum HTTPDate {
  private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

  /// The date `text` names, or nil when it is not an HTTP-date. Accepts
  /// `Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94 08:49:37 GMT` (two-digit years 00–49
  /// are 20xx, 50–99 are 19xx) and `Sun Nov  6 08:49:37 1994`. The weekday is not checked
  /// against the date; month names and `GMT` are matched without regard to case.
  static func parse(_ text: String) -> Date? {
    let tokens = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
    let day: String
    let month: String
    let year: String
    let time: String
    if tokens.count == 6, tokens[0].hasSuffix(","), tokens[5].uppercased() == "GMT" {
      (day, month, year, time) = (tokens[1], tokens[2], tokens[3], tokens[4])
    } else if tokens.count == 4, tokens[0].hasSuffix(","), tokens[3].uppercased() == "GMT" {
      let parts = tokens[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
      guard parts.count == 3 else { return nil }
      (day, month, year, time) = (parts[0], parts[1], parts[2], tokens[2])
    } else if tokens.count == 5, !tokens[0].hasSuffix(",") {
      (day, month, year, time) = (tokens[2], tokens[1], tokens[4], tokens[3])
    } else {
      return nil
    }
    guard let monthIndex = months.firstIndex(of: month.lowercased()), (1...2).contains(day.count),
      let dayNumber = number(day), var yearNumber = number(year), year.count == 2 || year.count == 4
    else { return nil }
    if year.count == 2 { yearNumber += yearNumber < 50 ? 2000 : 1900 }
    let clock = time.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }), let hour = number(clock[0]),
      let minute = number(clock[1]), let second = number(clock[2]), hour < 24, minute < 60, second <= 60,
      dayNumber >= 1, dayNumber <= daysIn(month: monthIndex + 1, year: yearNumber)
    else { return nil }
    let days = daysFromCivil(year: yearNumber, month: monthIndex + 1, day: dayNumber)
    return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
  }

  private static func number(_ text: String) -> Int? {
    guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
    return Int(text)
  }

  private static func daysIn(month: Int, year: Int) -> Int {
    switch month {
    case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
  }

  /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
  private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
    let shifted = month <= 2 ? year - 1 : year
    let era = (shifted >= 0 ? shifted : shifted - 399) / 400
    let yearOfEra = shifted - era * 400
    let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
  }
}
