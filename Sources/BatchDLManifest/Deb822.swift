/// One paragraph (stanza) of a deb822 document, with only the fields its reader asked for.
package struct Deb822Stanza {
  /// A field: its name in lower case, the line it starts on, the value on that line, and its
  /// continuation lines (each without its leading space or tab and trailing white space).
  package struct Field {
    package var name: [UInt8]
    package var line: Int
    package var value: [UInt8]
    package var continuation: [(line: Int, bytes: [UInt8])] = []
  }

  /// The line of its first field.
  package var firstLine = 0
  /// The fields asked for, in the order they came.
  package var fields: [Field] = []
  /// Lines that are no field and no continuation, and fields asked for that come twice.
  package var problems: [(line: Int, message: String)] = []

  /// The field named `name` (lower case).
  package func field(_ name: String) -> Field? {
    fields.first { $0.name.elementsEqual(name.utf8) }
  }
}

/// Reads a deb822 document (Debian's `Release`, `Packages`, `Sources`) from bytes handed over in
/// chunks of any size: each complete paragraph goes to a callback, holding only the fields asked
/// for, so a document of hundreds of MB is never held whole nor copied.
///
/// - Paragraphs are separated by blank lines; a line of spaces and tabs only is blank (an OpenPGP
///   signature does not cover trailing white space, so it cannot tell the two apart).
/// - `Name: value` starts a field; field names are compared in ASCII lower case. A line that
///   starts with a space or a tab continues the field before it. A line that starts with `#` is a
///   comment and is skipped.
/// - Trailing spaces, tabs and a carriage return are dropped from every line.
/// - Bounded: a line longer than `maxLineBytes`, a document longer than `maxBytes` or with more
///   than `maxStanzas` paragraphs stops the reading with `failure` set.
package struct Deb822Reader {
  package let wanted: Set<[UInt8]>
  package let maxLineBytes: Int
  package let maxBytes: Int64
  package let maxStanzas: Int
  /// Why the reading stopped, and at which line; nothing more is read after it.
  package private(set) var failure: (line: Int, message: String)?
  package private(set) var stanzaCount = 0
  package private(set) var lineNumber = 0
  package private(set) var byteCount: Int64 = 0

  private var carry: [UInt8] = []
  private var stanza = Deb822Stanza()
  private var inStanza = false
  /// Whether continuation lines belong to a field asked for (the last of `stanza.fields`).
  private var continuing: Continuing = .none

  private enum Continuing { case none, wanted, other }

  /// `wanted`: the names of the fields to keep, in lower case.
  package init(wanted: [String], maxLineBytes: Int, maxBytes: Int64, maxStanzas: Int) {
    self.wanted = Set(wanted.map { Array($0.lowercased().utf8) })
    self.maxLineBytes = maxLineBytes
    self.maxBytes = maxBytes
    self.maxStanzas = maxStanzas
  }

  /// Reads `chunk`, calling `onStanza` for each paragraph it completes.
  package mutating func feed(_ chunk: UnsafeBufferPointer<UInt8>, _ onStanza: (Deb822Stanza) -> Void) {
    guard failure == nil else { return }
    byteCount += Int64(chunk.count)
    if byteCount > maxBytes {
      fail("the document is longer than \(maxBytes) bytes, the most batchdl reads of it")
      return
    }
    var start = 0
    while start < chunk.count, failure == nil {
      guard let newline = chunk[start...].firstIndex(of: 0x0A) else {
        carry.append(contentsOf: chunk[start...])
        if carry.count > maxLineBytes { failLong() }
        return
      }
      if carry.isEmpty {
        if newline - start > maxLineBytes {
          failLong()
          return
        }
        line(UnsafeBufferPointer(rebasing: chunk[start..<newline]), onStanza)
      } else {
        carry.append(contentsOf: chunk[start..<newline])
        if carry.count > maxLineBytes {
          failLong()
          return
        }
        var held: [UInt8] = []
        swap(&held, &carry)
        held.withUnsafeBufferPointer { line($0, onStanza) }
        held.removeAll(keepingCapacity: true)
        swap(&held, &carry)
      }
      start = newline + 1
    }
  }

  /// `feed` for bytes held in an array.
  package mutating func feed(_ chunk: [UInt8], _ onStanza: (Deb822Stanza) -> Void) {
    chunk.withUnsafeBufferPointer { feed($0, onStanza) }
  }

  /// Reads the last line (when it has no line feed) and completes the last paragraph.
  package mutating func finish(_ onStanza: (Deb822Stanza) -> Void) {
    guard failure == nil else { return }
    if !carry.isEmpty {
      var held: [UInt8] = []
      swap(&held, &carry)
      held.withUnsafeBufferPointer { line($0, onStanza) }
    }
    endStanza(onStanza)
  }

  private mutating func failLong() {
    fail("a line is longer than \(maxLineBytes) bytes, the most batchdl reads of one line", line: lineNumber + 1)
  }

  private mutating func fail(_ message: String, line: Int? = nil) {
    failure = (line ?? lineNumber, message)
  }

  private mutating func line(_ raw: UnsafeBufferPointer<UInt8>, _ onStanza: (Deb822Stanza) -> Void) {
    lineNumber += 1
    var end = raw.count
    while end > 0, raw[end - 1] == 0x20 || raw[end - 1] == 0x09 || raw[end - 1] == 0x0D { end -= 1 }
    if end == 0 {
      endStanza(onStanza)
      return
    }
    let first = raw[0]
    if first == 0x23 { return }  // a comment
    if first == 0x20 || first == 0x09 {
      switch continuing {
      case .none:
        startStanza()
        stanza.problems.append((lineNumber, "a continuation line (it starts with white space) follows no field"))
      case .other: break
      case .wanted:
        var start = 1
        while start < end, raw[start] == 0x20 || raw[start] == 0x09 { start += 1 }
        let bytes = Array(raw[start..<end])
        stanza.fields[stanza.fields.count - 1].continuation.append((lineNumber, bytes))
      }
      return
    }
    startStanza()
    guard let colon = raw[0..<end].firstIndex(of: 0x3A), colon > 0,
      !raw[0..<colon].contains(where: { $0 <= 0x20 || $0 == 0x7F })
    else {
      stanza.problems.append((lineNumber, "the line is no field ('Name: value') and no continuation line"))
      continuing = .none
      return
    }
    let name = raw[0..<colon].map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
    guard wanted.contains(name) else {
      continuing = .other
      return
    }
    if stanza.fields.contains(where: { $0.name == name }) {
      stanza.problems.append(
        (lineNumber, "the field '\(String(decoding: name, as: UTF8.self))' comes twice in one paragraph"))
      continuing = .other
      return
    }
    var start = colon + 1
    while start < end, raw[start] == 0x20 || raw[start] == 0x09 { start += 1 }
    stanza.fields.append(Deb822Stanza.Field(name: name, line: lineNumber, value: Array(raw[start..<end])))
    continuing = .wanted
  }

  private mutating func startStanza() {
    guard !inStanza else { return }
    inStanza = true
    stanzaCount += 1
    if stanzaCount > maxStanzas {
      fail("the document has more than \(maxStanzas) paragraphs, the most batchdl reads of it")
    }
    stanza = Deb822Stanza()
    stanza.firstLine = lineNumber
  }

  private mutating func endStanza(_ onStanza: (Deb822Stanza) -> Void) {
    continuing = .none
    guard inStanza else { return }
    inStanza = false
    guard failure == nil else { return }
    onStanza(stanza)
    stanza = Deb822Stanza()
  }
}
