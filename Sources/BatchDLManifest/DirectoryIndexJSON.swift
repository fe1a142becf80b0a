import BatchDLSupport
import Foundation

/// nginx's `autoindex_format json`: an array of `{"name", "type", "mtime", "size"}` objects, read
/// with Foundation's `JSONDecoder` (an element it cannot read is ignored, not the whole page).
enum JSONListing {
  /// One element of the array, read leniently: what is missing or of another type is nil.
  struct Item: Decodable {
    var isObject = false
    var name: String?
    var type: String?
    var mtime: String?
    var size: Int64?
    /// `size` was given but is no whole number of bytes (a fraction, negative, a string, huge).
    var badSize = false

    enum Key: String, CodingKey {
      case name, type, mtime, size
    }

    init(from decoder: any Decoder) throws {
      guard let object = try? decoder.container(keyedBy: Key.self) else { return }
      isObject = true
      name = try? object.decode(String.self, forKey: .name)
      type = try? object.decode(String.self, forKey: .type)
      mtime = try? object.decode(String.self, forKey: .mtime)
      if object.contains(.size) {
        size = (try? object.decode(Int64.self, forKey: .size)).flatMap { $0 >= 0 ? $0 : nil }
        badSize = size == nil && !((try? object.decodeNil(forKey: .size)) ?? false)
      }
    }
  }

  static func read(_ bytes: [UInt8], resolver: LinkResolver, positions: Positions) -> DirectoryIndex.Listing {
    var collector = EntryCollector(folderURL: resolver.folderText)
    let start = SourceMark(file: positions.file, line: 1, column: 1)
    func notListing(_ why: String) -> DirectoryIndex.Listing {
      collector.listing.isComplete = false
      collector.listing.diagnostics.append(
        Diagnostic(.error, at: start, "the page is not a directory listing: \(why)"))
      return collector.listing
    }
    let items: [Item]
    do {
      items = try JSONDecoder().decode([Item].self, from: Data(bytes))
    } catch {
      return notListing("it is not a JSON array (nginx's autoindex_format json writes [{\"name\": ...}, ...])")
    }
    if !items.isEmpty && !items.contains(where: { $0.name != nil && $0.type != nil }) {
      return notListing("no element of its JSON array has a \"name\" and a \"type\", as nginx's do")
    }
    collector.listing.format = .nginxJSON
    let starts = elementStarts(bytes, limit: items.count)
    for (index, item) in items.enumerated() {
      let mark = index < starts.count ? positions.mark(ofByte: starts[index]) : start
      guard item.isObject, let name = item.name, let type = item.type else {
        collector.listing.ignoredLinks += 1
        collector.listing.diagnostics.append(
          Diagnostic(
            .warning, at: mark, "element \(index + 1) of the listing has no \"name\" or \"type\"; it is ignored"))
        continue
      }
      guard type == "file" || type == "directory" else {
        // nginx's "other": neither a file nor a folder (a socket, a device).
        collector.listing.ignoredLinks += 1
        continue
      }
      if item.badSize {
        collector.listing.diagnostics.append(
          Diagnostic(
            .warning, at: mark,
            "the listing gives '\(ShownText.escaped(name, limit: 200))' a \"size\" that is no whole number of bytes; it is not used"
          ))
      }
      let isFolder = type == "directory"
      collector.add(
        name: name, isFolder: isFolder, url: resolver.childURL(named: name, isFolder: isFolder), date: item.mtime,
        size: item.size.map { String($0) },
        listed: item.size.map { DirectoryIndex.ListedSize(bytes: $0, isExact: true) },
        mark: mark)
    }
    return collector.listing
  }

  /// The byte offsets where the first `limit` elements of the top-level array start: one pass
  /// over the bytes that skips strings and what nests.
  static func elementStarts(_ bytes: [UInt8], limit: Int) -> [Int] {
    var starts: [Int] = []
    starts.reserveCapacity(limit)
    var depth = 0
    var inString = false
    var escaped = false
    var expecting = false
    for (offset, byte) in bytes.enumerated() {
      if starts.count == limit { break }
      if inString {
        if escaped {
          escaped = false
        } else if byte == 0x5C {
          escaped = true
        } else if byte == 0x22 {
          inString = false
        }
        continue
      }
      let isSpace = byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
      if expecting && !isSpace && byte != 0x5D {
        starts.append(offset)
        expecting = false
      }
      switch byte {
      case 0x22: inString = true
      case 0x5B, 0x7B:
        depth += 1
        if depth == 1 && byte == 0x5B { expecting = true }
      case 0x5D, 0x7D: depth -= 1
      case 0x2C: if depth == 1 { expecting = true }
      default: break
      }
    }
    return starts
  }
}
