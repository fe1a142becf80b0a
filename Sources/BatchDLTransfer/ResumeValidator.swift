/// What guards the join of bytes from two responses (`If-Range`, docs/sources.md, "When bytes may
/// be combined"): a strong `ETag`, a strong `Last-Modified`, or nothing but a digest the task has
/// (its `sha256:` or piece digests), which judges the joined file instead.
public enum ResumeValidator: Sendable, Equatable, Hashable {
  /// A strong entity tag, quotes included (`"v1"`).
  case etag(String)
  /// A `Last-Modified` at least a second before the response's `Date` (RFC 9110 8.8.2.2).
  case date(String)
  /// No `If-Range`: the task's digest decides whether the joined file is right.
  case digest

  /// The value of `If-Range`; nil for `digest`.
  public var ifRange: String? {
    switch self {
    case .etag(let tag): tag
    case .date(let date): date
    case .digest: nil
    }
  }

  /// The strong tag, for a validator that is one.
  public var etag: String? {
    if case .etag(let tag) = self { return tag }
    return nil
  }

  /// The date, for a validator that is one.
  public var lastModified: String? {
    if case .date(let date) = self { return date }
    return nil
  }

  /// Only a strong `ETag` lets bytes kept from one source go on from another: dates of two servers
  /// tell nothing about each other.
  public var carriesAcrossSources: Bool { etag != nil }

  /// A validator as the state folder keeps it: an `ETag` begins with `"` (or `W/`, which is never
  /// kept), "" stands for none, anything else is a date.
  public init(stored text: String) {
    if text.isEmpty {
      self = .digest
    } else if text.hasPrefix("\"") {
      self = .etag(text)
    } else {
      self = .date(text)
    }
  }

  /// The text the state folder keeps (`init(stored:)` reads it back).
  public var stored: String { ifRange ?? "" }
}

extension ResumeValidator {
  /// A head's validator for `If-Range`: its strong `ETag`; else its `Last-Modified` when that is
  /// strong, at least a second before its `Date` (RFC 9110 8.8.2.2: a file changed within the
  /// second it was sent in keeps the same date, and 13.1.5 allows no weak validator in `If-Range`);
  /// nil when the body is encoded, the tag weak, or the date weak or without a `Date` to tell.
  package init?(rangeOf head: ResponseHead) {
    guard head.isSuccess, head.encoding == nil else { return nil }
    if let tag = head.strongETag {
      self = .etag(tag)
      return
    }
    if head["etag"] != nil { return nil }
    guard let modified = head["last-modified"], let sent = head["date"],
      let modifiedAt = HTTPDate.parse(modified), let sentAt = HTTPDate.parse(sent),
      sentAt.timeIntervalSince(modifiedAt) >= 1
    else { return nil }
    self = .date(modified)
  }
}
