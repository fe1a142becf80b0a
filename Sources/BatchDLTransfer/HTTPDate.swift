import Foundation

/// HTTP-date parsing (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms.
package enum HTTPDate {
  private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

  /// The date `text` names, or nil when it is not an HTTP-date. Accepts
  /// `Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94 08:49:37 GMT` (two-digit years 00–49
  /// are 20xx, 50–99 are 19xx) and `Sun Nov  6 08:49:37 1994`. The weekday is not checked
  /// against the date; month names and `GMT` are matched without regard to case.
  package static func parse(_ text: String) -> Date? {
    // Servers send IMF-fixdate: read from its bytes, without a String per token (every placed
    // file's Last-Modified comes here); any other text takes the general path below.
    if let date = text.utf8.withContiguousStorageIfAvailable(fixdate) ?? nil { return date }
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

  /// `Sun, 06 Nov 1994 08:49:37 GMT` exactly; nil for anything else (the general path decides).
  private static func fixdate(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
    guard bytes.count == 29, bytes[0..<3].allSatisfy({ ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A }), bytes[3] == 0x2C,
      bytes[4] == 0x20, bytes[7] == 0x20, bytes[11] == 0x20,
      bytes[16] == 0x20, bytes[19] == 0x3A, bytes[22] == 0x3A, bytes[25] == 0x20,
      bytes[26] | 0x20 == 0x67, bytes[27] | 0x20 == 0x6D, bytes[28] | 0x20 == 0x74
    else { return nil }
    func digits(_ start: Int, _ count: Int) -> Int? {
      var value = 0
      for index in start..<start + count {
        guard (0x30...0x39).contains(bytes[index]) else { return nil }
        value = value * 10 + Int(bytes[index] - 0x30)
      }
      return value
    }
    let month = String(decoding: UnsafeBufferPointer(rebasing: bytes[8..<11]), as: UTF8.self).lowercased()
    guard let monthIndex = months.firstIndex(of: month), let day = digits(5, 2), let year = digits(12, 4),
      let hour = digits(17, 2), let minute = digits(20, 2), let second = digits(23, 2), hour < 24, minute < 60,
      second <= 60, day >= 1, day <= daysIn(month: monthIndex + 1, year: year)
    else { return nil }
    let days = daysFromCivil(year: year, month: monthIndex + 1, day: day)
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
