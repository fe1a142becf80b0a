import CCurl

#if canImport(Glibc)
  import Glibc
#endif

/// A URL parsed by libcurl's URL API and put in a canonical form.
public struct NormalizedURL: Hashable, Sendable {
  /// Scheme and host lower-cased, default port and fragment dropped, dot segments removed,
  /// percent-encoding normalized (unreserved characters decoded, hex digits upper-case, other
  /// unsafe bytes encoded).
  public var text: String
  public var scheme: String
  /// The host, lower-cased, with a non-default port (`example.org:8080`): what per-host limits count.
  public var authority: String
  /// The last path segment, percent-decoded: the default file name of a download.
  public var fileName: String?
}

/// Parses and normalizes URLs with one reusable `CURLU` handle. Not thread-safe.
public final class URLNormalizer {
  public struct Problem: Error, CustomStringConvertible {
    public var description: String
  }

  private let handle: OpaquePointer

  public init() {
    // curl_url() only fails when out of memory.
    guard let handle = curl_url() else { fatalError("libcurl could not allocate a URL handle") }
    self.handle = handle
  }

  deinit {
    curl_url_cleanup(handle)
  }

  /// Normalizes an http or https URL.
  public func normalize(_ url: String) -> Result<NormalizedURL, Problem> {
    if let normal = Self.alreadyNormal(url) { return .success(normal) }
    return normalizeWithCurl(url)
  }

  /// The URL as libcurl's parser and the rules below see it. `normalize` gives the same answer
  /// for URLs that `alreadyNormal` recognizes.
  package func normalizeWithCurl(_ url: String) -> Result<NormalizedURL, Problem> {
    if url.isEmpty { return .failure(Problem(description: "the URL is empty")) }
    if url.utf8.contains(where: { $0 == 0x20 || $0 == 0x09 || $0 < 0x20 }) {
      return .failure(Problem(description: "the URL contains spaces or control characters; percent-encode them (%20)"))
    }
    // Setting a URL on a handle that already holds one resolves it relative to the old one
    // ("example.org/x" after "https://a.org/b" becomes "https://a.org/example.org/x"): clear it first.
    _ = curl_url_set(handle, CURLUPART_URL, nil, 0)
    let code = curl_url_set(handle, CURLUPART_URL, url, 0)
    guard code == CURLUE_OK else {
      if code == CURLUE_UNSUPPORTED_SCHEME, let end = url.range(of: "://") {
        // Schemes this libcurl does not know (s3://, ws://) get the same answer as ftp://.
        let scheme = url[..<end.lowerBound].lowercased()
        return .failure(Problem(description: "only http and https URLs are allowed, not \(scheme):"))
      }
      let lowered = url.lowercased()
      if !lowered.hasPrefix("http://") && !lowered.hasPrefix("https://") && !lowered.contains("://") {
        return .failure(
          Problem(
            description:
              "'\(Redactor.stripUserInfo(url))' is not a URL: write it in full, starting with https:// or http://"))
      }
      return .failure(
        Problem(
          description:
            "'\(Redactor.stripUserInfo(url))' is not a valid URL: \(String(cString: curl_url_strerror(code)))"))
    }
    let scheme = (part(CURLUPART_SCHEME) ?? "").lowercased()
    guard scheme == "http" || scheme == "https" else {
      return .failure(Problem(description: "only http and https URLs are allowed, not \(scheme):"))
    }
    guard let rawHost = part(CURLUPART_HOST), !rawHost.isEmpty else {
      return .failure(Problem(description: "the URL has no host"))
    }
    let host = rawHost.lowercased()
    var authority = host
    if let port = part(CURLUPART_PORT, flags: ccurl_u_no_default_port) {
      authority += ":" + port
    }
    var text = scheme + "://"
    if let user = part(CURLUPART_USER) {
      text += Self.normalizePercent(user)
      if let password = part(CURLUPART_PASSWORD) { text += ":" + Self.normalizePercent(password) }
      text += "@"
    }
    text += authority
    // libcurl removes dot segments before percent-decoding; `%2E%2E` becomes `..` only here, so
    // remove them again (RFC 3986 6.2.2: decode unreserved characters, then remove dot segments).
    let path = Self.removeDotSegments(Self.normalizePercent(part(CURLUPART_PATH) ?? "/"))
    text += path.isEmpty ? "/" : path
    if let query = part(CURLUPART_QUERY) {
      text += "?" + Self.normalizePercent(query)
    }
    var fileName: String?
    let pathBytes = path.utf8
    if let slash = pathBytes.lastIndex(of: 0x2F) {
      let segment = Substring(pathBytes[pathBytes.index(after: slash)...])
      if !segment.isEmpty { fileName = Self.percentDecode(String(segment)) }
    }
    return .success(NormalizedURL(text: text, scheme: scheme, authority: authority, fileName: fileName))
  }

  /// The URL itself when it is already in normal form, recognized on its bytes without libcurl:
  /// `http://` or `https://`, a host of lower-case letters, digits, dots and hyphens that no
  /// parser would read as an IPv4 number in another spelling, a port other than the default, a
  /// path that starts with `/` and has no dot segment, an optional non-empty query, and nothing
  /// anywhere that normalization would decode, encode or drop (`%`, `#`, `@`, brackets, spaces,
  /// non-ASCII). Every other URL goes through libcurl. The lines of a large `list:` are mostly
  /// such URLs, and libcurl's parser took a third of the time of planning them; a test checks
  /// that both paths agree on a corpus of tricky spellings.
  package static func alreadyNormal(_ url: String) -> NormalizedURL? {
    var url = url
    return url.withUTF8 { bytes -> NormalizedURL? in
      guard let layout = normalLayout(bytes) else { return nil }
      let authority = String(decoding: UnsafeBufferPointer(rebasing: bytes[layout.authority]), as: UTF8.self)
      let fileName = layout.fileName.map {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[$0]), as: UTF8.self)
      }
      return NormalizedURL(
        text: "", scheme: layout.isHTTPS ? "https" : "http", authority: authority, fileName: fileName)
    }.map {
      // The URL is its own normal form: share its storage rather than copy it.
      var normal = $0
      normal.text = url
      return normal
    }
  }

  /// Where the parts of a URL already in normal form lie in its bytes (see `alreadyNormal`).
  package struct NormalLayout {
    package var isHTTPS: Bool
    /// The host and non-default port.
    package var authority: Range<Int>
    /// The last path segment, when not empty.
    package var fileName: Range<Int>?
  }

  /// The layout of `bytes` when they are a URL in normal form (the rules of `alreadyNormal`), else
  /// nil. The planner reads `list:` lines with it without making a String of each URL.
  package static func normalLayout(_ bytes: UnsafeBufferPointer<UInt8>) -> NormalLayout? {
    let isHTTPS: Bool
    var index: Int
    if Self.hasPrefix(bytes, "http://") {
      isHTTPS = false
      index = 7
    } else if Self.hasPrefix(bytes, "https://") {
      isHTTPS = true
      index = 8
    } else {
      return nil
    }
    // Host: labels of [a-z0-9-], none empty.
    let hostStart = index
    var labelLength = 0
    var allLabelsNumeric = true
    var labelStartsWithDigit = false
    var labelCount = 0
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: ".") {
        guard labelLength > 0 else { return nil }
        if !labelStartsWithDigit { allLabelsNumeric = false }
        labelCount += 1
        labelLength = 0
      } else if (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || byte == UInt8(ascii: "-")
        || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
      {
        if labelLength == 0 { labelStartsWithDigit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        labelLength += 1
      } else {
        break
      }
      index += 1
    }
    guard labelLength > 0 else { return nil }
    if !labelStartsWithDigit { allLabelsNumeric = false }
    labelCount += 1
    let hostEnd = index
    guard hostEnd - hostStart <= 253 else { return nil }
    // A host whose labels all start with a digit may be an IPv4 address in another spelling
    // (`127.1`, `0x7f.0.0.1`): only the canonical dotted quad stays here.
    if allLabelsNumeric {
      guard labelCount == 4, Self.isDottedQuad(UnsafeBufferPointer(rebasing: bytes[hostStart..<hostEnd])) else {
        return nil
      }
    }
    // Port: digits without a leading zero, 1...65535, not the scheme's default.
    if index < bytes.count && bytes[index] == UInt8(ascii: ":") {
      index += 1
      var port = 0
      let portStart = index
      while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
        port = port * 10 + Int(bytes[index] - UInt8(ascii: "0"))
        index += 1
        guard index - portStart <= 5 else { return nil }
      }
      guard index > portStart, bytes[portStart] != UInt8(ascii: "0"), port <= 65535,
        port != (isHTTPS ? 443 : 80)
      else { return nil }
    }
    let authorityEnd = index
    // Path and query.
    guard index < bytes.count, bytes[index] == UInt8(ascii: "/") else { return nil }
    var pathEnd = bytes.count
    var segmentLength = 0
    var dots = 0
    var lastSlash = index
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: "?") {
        pathEnd = index
        break
      }
      guard Self.isPlainPathByte(byte) else { return nil }
      if byte == UInt8(ascii: "/") {
        if segmentLength > 0 && segmentLength == dots && dots <= 2 { return nil }
        segmentLength = 0
        dots = 0
        lastSlash = index
      } else {
        segmentLength += 1
        if byte == UInt8(ascii: ".") { dots += 1 }
      }
      index += 1
    }
    if segmentLength > 0 && segmentLength == dots && dots <= 2 { return nil }
    if pathEnd < bytes.count {
      // A query: not empty, and plain bytes (a `?` among them is allowed).
      guard pathEnd + 1 < bytes.count else { return nil }
      for byte in bytes[(pathEnd + 1)...] where byte != UInt8(ascii: "?") && !Self.isPlainPathByte(byte) {
        return nil
      }
    }
    return NormalLayout(
      isHTTPS: isHTTPS, authority: hostStart..<authorityEnd,
      fileName: lastSlash + 1 < pathEnd ? (lastSlash + 1)..<pathEnd : nil)
  }

  private static func hasPrefix(_ bytes: UnsafeBufferPointer<UInt8>, _ prefix: StaticString) -> Bool {
    guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
    guard let start = bytes.baseAddress else { return false }
    return memcmp(start, prefix.utf8Start, prefix.utf8CodeUnitCount) == 0
  }

  /// Four decimal numbers 0...255 without leading zeros, separated by dots.
  private static func isDottedQuad(_ host: UnsafeBufferPointer<UInt8>) -> Bool {
    // One pass over the bytes, without splitting into labels: every URL of a list of files on
    // one address passes here.
    var start = 0
    while start <= host.count {
      var end = start
      var value = 0
      while end < host.count, host[end] != UInt8(ascii: ".") {
        let byte = host[end]
        guard byte >= 0x30 && byte <= 0x39, end - start < 3 else { return false }
        value = value * 10 + Int(byte - 0x30)
        end += 1
      }
      let length = end - start
      guard length > 0, value <= 255, length == 1 || host[start] != UInt8(ascii: "0") else { return false }
      start = end + 1
    }
    return true
  }

  /// Bytes that a path keeps as they are: unreserved characters, `/` and the sub-delimiters, `:`
  /// and `@` (RFC 3986 `pchar` without `%`).
  private static func isPlainPathByte(_ byte: UInt8) -> Bool {
    if isUnreserved(byte) { return true }
    switch byte {
    case UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "!"), UInt8(ascii: "$"),
      UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"),
      UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="):
      return true
    default:
      return false
    }
  }

  private func part(_ which: CURLUPart, flags: UInt32 = 0) -> String? {
    var value: UnsafeMutablePointer<CChar>?
    guard curl_url_get(handle, which, &value, flags) == CURLUE_OK, let value else { return nil }
    defer { curl_free(value) }
    return String(cString: value)
  }

  private static func isUnreserved(_ byte: UInt8) -> Bool {
    (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
      || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
  }

  /// Bytes that may appear literally in a path or query.
  private static func isAllowedLiteral(_ byte: UInt8) -> Bool {
    if byte <= 0x20 || byte >= 0x7F { return false }
    switch byte {
    case 0x22, 0x3C, 0x3E, 0x5C, 0x5E, 0x60, 0x7B, 0x7C, 0x7D: return false  // " < > \ ^ ` { | }
    default: return true
    }
  }

  /// Decodes `%XX` of unreserved characters, upper-cases the rest, encodes unsafe bytes.
  package static func normalizePercent(_ text: String) -> String {
    if !text.utf8.contains(where: { $0 == 0x25 || !isAllowedLiteral($0) }) { return text }
    let bytes = Array(text.utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count + 8)
    var index = 0
    while index < bytes.count {
      let byte = bytes[index]
      if byte == 0x25, index + 2 < bytes.count, let high = Hex.value(of: bytes[index + 1]),
        let low = Hex.value(of: bytes[index + 2])
      {
        let decoded = high << 4 | low
        if isUnreserved(decoded) {
          out.append(decoded)
        } else {
          Hex.appendPercentEncoded(decoded, to: &out, upperCase: true)
        }
        index += 3
        continue
      }
      if byte == 0x25 || !isAllowedLiteral(byte) {
        Hex.appendPercentEncoded(byte, to: &out, upperCase: true)
      } else {
        out.append(byte)
      }
      index += 1
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// `path` without `.` and `..` segments (RFC 3986 5.2.4); unchanged when it has none.
  package static func removeDotSegments(_ path: String) -> String {
    guard hasDotSegment(path) else { return path }
    let segments = path.split(separator: "/", omittingEmptySubsequences: false)
    var output: [Substring] = []
    for (index, segment) in segments.enumerated() {
      let isLast = index == segments.count - 1
      switch segment {
      case ".":
        if isLast { output.append("") }
      case "..":
        if output.count > 1 { output.removeLast() }
        if isLast { output.append("") }
      default:
        output.append(segment)
      }
    }
    let joined = output.joined(separator: "/")
    return joined.hasPrefix("/") ? joined : "/" + joined
  }

  /// Whether a segment of `path` is `.` or `..` (checked on the bytes: most paths have none).
  private static func hasDotSegment(_ path: String) -> Bool {
    var segmentLength = 0
    var dots = 0
    for byte in path.utf8 {
      if byte == 0x2F {
        if segmentLength > 0 && segmentLength == dots && dots <= 2 { return true }
        segmentLength = 0
        dots = 0
      } else {
        segmentLength += 1
        if byte == 0x2E { dots += 1 }
      }
    }
    return segmentLength > 0 && segmentLength == dots && dots <= 2
  }

  /// Decodes every `%XX`.
  package static func percentDecode(_ text: String) -> String {
    guard text.utf8.contains(0x25) else { return text }
    let bytes = Array(text.utf8)
    var out: [UInt8] = []
    var index = 0
    while index < bytes.count {
      if bytes[index] == 0x25, index + 2 < bytes.count, let high = Hex.value(of: bytes[index + 1]),
        let low = Hex.value(of: bytes[index + 2])
      {
        out.append(high << 4 | low)
        index += 3
      } else {
        out.append(bytes[index])
        index += 1
      }
    }
    return String(decoding: out, as: UTF8.self)
  }
}
