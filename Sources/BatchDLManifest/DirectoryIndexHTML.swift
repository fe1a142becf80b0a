import BatchDLSupport
import CXML

/// The HTML listings (nginx, Apache, lighttpd): the page's links as libxml2's HTML parser reads
/// them (CXML's `cxml_html_links`), each resolved against the folder.
enum HTMLListing {
  /// One `<a href>` of the page.
  struct Link {
    /// nil when longer than `DirectoryIndex.maxHrefBytes`.
    var href: String?
    var text: String
    /// The text after it: the date and size (table cells start with a tab).
    var after: String
    var cellClass: String?
    /// libxml2's line (65,535 for every line past it).
    var line: Int
    var container: Int32
  }

  struct Page {
    var title: String?
    var links: [Link]
    /// The page had more links or text than the limits: the rest was not read.
    var cut: Bool
  }

  /// The links of the page, or nil when libxml2 made nothing of it (empty) or memory ran out.
  static func page(_ bytes: [UInt8], encoding: String) -> Page? {
    var limits = cxml_html_limits(
      max_links: Int32(DirectoryIndex.maxLinks), max_href: Int32(DirectoryIndex.maxHrefBytes),
      max_text: Int32(DirectoryIndex.maxTextBytes),
      // What the strings may take together, a backstop: each byte of the page goes into one
      // string at most, and a string's buffer is at most twice what it holds (48 MiB), plus the
      // records and the smallest buffers of every link.
      max_total: 3 * DirectoryIndex.maxBytes + DirectoryIndex.maxLinks * 128)
    var html = cxml_html()
    defer { cxml_html_free(&html) }
    let code = bytes.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: CChar.self) { chars in
        encoding.withCString { cxml_html_links(chars.baseAddress, Int32(chars.count), $0, &limits, &html) }
      }
    }
    guard code == 0 else { return nil }
    var links: [Link] = []
    links.reserveCapacity(Int(html.count))
    for index in 0..<Int(html.count) {
      guard let link = html.links?[index] else { break }
      links.append(
        Link(
          href: link.href.map { String(cString: $0) }, text: link.text.map { String(cString: $0) } ?? "",
          after: link.after.map { String(cString: $0) } ?? "", cellClass: link.cell_class.map { String(cString: $0) },
          line: Int(link.line), container: link.container))
    }
    return Page(title: html.title.map { String(cString: $0) }, links: links, cut: html.more_links != 0)
  }

  /// What the page is, by its title and links: nil without an `Index of` (or Python's `Directory
  /// listing for`) title.
  static func format(of page: Page) -> DirectoryIndex.Format? {
    guard let title = page.title, title.hasPrefix("Index of ") || title.hasPrefix("Directory listing for ") else {
      return nil
    }
    let links = page.links
    if links.contains(where: { $0.container == CXML_IN_CELL && $0.cellClass == "n" }) { return .lighttpd }
    if links.contains(where: {
      $0.href?.hasPrefix("?C=") == true || DirectoryIndex.trimmed($0.text) == "Parent Directory"
    }) {
      return .apache
    }
    if title.hasPrefix("Index of "), links.first?.href == "../", links.allSatisfy({ $0.container == CXML_IN_PRE }) {
      return .nginx
    }
    return .other
  }

  static func read(
    _ bytes: [UInt8], encoding: String, resolver: LinkResolver, positions: Positions
  )
    -> DirectoryIndex.Listing
  {
    var collector = EntryCollector(folderURL: resolver.folderText)
    let start = SourceMark(file: positions.file, line: 1, column: 1)
    guard let page = page(bytes, encoding: encoding) else {
      collector.listing.isComplete = false
      collector.listing.diagnostics.append(
        Diagnostic(.error, at: start, "the page is empty (or too large to parse): not a directory listing"))
      return collector.listing
    }
    collector.listing.title = page.title
    guard let format = format(of: page) else {
      collector.listing.isComplete = false
      let title = page.title.map { "its title is '\(ShownText.escaped($0, limit: 80))'" } ?? "it has no title"
      collector.listing.diagnostics.append(
        Diagnostic(
          .error, at: start,
          "the page is not a directory listing: \(title), where nginx, Apache and lighttpd write 'Index of /PATH'"))
      return collector.listing
    }
    collector.listing.format = format
    var marker = LinkMarker(positions: positions)
    for link in page.links {
      let mark = marker.mark(line: link.line)
      guard let href = link.href else {
        collector.listing.ignoredLinks += 1
        collector.listing.diagnostics.append(
          Diagnostic(
            .warning, at: mark,
            "a link longer than \(DirectoryIndex.maxHrefBytes) bytes is ignored: no name is that long"))
        continue
      }
      guard case .child(let segment, let isFolder, let url) = resolver.resolve(href) else {
        collector.listing.ignoredLinks += 1
        continue
      }
      guard let name = String(validating: LinkResolver.percentDecoded(segment), as: UTF8.self) else {
        collector.refuseEncoding(segment, mark: mark)
        continue
      }
      let (date, size) = DirectoryIndex.dateAndSize(after: link.after)
      collector.add(
        name: name, isFolder: isFolder, url: url, date: date, size: size,
        listed: size.flatMap(DirectoryIndex.listedSize), mark: mark)
    }
    if page.cut {
      collector.listing.isComplete = false
      collector.listing.diagnostics.append(
        Diagnostic(
          .error, at: marker.lastMark ?? start,
          "the page has more than \(DirectoryIndex.maxLinks) links (or more text than batchdl keeps of one page); the rest are left out"
        ))
    }
    return collector.listing
  }
}

/// Where each link of a page starts: libxml2 gives the line of each `<a>` (up to 65,535, its
/// limit for HTML), and the column is that of the next `<a` on that line not taken yet. Past line
/// 65,535 the next `<a` of the page is taken. Links are asked for in page order, so the page is
/// searched once, forward.
struct LinkMarker {
  static let cappedLine = 65_535
  let positions: Positions
  private var last = -1
  private var exhausted = false
  private(set) var lastMark: SourceMark?

  init(positions: Positions) {
    self.positions = positions
  }

  mutating func mark(line: Int) -> SourceMark {
    let bytes = positions.bytes
    let starts = positions.lineStarts
    let capped = line <= 0 || line >= Self.cappedLine
    let lineIndex = capped ? Self.cappedLine - 1 : line - 1
    let fallback = SourceMark(file: positions.file, line: max(1, capped ? Self.cappedLine : line), column: 1)
    guard lineIndex < starts.count, !(capped && exhausted) else {
      lastMark = fallback
      return fallback
    }
    var offset = max(starts[lineIndex], last + 1)
    while offset + 1 < bytes.count {
      let byte = bytes[offset]
      if byte == 0x0A && !capped { break }
      if byte == 0x3C, bytes[offset + 1] | 0x20 == 0x61 {
        let next = offset + 2 < bytes.count ? bytes[offset + 2] : 0x3E
        if next == 0x20 || next == 0x09 || next == 0x0A || next == 0x0D || next == 0x0C || next == 0x3E || next == 0x2F
        {
          last = offset
          let mark = positions.mark(ofByte: offset)
          lastMark = mark
          return mark
        }
      }
      offset += 1
    }
    if capped { exhausted = true }
    lastMark = fallback
    return fallback
  }
}
