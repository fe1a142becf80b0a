import Foundation

/// Masks credentials in anything batchdl prints or stores: URL user-info, sensitive headers, and
/// values that came from `${VAR}` in headers, bodies and URLs.
public struct Redactor: Sendable {
  /// Header names whose values are always masked (compared without case).
  public static let sensitiveHeaders: Set<String> = [
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-auth-token",
  ]

  public static let mask = "<redacted>"

  /// Values to replace, longest first so that a value containing another is masked whole: each
  /// secret as written and as it looks once encoded (see `spellings`).
  private let secrets: [(value: String, replacement: String)]
  /// The secrets as written, to find one that a mix of encoded and literal bytes still hides.
  private let rawValues: [String]

  public init(secrets: [Secret] = []) {
    let kept = secrets.filter { $0.value.count >= 4 }
    var seen: Set<String> = []
    var pairs: [(value: String, replacement: String)] = []
    for secret in kept {
      for spelling in Self.spellings(of: secret.value) where spelling.count >= 4 && seen.insert(spelling).inserted {
        pairs.append((value: spelling, replacement: "${\(secret.name)}"))
      }
    }
    self.secrets = pairs.sorted { $0.value.count > $1.value.count }
    self.rawValues = kept.map(\.value)
  }

  /// Every form a value takes on its way into a request: as written, as URL normalization leaves it
  /// (`a|b` as `a%7Cb`; in a host, lower-cased), percent-encoded whole (upper- and lower-case hex),
  /// form-encoded (space as `+`), and Base64 (standard and URL-safe, with and without padding).
  package static func spellings(of value: String) -> [String] {
    let bytes = Array(value.utf8)
    var result = [value, URLNormalizer.normalizePercent(value), value.lowercased()]
    result.append(percentEncoded(bytes, upperCase: true, spaceAsPlus: false))
    result.append(percentEncoded(bytes, upperCase: false, spaceAsPlus: false))
    result.append(percentEncoded(bytes, upperCase: true, spaceAsPlus: true))
    let base64 = Data(bytes).base64EncodedString()
    let unpadded = String(base64.prefix { $0 != "=" })
    let urlSafe = String(unpadded.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    result += [base64, unpadded, urlSafe]
    return result
  }

  /// Every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`) as `%XX`.
  private static func percentEncoded(_ bytes: [UInt8], upperCase: Bool, spaceAsPlus: Bool) -> String {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * 3)
    for byte in bytes {
      switch byte {
      case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: out.append(byte)
      case 0x20 where spaceAsPlus: out.append(0x2B)
      default: Hex.appendPercentEncoded(byte, to: &out, upperCase: upperCase)
      }
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// Whether there are secret values to mask (without them, `text` masks only URL user-info).
  public var hasSecrets: Bool { !secrets.isEmpty }

  /// `text` with every known secret value, in any of its spellings, replaced by its `${NAME}`. When
  /// a secret is still there once `%XX` sequences are decoded (a mix of encoded and literal bytes),
  /// the decoded text is masked instead.
  ///
  /// The user-info of every URL in it is masked first.
  public func text(_ text: String) -> String {
    let text = Self.maskUserInfo(in: text)
    guard !secrets.isEmpty else { return text }
    let result = replacingSecrets(in: text)
    if result.utf8.contains(0x25) {
      let decoded = URLNormalizer.percentDecode(result)
      if rawValues.contains(where: { decoded.contains($0) }) { return replacingSecrets(in: decoded) }
    }
    return result
  }

  private func replacingSecrets(in text: String) -> String {
    var result = text
    for secret in secrets where result.contains(secret.value) {
      result = result.replacingAll(secret.value, with: secret.replacement)
    }
    return result
  }

  /// A URL fit for output: user-info removed, secret values masked.
  public func url(_ url: String) -> String {
    text(url)
  }

  /// A header value fit for output.
  public func header(name: String, value: String) -> String {
    Self.sensitiveHeaders.contains(name.lowercased()) ? Self.mask : text(value)
  }

  /// A diagnostic fit for output: its message passed through `text(_:)`.
  public func diagnostic(_ diagnostic: Diagnostic) -> Diagnostic {
    var result = diagnostic
    result.message = text(diagnostic.message)
    return result
  }

  /// `text` with the user-info of every `scheme://user:password@host` in it masked, wherever the
  /// URL stands (quoted in a message, in a list of ids): the authority runs to the first `/`, `?`,
  /// `#` or white space, and everything up to its last `@` is masked.
  public static func maskUserInfo(in text: String) -> String {
    guard contains(0x40, in: text), text.contains("://") else { return text }
    var result = ""
    var rest = Substring(text)
    while let separator = rest.range(of: "://") {
      result += rest[..<separator.upperBound]
      rest = rest[separator.upperBound...]
      if let info = userInfo(after: rest), rest[info] != Substring(mask) {
        result += mask
        rest = rest[info.upperBound...]
      }
    }
    result += rest
    return result
  }

  /// Whether `text` holds `byte`: `memchr` on its UTF-8, where iterating the view costs about ten
  /// instructions a byte (every URL of a plan passes here, most without an `@`).
  private static func contains(_ byte: UInt8, in text: String) -> Bool {
    text.utf8.withContiguousStorageIfAvailable { bytes in
      bytes.baseAddress.map { memchr($0, Int32(byte), bytes.count) != nil } ?? false
    }
      ?? text.utf8.contains(byte)
  }

  /// `scheme://user:password@host/...` becomes `scheme://<redacted>@host/...`.
  public static func stripUserInfo(_ url: String) -> String {
    maskUserInfo(in: url)
  }

  /// The `user:password` of a URL, when it has one.
  public static func userInfo(of url: String) -> String? {
    guard let schemeEnd = url.range(of: "://") else { return nil }
    let rest = url[schemeEnd.upperBound...]
    return userInfo(after: rest).map { String(rest[$0]) }
  }

  /// Where the user-info stands in `rest`, the part of a URL after `://`: everything before the
  /// last `@` of the authority, which runs to the first `/`, `?`, `#` or white space.
  private static func userInfo(after rest: Substring) -> Range<Substring.Index>? {
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" || $0.isWhitespace } ?? rest.endIndex
    guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return nil }
    return rest.startIndex..<at
  }

}

extension String {
  package func replacingAll(_ target: String, with replacement: String) -> String {
    guard !target.isEmpty else { return self }
    var result = ""
    var rest = Substring(self)
    while let range = rest.range(of: target) {
      result += rest[..<range.lowerBound]
      result += replacement
      rest = rest[range.upperBound...]
    }
    result += rest
    return result
  }
}

extension Redactor {
  /// The names (lower-case) of the headers that must never reach another origin than the one they
  /// were given for: credentials, tokens, cookies, and any whose value holds a secret.
  package func originOnly(_ headers: [Header]) -> Set<String> {
    Set(
      headers.lazy.filter { Self.sensitiveHeaders.contains($0.name.lowercased()) || self.text($0.value) != $0.value }
        .map { $0.name.lowercased() })
  }
}
