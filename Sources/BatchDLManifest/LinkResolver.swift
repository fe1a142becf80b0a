import BatchDLSupport

/// Resolves a page's links against its folder's URL (`URLReferenceResolver`: libcurl's URL API)
/// and keeps those that name a child of the folder. Not thread-safe.
final class LinkResolver {
  struct Problem: Error, CustomStringConvertible {
    var description: String
  }

  /// What a link is to the folder.
  enum Outcome: Equatable {
    /// A child: its raw (still percent-encoded) name, whether it ends with `/`, its normalized URL.
    case child(segment: String, isFolder: Bool, url: String)
    /// A link that is no entry (elsewhere, the parent, the folder itself, a query or a fragment).
    case ignored
  }

  /// The folder's normalized URL, ending with `/`, without query or fragment.
  let folderText: String
  private let references = URLReferenceResolver()
  private let normalizer = URLNormalizer()

  private init(folderText: String) {
    self.folderText = folderText
  }

  static func make(folderURL: String) -> Result<LinkResolver, Problem> {
    let normalizer = URLNormalizer()
    let normal: NormalizedURL
    switch normalizer.normalize(folderURL) {
    case .success(let value): normal = value
    case .failure(let problem): return .failure(Problem(description: "the index URL: \(problem.description)"))
    }
    var text = normal.text
    if let query = text.firstIndex(of: "?") { text = String(text[..<query]) }
    guard text.hasSuffix("/") else {
      return .failure(
        Problem(
          description:
            "the index URL '\(ShownText.escaped(Redactor.stripUserInfo(folderURL), limit: 200))' does not end with '/': a listing's links are relative to a folder"
        ))
    }
    return .success(LinkResolver(folderText: text))
  }

  /// What `href` (as the page wrote it, entities decoded) is to the folder.
  func resolve(_ href: String) -> Outcome {
    // A browser drops white space around an href and tabs and line breaks inside it.
    var text = Substring(href)
    while let first = text.utf8.first, first <= 0x20 { text = text.dropFirst() }
    while let last = text.utf8.last, last <= 0x20 { text = text.dropLast() }
    if let hash = text.firstIndex(of: "#") { text = text[..<hash] }
    // Bytes, not Foundation's substring search (every link of every page passes here).
    if text.isEmpty || text.utf8.contains(0x3F) { return .ignored }
    guard let resolved = references.resolve(Self.encodeForURL(text), against: folderText) else { return .ignored }
    guard case .success(let normal) = normalizer.normalize(resolved), normal.text.hasPrefix(folderText) else {
      return .ignored
    }
    var rest = normal.text.dropFirst(folderText.count)
    if rest.utf8.contains(where: { $0 == 0x3F || $0 == 0x23 }) { return .ignored }
    let isFolder = rest.utf8.last == 0x2F
    if isFolder { rest = rest.dropLast() }
    // The folder itself, or a deeper path: no child of this folder.
    if rest.isEmpty || rest.utf8.contains(0x2F) { return .ignored }
    return .child(segment: String(rest), isFolder: isFolder, url: normal.text)
  }

  /// `text` with the bytes a URL cannot hold as they are percent-encoded (what a browser sends
  /// for a raw space or a non-ASCII letter in a link); tabs and line breaks dropped.
  static func encodeForURL(_ text: Substring) -> String {
    guard text.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F || $0 == 0x22 || $0 == 0x3C || $0 == 0x3E }) else {
      return String(text)
    }
    var out: [UInt8] = []
    out.reserveCapacity(text.utf8.count + 16)
    for byte in text.utf8 {
      if byte == 0x09 || byte == 0x0A || byte == 0x0D { continue }
      if byte <= 0x20 || byte >= 0x7F || byte == 0x22 || byte == 0x3C || byte == 0x3E {
        Hex.appendPercentEncoded(byte, to: &out, upperCase: true)
      } else {
        out.append(byte)
      }
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// The bytes of `segment` with every `%XX` decoded.
  static func percentDecoded(_ segment: String) -> [UInt8] {
    Hex.percentDecoded(Array(segment.utf8))
  }

  /// `name` percent-encoded as one path segment (every byte but the unreserved ones), appended to
  /// the folder's URL: the URL of a JSON entry.
  func childURL(named name: String, isFolder: Bool) -> String {
    var out = Array(folderText.utf8)
    for byte in name.utf8 {
      let unreserved =
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
        || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
      if unreserved { out.append(byte) } else { Hex.appendPercentEncoded(byte, to: &out, upperCase: true) }
    }
    if isFolder { out.append(0x2F) }
    return String(decoding: out, as: UTF8.self)
  }
}
