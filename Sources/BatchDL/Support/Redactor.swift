import Foundation

/// Masks credentials in anything batchdl prints or stores: URL user-info, sensitive headers, and
/// values that came from `${VAR}` in headers, bodies and URLs.
public struct Redactor: Sendable {
  /// Header names whose values are always masked (compared without case).
  public static let sensitiveHeaders: Set<String> = [
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-auth-token",
  ]

  public static let mask = "<redacted>"

  /// Values to replace, longest first so that a value containing another is masked whole.
  private let secrets: [(value: String, replacement: String)]

  public init(secrets: [Secret] = []) {
    self.secrets =
      secrets
      .filter { $0.value.count >= 4 }
      .map { (value: $0.value, replacement: "${\($0.name)}") }
      .sorted { $0.value.count > $1.value.count }
  }

  /// `text` with the user-info of every URL in it masked, and every known secret value replaced by
  /// its `${NAME}`.
  public func text(_ text: String) -> String {
    let text = Self.maskUserInfo(in: text)
    guard !secrets.isEmpty else { return text }
    var result = text
    for secret in secrets where result.contains(secret.value) {
      result = result.replacingAll(secret.value, with: secret.replacement)
    }
    return result
  }

  /// A URL fit for output: user-info removed, secret values masked.
  public func url(_ url: String) -> String {
    text(Self.stripUserInfo(url))
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
    guard text.utf8.contains(0x40), text.contains("://") else { return text }
    var result = ""
    var rest = Substring(text)
    while let separator = rest.range(of: "://") {
      result += rest[..<separator.upperBound]
      rest = rest[separator.upperBound...]
      let authorityEnd =
        rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" || $0.isWhitespace } ?? rest.endIndex
      if let at = rest[..<authorityEnd].lastIndex(of: "@"), rest[..<at] != Substring(mask) {
        result += mask
        rest = rest[at...]
      }
    }
    result += rest
    return result
  }

  /// `scheme://user:password@host/...` becomes `scheme://<redacted>@host/...`.
  public static func stripUserInfo(_ url: String) -> String {
    guard url.utf8.contains(0x40) else { return url }
    guard let schemeEnd = url.range(of: "://") else { return url }
    let rest = url[schemeEnd.upperBound...]
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
    guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return url }
    return String(url[..<schemeEnd.upperBound]) + mask + String(rest[at...])
  }
}

extension String {
  func replacingAll(_ target: String, with replacement: String) -> String {
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
