import BatchDLSupport

/// Reading one folder of a server's directory listing, the document behind `index:`: the HTML
/// autoindex pages of nginx, Apache (mod_autoindex) and lighttpd (mod_dirlisting), and nginx's
/// `autoindex_format json`.
///
/// A listing comes from the network and is read as hostile: its size and entry count are bounded,
/// its links are resolved against the folder's URL with libcurl's URL API (the page's `<base>` is
/// not followed), only links to the folder's own children are entries (parent, sort and query
/// links, fragments and links to anywhere else are counted and ignored), and each name goes through
/// the rules of a destination (`RelativeDestination`) before anything is named after it.
///
/// `DirectoryIndex.Filter` matches `include:`/`exclude:` globs, and `nextFolders` says which pages
/// to fetch next for `depth:` (DirectoryIndexCrawl.swift).
public enum DirectoryIndex {
  /// The largest page read: 16 MiB, about 150,000 entries of nginx's HTML.
  public static let maxBytes = 16 << 20
  /// The most entries taken from one page; the rest are left out with an error.
  public static let maxEntries = 100_000
  /// The most links read from one HTML page, those ignored included (parent, sort links...).
  public static let maxLinks = 2 * maxEntries
  /// The longest href read (bytes): a name of 255 bytes percent-encoded takes 765, and an
  /// absolute link adds its folder's URL.
  public static let maxHrefBytes = 16 << 10
  /// The most bytes kept of a link's text, of the text after it (its date and size) and of the
  /// page's title.
  public static let maxTextBytes = 1024

  /// The kind of listing a page was recognized as.
  public enum Format: String, Sendable, Hashable {
    /// nginx's `autoindex on` page: `<title>Index of /path/</title>`, one `<a>` a line in a
    /// `<pre>` followed by the date (`05-Mar-2024 10:20`) and the size (bytes, or `3M` with
    /// `autoindex_exact_size off`).
    case nginx
    /// nginx's `autoindex_format json`: `[{"name", "type", "mtime", "size"}]`.
    case nginxJSON = "nginx-json"
    /// Apache's mod_autoindex: a table (`HTMLTable`), a `<pre>` (`FancyIndexing`) or a list,
    /// recognized by its `?C=N;O=D` sort links or its `Parent Directory` link.
    case apache
    /// lighttpd's mod_dirlisting: a table whose name cells have `class="n"`.
    case lighttpd
    /// A page titled `Index of ...` (or `Directory listing for ...`) from another server: its
    /// links are read the same way.
    case other
    /// An S3 bucket's ListObjectsV2 pages (a bucket index).
    case s3
  }

  /// A size as a listing shows it.
  public struct ListedSize: Hashable, Sendable {
    /// The size in bytes; when not exact, the listing's rounded figure (`1.2K` is 1229).
    public var bytes: Int64
    /// A plain number of bytes (nginx by default, Apache below 1K, JSON), not `1.2K` or `3M`.
    public var isExact: Bool

    public init(bytes: Int64, isExact: Bool) {
      self.bytes = bytes
      self.isExact = isExact
    }
  }

  /// One child of the folder: a file or a sub-folder.
  public struct Entry: Hashable, Sendable {
    /// The name, percent-decoded: one path segment that `RelativeDestination` accepts (no `/`,
    /// `.`, `..`, control character or NUL; valid UTF-8).
    public var name: String
    /// The listing links it with a trailing `/` (JSON: `"type": "directory"`).
    public var isFolder: Bool
    /// Its absolute URL, normalized (`URLNormalizer`): under the folder's URL, ending with `/` for
    /// a folder.
    public var url: String
    /// The size as listed (`1234`, `1.2K`), nil for none or `-`.
    public var sizeText: String?
    /// The date as listed (`05-Mar-2024 10:20`, `2024-03-05 10:20`, an HTTP date in JSON).
    public var dateText: String?
    /// `sizeText` read as bytes, when it reads as a size.
    public var size: ListedSize?
    /// Where the entry's link (its `<a>`, its JSON object) starts in the page.
    public var mark: SourceMark
    /// An S3 object's `ETag`, as listed (a bucket index): part of its fingerprint.
    public var etag: String? = nil

    /// The listed size and date as one text, to compare with an earlier run's: a file whose
    /// fingerprint changed is fetched again. Empty when the listing shows neither (Apache without
    /// FancyIndexing): then a change cannot be seen. Dates are to the minute in nginx's and
    /// Apache's HTML: a change of the same size within a minute is not seen either. An S3
    /// object's ETag changes with its bytes, so a bucket's changes are always seen.
    public var fingerprint: String {
      if sizeText == nil && dateText == nil && etag == nil { return "" }
      return "\(sizeText ?? "-") \(dateText ?? "-")" + (etag.map { " " + $0 } ?? "")
    }
  }

  /// A name the page links to inside the folder that is refused as a name, and why.
  public struct LeftOutEntry: Hashable, Sendable {
    /// The name as decoded (may hold the characters that made it refused).
    public var name: String
    public var mark: SourceMark
    /// The diagnostic's message (the name escaped).
    public var message: String
  }

  /// One folder's page as read.
  public struct Listing: Sendable {
    /// The folder's URL, normalized (ends with `/`).
    public var folderURL: String
    /// What the page was recognized as; nil when it is not a directory listing (no `Index of`
    /// title, not JSON, unreadable): the caller tells "an empty folder" (a format, no entries)
    /// from "not a listing" (nil) with it.
    public var format: Format?
    /// The page's `<title>`, white space collapsed.
    public var title: String?
    /// The folder's children in page order, each name once.
    public var entries: [Entry] = []
    /// Names refused (each also an error in `diagnostics`): the other entries are unaffected.
    public var leftOut: [LeftOutEntry] = []
    /// Links that are no entries: the parent, sort and query links, fragments, links elsewhere.
    public var ignoredLinks = 0
    /// False when a limit cut the page short, or it could not be read at all.
    public var isComplete = true
    /// Errors and warnings in page order, at `URL:LINE:COLUMN`.
    public var diagnostics: [Diagnostic] = []

    /// The page is a directory listing (possibly of an empty folder).
    public var isListing: Bool { format != nil }
    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
  }

  /// Reads one folder's page: `bytes` as received from `folderURL` (the URL of a folder, ending
  /// with `/`), whose response said `contentType` (nil when it said none: the format is then
  /// sniffed). `display` names the page in diagnostics (default: the folder's URL without its
  /// user and password).
  public static func parse(
    _ bytes: [UInt8], folderURL: String, contentType: String?, display: String? = nil
  )
    -> Listing
  {
    let file = display ?? Redactor.stripUserInfo(folderURL)
    let start = SourceMark(file: file, line: 1, column: 1)
    func failed(_ folder: String, _ message: String) -> Listing {
      var listing = Listing(folderURL: folder, format: nil, title: nil)
      listing.isComplete = false
      listing.diagnostics = [Diagnostic(.error, at: start, message)]
      return listing
    }
    let resolver: LinkResolver
    switch LinkResolver.make(folderURL: folderURL) {
    case .success(let made): resolver = made
    case .failure(let problem): return failed(folderURL, problem.description)
    }
    let folder = resolver.folderText
    if bytes.count > maxBytes {
      return failed(
        folder, "the listing holds \(bytes.count) bytes, more than \(maxBytes >> 20) MiB, the most batchdl reads of one"
      )
    }
    if let problem = encodingProblem(bytes) { return failed(folder, problem) }
    let positions = Positions(bytes, file: file)
    switch documentKind(bytes, contentType: contentType) {
    case .json:
      return JSONListing.read(bytes, resolver: resolver, positions: positions)
    case .html(let encoding):
      return HTMLListing.read(bytes, encoding: encoding, resolver: resolver, positions: positions)
    case .unsupported(let type):
      return failed(
        folder,
        "the index URL answered with the content type '\(ShownText.escaped(type, limit: 60))': not a directory listing (HTML, or nginx's JSON)"
      )
    }
  }

  enum DocumentKind: Equatable {
    /// HTML in this character set (as libxml2 names it).
    case html(String)
    case json
    case unsupported(String)
  }

  /// The format the content type says (`application/json`, `text/html`), else the one the first
  /// byte shows (`[` or `{` for JSON, anything else is read as HTML).
  static func documentKind(_ bytes: [UInt8], contentType: String?) -> DocumentKind {
    var mediaType = ""
    var charset = ""
    if let contentType {
      let parts = contentType.split(separator: ";", omittingEmptySubsequences: false)
      mediaType = trimmed(parts.first ?? "").lowercased()
      for parameter in parts.dropFirst() {
        let pair = parameter.split(separator: "=", maxSplits: 1).map { trimmed($0) }
        if pair.count == 2, pair[0].lowercased() == "charset" {
          charset = pair[1].lowercased().filter { $0 != "\"" && $0 != "'" }
        }
      }
    }
    let encoding: String
    switch charset {
    case "iso-8859-1", "iso8859-1", "latin1", "l1", "iso_8859-1": encoding = "ISO-8859-1"
    case "windows-1252", "cp1252": encoding = "WINDOWS-1252"
    // UTF-8, US-ASCII and the rest: a listing's names are in its percent-encoded links, and
    // other character sets are not worth libxml2's converters on a hostile page.
    default: encoding = "UTF-8"
    }
    switch mediaType {
    case "application/json", "text/json":
      return .json
    case _ where mediaType.hasSuffix("+json"):
      return .json
    case "text/html", "application/xhtml+xml":
      return .html(encoding)
    case "", "text/plain", "application/octet-stream", "application/unknown", "unknown/unknown":
      let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
      let first = body.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
      return first == UInt8(ascii: "[") || first == UInt8(ascii: "{") ? .json : .html(encoding)
    default:
      return .unsupported(mediaType)
    }
  }

  /// Why a page is not read: UTF-16 or UTF-32 (their NUL bytes would cut libxml2's input short,
  /// and neither server writes them).
  static func encodingProblem(_ bytes: [UInt8]) -> String? {
    if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) || bytes.prefix(4).contains(0) {
      return "the listing is not UTF-8 (it looks like UTF-16 or UTF-32): batchdl reads listings in UTF-8"
    }
    return nil
  }

  /// `name` as an entry's name, or why it is refused: one segment that `RelativeDestination`
  /// takes as it is (no `/`, `.`, `..`, control character, NUL; at most 255 bytes).
  static func nameProblem(_ name: String) -> String? {
    if name.isEmpty { return "is empty" }
    if name == "." || name == ".." { return "is '\(name)': a name may not climb out of its folder" }
    if name.utf8.contains(0x2F) { return "contains '/': a name is one path segment" }
    switch RelativeDestination.parse(name) {
    case .failure(let problem): return problem.reason.message
    case .success(let destination):
      return destination.path == name ? nil : "is not a plain name"
    }
  }

  /// Reads a size as nginx, Apache and lighttpd show it: bytes (`1234`, exact), or a figure with
  /// a binary unit (`1.2K`, `3M`, `0.1K`, approximate; `B`, `KB`, `KiB` spellings too). Nil for
  /// anything else (`-` included).
  static func listedSize(_ text: String) -> ListedSize? {
    var digits = Substring(text)
    if digits.hasSuffix("iB") {
      digits = digits.dropLast(2)
    } else if digits.hasSuffix("B") || digits.hasSuffix("b") {
      digits = digits.dropLast()
    }
    var shift = 0
    var hasUnit = false
    if let last = digits.last, let power = "KMGTPE".firstIndex(of: Character(last.uppercased())) {
      shift = 10 * ("KMGTPE".distance(from: "KMGTPE".startIndex, to: power) + 1)
      hasUnit = true
      digits = digits.dropLast()
    }
    let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count <= 2, let whole = parts.first, !whole.isEmpty, whole.count <= 18,
      whole.allSatisfy({ $0.isASCII && $0.isNumber }), let wholeValue = Int64(whole)
    else { return nil }
    var fraction = 0.0
    if parts.count == 2 {
      let decimals = parts[1]
      guard hasUnit, !decimals.isEmpty, decimals.count <= 3, decimals.allSatisfy({ $0.isASCII && $0.isNumber }),
        let value = Double("0." + decimals)
      else { return nil }
      fraction = value
    }
    if !hasUnit { return ListedSize(bytes: wholeValue, isExact: true) }
    let bytes = (Double(wholeValue) + fraction) * Double(Int64(1) << shift)
    guard bytes < 9.2e18 else { return nil }
    return ListedSize(bytes: Int64(bytes.rounded()), isExact: false)
  }

  /// The date and size in the text that follows a link (`05-Mar-2024 10:20   1234`,
  /// `\t2024-03-05 10:20\t1.2K\t`): the first word that reads as a date (digits with `-` or `/`),
  /// with the time after it, then the first word after those that reads as a size or is `-`.
  static func dateAndSize(after text: String) -> (date: String?, size: String?) {
    // Words split on the UTF-8 bytes (space, tab, CR, LF and the no-break space C2 A0): every line
    // of every page passes here, and a String's Characters cost ten times as much.
    var words: [ArraySlice<UInt8>] = []
    let bytes = Array(text.utf8)
    var start = 0
    var index = 0
    while index < bytes.count {
      let byte = bytes[index]
      let width =
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
        ? 1
        : byte == 0xC2 && index + 1 < bytes.count && bytes[index + 1] == 0xA0 ? 2 : 0
      if width > 0 {
        if index > start { words.append(bytes[start..<index]) }
        index += width
        start = index
      } else {
        index += 1
      }
    }
    if bytes.count > start { words.append(bytes[start...]) }
    func string(_ word: ArraySlice<UInt8>) -> String { String(decoding: word, as: UTF8.self) }
    var position = 0
    var date: String?
    if let found = words.firstIndex(where: isDateWord) {
      var text = string(words[found])
      position = found + 1
      if position < words.count, isTimeWord(words[position]) {
        text += " " + string(words[position])
        position += 1
      }
      date = text
    }
    var size: String?
    while position < words.count {
      let word = words[position]
      if word.count == 1 && word.first == 0x2D { break }  // "-"
      let text = string(word)
      if listedSize(text) != nil {
        size = text
        break
      }
      // Only the column right after the date holds the size; a word there that is not one means
      // the listing shows none.
      if date != nil { break }
      position += 1
    }
    return (date, size)
  }

  /// `text` without the spaces, tabs and no-break spaces around it.
  static func trimmed(_ text: some StringProtocol) -> String {
    let isSpace = { (character: Character) in character == " " || character == "\t" || character == "\u{A0}" }
    guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) })
    else { return "" }
    return String(text[first...last])
  }

  /// A date: 6 to 32 ASCII letters, digits, `-`, `/` and `.`, with a digit and a `-` or `/`.
  private static func isDateWord(_ word: ArraySlice<UInt8>) -> Bool {
    guard word.count >= 6 && word.count <= 32 else { return false }
    var digit = false
    var separator = false
    for byte in word {
      switch byte {
      case 0x30...0x39: digit = true
      case 0x2D, 0x2F: separator = true
      case 0x41...0x5A, 0x61...0x7A, 0x2E: break
      default: return false
      }
    }
    return digit && separator
  }

  /// A time: 4 to 12 of digits, `:` and `.`, with a `:`.
  private static func isTimeWord(_ word: ArraySlice<UInt8>) -> Bool {
    guard word.count >= 4 && word.count <= 12 else { return false }
    var colon = false
    for byte in word {
      switch byte {
      case 0x3A: colon = true
      case 0x30...0x39, 0x2E: break
      default: return false
      }
    }
    return colon
  }
}
