/// A JSON value whose objects always print with sorted keys, so that output is stable for `diff`.
public enum JSON: Equatable, Sendable {
  case null
  case bool(Bool)
  case int(Int64)
  case string(String)
  case array([JSON])
  case object([String: JSON])

  public static func int(_ value: Int) -> JSON { .int(Int64(value)) }

  /// Compact JSON text.
  public var text: String {
    var out = ""
    write(to: &out)
    return out
  }

  public func write(to out: inout String) {
    switch self {
    case .null: out += "null"
    case .bool(let value): out += value ? "true" : "false"
    case .int(let value): out += String(value)
    case .string(let value): JSON.quote(value, into: &out)
    case .array(let items):
      out += "["
      for (index, item) in items.enumerated() {
        if index > 0 { out += "," }
        item.write(to: &out)
      }
      out += "]"
    case .object(let fields):
      out += "{"
      for (index, key) in fields.keys.sorted().enumerated() {
        if index > 0 { out += "," }
        JSON.quote(key, into: &out)
        out += ":"
        fields[key]?.write(to: &out)
      }
      out += "}"
    }
  }

  /// Appends `value` as a JSON string literal.
  /// Whether `value` has a byte that JSON escapes; scanned on its contiguous UTF-8 (the view's
  /// iterator costs several times as much, and reports quote every id, URL and path).
  private static func needsEscaping(_ value: String) -> Bool {
    value.utf8.withContiguousStorageIfAvailable { bytes in
      for byte in bytes where byte < 0x20 || byte == 0x22 || byte == 0x5C { return true }
      return false
    } ?? value.utf8.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }
  }

  public static func quote(_ value: String, into out: inout String) {
    if !needsEscaping(value) {
      out += "\""
      out += value
      out += "\""
      return
    }
    out += "\""
    for scalar in value.unicodeScalars {
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
    out += "\""
  }
}
