/// Text from outside batchdl (a Metalink document's names, URLs and values) as a message shows it:
/// on one line, with no character a terminal acts on. A document from the network could otherwise
/// forge a whole `FILE:LINE:COLUMN: error: ...` line, or move the cursor and rewrite the output.
package enum ShownText {
  /// `text` with its control characters written as escapes (`\n`, `\r`, `\t`, else `\u{1B}`): C0
  /// and C1 controls, DEL, the line and paragraph separators and the bidirectional overrides. At most
  /// `limit` characters (Unicode scalars) of it are shown, then `…`.
  package static func escaped(_ text: some StringProtocol, limit: Int = 80) -> String {
    var out = ""
    var shown = 0
    for scalar in text.unicodeScalars {
      if shown == limit {
        out += "…"
        break
      }
      shown += 1
      switch scalar.value {
      case 0x0A: out += "\\n"
      case 0x0D: out += "\\r"
      case 0x09: out += "\\t"
      case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
        out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      default:
        out.unicodeScalars.append(scalar)
      }
    }
    return out
  }
}
