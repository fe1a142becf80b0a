import BatchDLSupport

/// Line and column of byte offsets in a document; columns count characters, as libxml2 does.
///
/// Positions are asked for in document order, often many on one long line: each lookup goes on
/// from the last one instead of walking the line from its start again.
package final class Positions {
  package let bytes: [UInt8]
  package let file: String
  /// Byte offset of the start of each line.
  package let lineStarts: [Int]
  /// The last position found by `tagStart`: line, column and byte offset.
  private var tagCursor = (line: 0, column: 0, offset: 0)
  /// The last position found by `mark(ofByte:)`: byte offset, line and column.
  private var markCursor = (offset: -1, line: 0, column: 0)

  package init(_ bytes: [UInt8], file: String) {
    self.bytes = bytes
    self.file = file
    var starts = [0]
    for (index, byte) in bytes.enumerated() where byte == 0x0A { starts.append(index + 1) }
    lineStarts = starts
  }

  package func find(_ needle: [UInt8]) -> Int? {
    guard let first = needle.first, bytes.count >= needle.count else { return nil }
    var index = 0
    while index + needle.count <= bytes.count {
      if bytes[index] == first, bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
      index += 1
    }
    return nil
  }

  /// The mark of byte `offset`.
  package func mark(ofByte offset: Int) -> SourceMark {
    var low = 0
    var high = lineStarts.count - 1
    while low < high {
      let middle = (low + high + 1) / 2
      if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
    }
    var column = 1
    var index = lineStarts[low]
    if markCursor.line == low + 1, markCursor.offset >= index, markCursor.offset <= offset {
      index = markCursor.offset
      column = markCursor.column
    }
    while index < offset && index < bytes.count {
      index += 1
      if index >= bytes.count || bytes[index] & 0xC0 != 0x80 { column += 1 }
    }
    markCursor = (offset, low + 1, column)
    return SourceMark(file: file, line: low + 1, column: column)
  }

  /// The start (`<`) of the tag the parser stands in at `line`:`column` (libxml2 reports a start
  /// tag's position at its closing `>` or `/>`). Attribute values cannot hold `<`, so the nearest one
  /// before is where the tag starts.
  package func tagStart(line: Int, column: Int) -> SourceMark {
    guard line >= 1, line <= lineStarts.count, !bytes.isEmpty else {
      return SourceMark(file: file, line: max(1, line), column: max(1, column))
    }
    var offset = lineStarts[line - 1]
    var characters = 1
    if tagCursor.line == line, tagCursor.column <= column {
      offset = tagCursor.offset
      characters = tagCursor.column
    }
    while characters < column && offset < bytes.count && bytes[offset] != 0x0A {
      offset += 1
      if offset >= bytes.count || bytes[offset] & 0xC0 != 0x80 { characters += 1 }
    }
    tagCursor = (line, characters, offset)
    var probe = min(offset, bytes.count - 1)
    while probe >= 0 {
      if bytes[probe] == 0x3C { return mark(ofByte: probe) }
      probe -= 1
    }
    return SourceMark(file: file, line: line, column: max(1, column))
  }
}
