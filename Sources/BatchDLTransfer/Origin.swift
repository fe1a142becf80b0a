import BatchDLSupport

/// The origin a request's secret headers belong to: `scheme://authority` of a URL, normalized
/// (RFC 6454: scheme, host and port). A request to a URL of another origin goes without them
/// (`TransferSpec.headersForURL`).
public struct Origin: Hashable, Sendable, CustomStringConvertible {
  /// `scheme://authority`, normalized.
  public let text: String

  /// The origin of `url`; nil when it does not parse.
  public init?(url: String) {
    guard case .success(let normalized) = URLNormalizer().normalize(url) else { return nil }
    text = normalized.scheme + "://" + normalized.authority
  }

  private init(text: String) {
    self.text = text
  }

  /// An origin no URL has: headers given for it go nowhere (a document whose URL does not parse).
  public static let nowhere = Origin(text: "")

  /// Whether `url` is at this origin. A planned URL is in normal form: at its own origin it starts
  /// with it, told without parsing; any other is parsed.
  public func owns(_ url: String) -> Bool {
    guard !text.isEmpty else { return false }
    if url.utf8.starts(with: text.utf8) && url.utf8.dropFirst(text.utf8.count).first == UInt8(ascii: "/") {
      return true
    }
    return Origin(url: url) == self
  }

  public var description: String { text }
}
