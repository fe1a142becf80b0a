/// The dates of an APT Release file (`Date`, `Valid-Until`): RFC 2822 dates as Debian writes them,
/// `Sat, 28 Nov 2026 10:00:00 UTC`, read as seconds since 1970-01-01 UTC.
///
/// Read: an optional day name and comma, a day of one or two digits, an English month
/// abbreviation, a four-digit year, `HH:MM` with optional `:SS`, and the zone `UTC`, `GMT`, `Z` or
/// a numeric offset `+HHMM` / `-HHMM` (applied). The day name is not checked against the date.
public enum AptDate {
  static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
  static let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

  /// Seconds since 1970-01-01 00:00:00 UTC of `text`, or nil when it is no such date.
  public static func seconds(_ text: [UInt8]) -> Int64? {
    var words = text.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 }).map { Array($0) }
    if let first = words.first, first.last == 0x2C {
      guard days.contains(lower(first.dropLast())) else { return nil }
      words.removeFirst()
    }
    guard words.count == 5,
      let day = number(words[0], digits: 1...2), let monthIndex = months.firstIndex(of: lower(words[1][...])),
      let year = number(words[2], digits: 4...4)
    else { return nil }
    let time = words[3].split(separator: 0x3A, omittingEmptySubsequences: false)
    guard time.count == 2 || time.count == 3,
      let hour = number(Array(time[0]), digits: 2...2), let minute = number(Array(time[1]), digits: 2...2)
    else { return nil }
    let second = time.count == 3 ? number(Array(time[2]), digits: 2...2) : 0
    guard let second, hour < 24, minute < 60, second < 61 else { return nil }
    let month = monthIndex + 1
    guard day >= 1, day <= daysIn(month: month, year: year) else { return nil }
    guard let offset = zoneOffset(words[4]) else { return nil }
    let days = daysFromCivil(year: year, month: month, day: day)
    return days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - offset
  }

  /// `seconds` as Debian writes a date: `Sat, 28 Nov 2026 10:00:00 UTC`.
  public static func format(_ seconds: Int64) -> String {
    let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    let rest = Int(seconds - days * 86_400)
    let (year, month, day) = civil(fromDays: days)
    let weekday = Int(((days % 7) + 7 + 3) % 7)  // 1970-01-01 was a Thursday
    func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
    let name = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][weekday]
    let monthName = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][month - 1]
    return "\(name), \(two(day)) \(monthName) \(year) \(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60)) UTC"
  }

  private static func lower(_ bytes: ArraySlice<UInt8>) -> String {
    String(decoding: bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
  }

  private static func number(_ bytes: [UInt8], digits: ClosedRange<Int>) -> Int? {
    guard digits.contains(bytes.count), bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
    return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
  }

  private static func zoneOffset(_ zone: [UInt8]) -> Int64? {
    switch String(decoding: zone, as: UTF8.self) {
    case "UTC", "GMT", "Z", "UT": return 0
    default: break
    }
    guard zone.count == 5, zone[0] == 0x2B || zone[0] == 0x2D,
      let hours = number(Array(zone[1...2]), digits: 2...2), let minutes = number(Array(zone[3...4]), digits: 2...2),
      hours < 24, minutes < 60
    else { return nil }
    let offset = Int64(hours * 3600 + minutes * 60)
    return zone[0] == 0x2D ? -offset : offset
  }

  private static func daysIn(month: Int, year: Int) -> Int {
    switch month {
    case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
  }

  /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
  static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
    let y = Int64(month <= 2 ? year - 1 : year)
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let m = Int64(month)
    let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
  }

  static func civil(fromDays days: Int64) -> (year: Int, month: Int, day: Int) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = Int(doy - (153 * mp + 2) / 5 + 1)
    let month = Int(mp < 10 ? mp + 3 : mp - 9)
    return (Int(yoe + era * 400) + (month <= 2 ? 1 : 0), month, day)
  }
}
