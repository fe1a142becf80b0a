/// The signed text of an OpenPGP clear-signed document (RFC 4880 §7.1), such as an APT `InRelease`,
/// taken apart without checking the signature: gpgv checks the whole document before the text is
/// used. Only the strict shape APT writes and apt accepts is read; anything else is refused.
///
/// The shape: the line `-----BEGIN PGP SIGNED MESSAGE-----` first (nothing before it), one or more
/// `Hash:` armor headers, an empty line, the dash-escaped text, then one signature block
/// (`-----BEGIN PGP SIGNATURE-----` … `-----END PGP SIGNATURE-----`), then nothing but blank lines.
/// Armor lines may end in spaces, tabs or a carriage return.
///
/// The text is what `gpgv --output` writes: each line with its dash-escape (`- `) removed and its
/// trailing spaces and tabs removed (the signature does not cover them), followed by its own line
/// ending (LF, or CR LF); the line ending before the signature block is written too, although the
/// signature does not cover it.
public enum AptClearSigned {
  /// The signed text and where it starts in the document.
  public struct Text: Equatable, Sendable {
    public var bytes: [UInt8]
    /// The line of the document that holds the text's first line (1-based): line N of the text is
    /// line `firstLine + N - 1` of the document.
    public var firstLine: Int
  }

  /// Why a document is refused: its line (1-based) and what is wrong there.
  public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
    public var line: Int
    public var message: String

    public var description: String { "line \(line): \(message)" }
  }

  static let beginMessage = Array("-----BEGIN PGP SIGNED MESSAGE-----".utf8)
  static let beginSignature = Array("-----BEGIN PGP SIGNATURE-----".utf8)
  static let endSignature = Array("-----END PGP SIGNATURE-----".utf8)

  /// Whether `bytes` hold a line `-----BEGIN PGP SIGNED MESSAGE-----` anywhere: a clear-signed
  /// document (an `InRelease`), even one with text before it (which `signedText` refuses).
  public static func looksClearSigned(_ bytes: [UInt8]) -> Bool {
    var lines = Lines(bytes)
    while let line = lines.next() {
      if isArmor(bytes[line.content], beginMessage) { return true }
    }
    return false
  }

  /// The signed text of the clear-signed `document`, or why its structure is refused.
  public static func signedText(of document: [UInt8]) -> Result<Text, Problem> {
    var lines = Lines(document)
    guard let first = lines.next(), isArmor(document[first.content], beginMessage) else {
      return .failure(
        Problem(
          line: 1,
          message:
            "the document does not start with '-----BEGIN PGP SIGNED MESSAGE-----': text outside the signed part is refused"
        ))
    }
    var hashHeaders = 0
    while true {
      guard let line = lines.next() else {
        return .failure(Problem(line: lines.number, message: "the document ends in its armor headers"))
      }
      let content = trimmedEnd(document, line.content)
      if content.isEmpty { break }
      guard document[content].starts(with: Array("Hash: ".utf8)) else {
        return .failure(
          Problem(
            line: lines.number,
            message: "an armor header other than 'Hash:' in the signed message (RFC 4880 allows only 'Hash:')"))
      }
      hashHeaders += 1
    }
    guard hashHeaders > 0 else {
      return .failure(Problem(line: lines.number, message: "the signed message has no 'Hash:' armor header"))
    }
    let firstLine = lines.number + 1
    var text: [UInt8] = []
    text.reserveCapacity(document.count)
    var signatureLine = 0
    while let line = lines.next() {
      let content = line.content
      if isArmor(document[content], beginSignature) {
        signatureLine = lines.number
        break
      }
      var start = content.lowerBound
      if start < content.upperBound, document[start] == 0x2D {
        guard content.count >= 2, document[start + 1] == 0x20 else {
          if isArmor(document[content], beginMessage) {
            return .failure(
              Problem(line: lines.number, message: "a second signed message starts inside the first"))
          }
          return .failure(
            Problem(
              line: lines.number,
              message: "a line of the signed text starts with '-' without the dash-escape '- ' (RFC 4880 §7.1)"))
        }
        start += 2
      }
      var end = content.upperBound
      let crlf = end > start && document[end - 1] == 0x0D
      if crlf { end -= 1 }
      while end > start, document[end - 1] == 0x20 || document[end - 1] == 0x09 { end -= 1 }
      text.append(contentsOf: document[start..<end])
      if crlf { text.append(0x0D) }
      if line.hasNewline { text.append(0x0A) }
    }
    guard signatureLine > 0 else {
      return .failure(
        Problem(
          line: lines.number, message: "the signed message has no signature block ('-----BEGIN PGP SIGNATURE-----')"))
    }
    var ended = false
    while let line = lines.next() {
      let content = trimmedEnd(document, line.content)
      if isArmor(document[content], endSignature) {
        ended = true
        break
      }
      if isArmor(document[content], beginMessage) || isArmor(document[content], beginSignature) {
        return .failure(Problem(line: lines.number, message: "armor inside the signature block"))
      }
    }
    guard ended else {
      return .failure(
        Problem(line: lines.number, message: "the signature block has no '-----END PGP SIGNATURE-----' line"))
    }
    while let line = lines.next() {
      let content = trimmedEnd(document, line.content)
      if !content.isEmpty {
        let what =
          isArmor(document[content], beginMessage)
          ? "a second signed message follows the first" : "text follows the signature block"
        return .failure(Problem(line: lines.number, message: "\(what): text outside the signed part is refused"))
      }
    }
    return .success(Text(bytes: text, firstLine: firstLine))
  }

  /// `line` is the armor line `armor`, with trailing spaces, tabs or a carriage return allowed.
  static func isArmor(_ line: ArraySlice<UInt8>, _ armor: [UInt8]) -> Bool {
    guard line.starts(with: armor) else { return false }
    return line.dropFirst(armor.count).allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
  }

  static func trimmedEnd(_ bytes: [UInt8], _ range: Range<Int>) -> Range<Int> {
    var end = range.upperBound
    while end > range.lowerBound, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 || bytes[end - 1] == 0x0D {
      end -= 1
    }
    return range.lowerBound..<end
  }

  /// The lines of a byte array: each line's content (without its LF) and whether an LF ends it.
  struct Lines {
    let bytes: [UInt8]
    var start = 0
    /// The number of the line last returned.
    var number = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func next() -> (content: Range<Int>, hasNewline: Bool)? {
      guard start < bytes.count else { return nil }
      number += 1
      let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
      defer { start = end + 1 }
      return (start..<end, end < bytes.count)
    }
  }
}
