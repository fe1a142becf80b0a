import BatchDLTransfer
import Foundation

/// The `Cache-Control` directives of a response that `HTTPCache` acts on (RFC 9111 §5.2.2).
///
/// Directive names are case-insensitive; values may be tokens or quoted strings. Directives the
/// cache has no use for (`private`, `public`, `s-maxage`, `proxy-revalidate`, `immutable`,
/// `stale-while-revalidate`...) are ignored: this is a private cache without stale serving.
package struct CacheControl: Equatable {
  /// `max-age` in seconds, nil when absent. The first occurrence wins; a value that is not a
  /// number reads as 0 (stale), and values above 2^31 are capped (RFC 9111 §1.2.2).
  package var maxAge: Int?
  package var noStore = false
  /// `no-cache`, with or without field names (a qualified `no-cache="..."` is treated like the
  /// plain one: the whole response must be revalidated).
  package var noCache = false
  package var mustRevalidate = false

  /// The directives of every `Cache-Control` field line of `head`, taken together.
  package init(_ head: ResponseHead) {
    self.init(head.fields.lazy.filter { $0.name == "cache-control" }.map(\.value).joined(separator: ","))
  }

  /// The directives of one field value (`max-age=60, must-revalidate`).
  package init(_ value: String) {
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
  package static func deltaSeconds(_ text: String) -> Int? {
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
package enum Freshness {
  /// The freshness lifetime in seconds: `max-age`, else `Expires` minus `Date` (the time stored
  /// when `Date` is missing or invalid), else 0. There is no heuristic freshness: a response
  /// with neither is stale at once. An invalid `Expires` (`0`, `-1`...) means stale.
  package static func lifetime(of head: ResponseHead, control: CacheControl, stored: Date) -> TimeInterval {
    if let maxAge = control.maxAge { return TimeInterval(maxAge) }
    guard let expiresText = first("expires", in: head) else { return 0 }
    guard let expires = HTTPDate.parse(expiresText) else { return 0 }
    let date = first("date", in: head).flatMap(HTTPDate.parse) ?? stored
    return max(0, expires.timeIntervalSince(date))
  }

  /// The current age in seconds: the time since `stored` (never negative) plus the `Age` field,
  /// when it is a valid number. No correction for the response delay or apparent age.
  package static func age(of head: ResponseHead, stored: Date, now: Date) -> TimeInterval {
    let resident = max(0, now.timeIntervalSince(stored))
    let initial = first("age", in: head).flatMap { CacheControl.deltaSeconds($0.trimmingSpaces) } ?? 0
    return resident + TimeInterval(initial)
  }

  /// The first value of `name`: RFC 9111 lets a cache use the first of repeated `Expires`/`Date`.
  private static func first(_ name: String, in head: ResponseHead) -> String? {
    head.fields.first { $0.name == name }?.value
  }
}
