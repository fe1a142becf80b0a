import Foundation

/// Small text helpers: JSON strings, HTTP dates and reason phrases.
enum Formatting {
  /// `text` as a JSON string literal, quotes included: the escaping of BatchDL's `JSON.quote`, kept
  /// here because the test server does not depend on the library.
  static func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      default:
        if scalar.value < 0x20 {
          let hex = String(scalar.value, radix: 16)
          out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    return out + "\""
  }

  /// A JSON object of string values, keys sorted.
  static func jsonObject(_ values: [String: String]) -> String {
    let members = values.keys.sorted().map { key in jsonString(key) + ": " + jsonString(values[key] ?? "") }
    return "{" + members.joined(separator: ", ") + "}"
  }

  private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
  private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

  /// The IMF-fixdate form of `date`, e.g. "Mon, 01 Jan 2024 00:00:00 GMT".
  static func httpDate(_ date: Date) -> String {
    var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
    var parts = tm()
    gmtime_r(&seconds, &parts)
    let weekday = weekdays[Int(parts.tm_wday) % 7]
    let month = months[Int(parts.tm_mon) % 12]
    let clock = [parts.tm_hour, parts.tm_min, parts.tm_sec].map { pad(Int($0), 2) }.joined(separator: ":")
    return "\(weekday), \(pad(Int(parts.tm_mday), 2)) \(month) \(Int(parts.tm_year) + 1900) \(clock) GMT"
  }

  private static func pad(_ value: Int, _ width: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
  }

  /// Parses an IMF-fixdate ("Mon, 01 Jan 2024 00:00:00 GMT"); nil for other forms.
  static func parseHTTPDate(_ text: String) -> Date? {
    let fields = text.split(separator: " ")
    guard fields.count == 6, fields[5] == "GMT",
      let day = Int(fields[1]), let monthIndex = months.firstIndex(of: String(fields[2])), let year = Int(fields[3])
    else { return nil }
    let clock = fields[4].split(separator: ":").compactMap { Int($0) }
    guard clock.count == 3 else { return nil }
    var parts = tm()
    parts.tm_year = Int32(year - 1900)
    parts.tm_mon = Int32(monthIndex)
    parts.tm_mday = Int32(day)
    parts.tm_hour = Int32(clock[0])
    parts.tm_min = Int32(clock[1])
    parts.tm_sec = Int32(clock[2])
    let seconds = timegm(&parts)
    return Date(timeIntervalSince1970: TimeInterval(seconds))
  }

  /// The reason phrase for `status`.
  static func reason(_ status: Int) -> String {
    switch status {
    case 100: "Continue"
    case 200: "OK"
    case 201: "Created"
    case 202: "Accepted"
    case 204: "No Content"
    case 206: "Partial Content"
    case 301: "Moved Permanently"
    case 302: "Found"
    case 303: "See Other"
    case 304: "Not Modified"
    case 307: "Temporary Redirect"
    case 308: "Permanent Redirect"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 408: "Request Timeout"
    case 413: "Content Too Large"
    case 416: "Range Not Satisfiable"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 502: "Bad Gateway"
    case 503: "Service Unavailable"
    case 504: "Gateway Timeout"
    default: "Status \(status)"
    }
  }
}
