import BatchDLSupport

/// What the readers of both formats share: names checked once each, duplicates, the entry limit.
struct EntryCollector {
  var listing: Listing
  /// Names by their bytes: `café` in NFC and in NFD are two files upstream.
  private var seen: [ByteString: SourceMark] = [:]
  private var full = false

  typealias Listing = DirectoryIndex.Listing

  init(folderURL: String) {
    listing = Listing(folderURL: folderURL, format: nil, title: nil)
  }

  /// Adds the child `name` (decoded) unless it is refused, listed before, or past the limit.
  mutating func add(
    name: String, isFolder: Bool, url: String, date: String?, size: String?, listed: DirectoryIndex.ListedSize?,
    mark: SourceMark
  ) {
    if full { return }
    if let problem = DirectoryIndex.nameProblem(name) {
      let message = "the listing's name '\(ShownText.escaped(name, limit: 200))' \(problem); it is left out"
      listing.leftOut.append(DirectoryIndex.LeftOutEntry(name: name, mark: mark, message: message))
      listing.diagnostics.append(Diagnostic(.error, at: mark, message))
      return
    }
    if let first = seen[ByteString(name)] {
      listing.diagnostics.append(
        Diagnostic(
          .warning, at: mark,
          "the listing names '\(ShownText.escaped(name, limit: 200))' again (first at \(first.line):\(first.column)); the first is kept"
        ))
      return
    }
    if listing.entries.count == DirectoryIndex.maxEntries {
      full = true
      listing.isComplete = false
      listing.diagnostics.append(
        Diagnostic(
          .error, at: mark,
          "the listing has more than \(DirectoryIndex.maxEntries) entries, the most batchdl reads of one folder; the rest are left out"
        ))
      return
    }
    seen[ByteString(name)] = mark
    listing.entries.append(
      DirectoryIndex.Entry(
        name: name, isFolder: isFolder, url: url, sizeText: size, dateText: date, size: listed, mark: mark))
  }

  /// A name that is not valid UTF-8 after percent-decoding.
  mutating func refuseEncoding(_ segment: String, mark: SourceMark) {
    if full { return }
    let message =
      "the listing's name '\(ShownText.escaped(segment, limit: 200))' is not UTF-8 once percent-decoded; it is left out"
    listing.leftOut.append(DirectoryIndex.LeftOutEntry(name: segment, mark: mark, message: message))
    listing.diagnostics.append(Diagnostic(.error, at: mark, message))
  }
}
