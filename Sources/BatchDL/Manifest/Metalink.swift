import CXML
import Foundation

#if canImport(FoundationXML)
  import FoundationXML
#endif

/// Why a value in a Metalink document is refused.
public struct MetalinkProblem: Error, Hashable, Sendable {
  public var message: String
  public init(_ message: String) { self.message = message }
}

/// One `<url>` of a Metalink file.
public struct MetalinkSource: Hashable, Sendable {
  /// The URL as written (spaces around it dropped): http or https.
  public var url: String
  /// Metalink 4 `priority` (1 first) or Metalink 3 `preference` (100 first), nil when not given.
  public var priority: Int?
  /// The `location` attribute (an ISO 3166 country code), when given.
  public var location: String?
  /// Where the `<url>` element starts in the document.
  public var mark: SourceMark
}

/// The `<pieces>` of a Metalink file: one digest per `length` bytes, the last piece shorter.
public struct MetalinkPieces: Hashable, Sendable {
  /// Bytes in each piece but the last.
  public var length: Int64
  public var algorithm: DigestAlgorithm
  /// Lower-case hexadecimal digests, piece 0 first.
  public var hashes: [String]
  public var mark: SourceMark

  /// The number of pieces a file of `size` bytes has with this `length`.
  public func count(forSize size: Int64) -> Int64 {
    size <= 0 ? 0 : (size - 1) / length + 1
  }

  /// The byte range of piece `index` in a file of `size` bytes.
  public func range(ofPiece index: Int, size: Int64) -> Range<Int64> {
    let start = min(Int64(index) * length, size)
    return start..<min(start + length, size)
  }
}

/// One `<file>` of a Metalink document, checked: a safe relative name, at least one http or https
/// source.
public struct MetalinkFile: Hashable, Sendable {
  /// Relative path, normalized: no empty, `.` or `..` segment, never absolute.
  public var name: String
  /// Where the `<file>` element starts in the document.
  public var mark: SourceMark
  public var size: Int64?
  /// The sources in the order to try them: Metalink 4 `priority` ascending, Metalink 3 `preference`
  /// descending, those without one last; ties keep the document's order.
  public var sources: [MetalinkSource]
  /// The whole-file digests given, strongest first, one per algorithm.
  public var hashes: [ExpectedDigest]
  /// The strongest piece list given, if any; its count matches `size` when both are known.
  public var pieces: MetalinkPieces?

  /// The digest to check the whole file with: the strongest one given.
  public var digest: ExpectedDigest? { hashes.first }
}

/// A Metalink document as read: the files that passed every check, and the problems found.
public struct MetalinkDocument: Sendable {
  public enum Version: String, Sendable {
    /// RFC 5854, namespace `urn:ietf:params:xml:ns:metalink`.
    case v4 = "4"
    /// metalinker.org 3.0, namespace `http://www.metalinker.org/`.
    case v3 = "3"
  }

  /// nil when the document could not be read as Metalink at all.
  public var version: Version?
  /// Files in document order. A file with an error is left out; the others are unaffected.
  public var files: [MetalinkFile]
  /// The files left out, in document order: each fails in a run as an entry of its own.
  public var leftOut: [LeftOutFile] = []
  /// Errors and warnings, at `FILE:LINE:COLUMN` of the element concerned, in document order.
  public var diagnostics: [Diagnostic]

  public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
}

/// A `<file>` a document lists that is left out, and why.
public struct LeftOutFile: Sendable, Equatable {
  /// The name as the document gives it (nil when it gives none).
  public var name: String?
  public var mark: SourceMark
  /// The name itself is refused (absolute, `..`, a control character...), not the rest of the file.
  public var unsafeName: Bool
  /// The diagnostic's message (names escaped).
  public var message: String
}

/// Reads Metalink 4 (RFC 5854) and Metalink 3 documents with libxml2 (through `XMLParser`).
public enum Metalink {
  public static let namespaceV4 = "urn:ietf:params:xml:ns:metalink"
  public static let namespaceV3 = "http://www.metalinker.org/"
  /// The largest document read (8MB): far beyond a real one (a 100GB file in 1MB pieces takes
  /// about 8MB), and below the 10MB libxml2 takes in one piece without its "huge" mode.
  public static let maxBytes = 8 << 20
  /// The most elements open at once (Metalink needs 4): deeper is refused at the element, before
  /// libxml2's own limit, and the reader's work per element does not grow with the depth.
  public static let maxDepth = 64
  /// The most `<url>` elements read in one `<file>` (those ignored count too); the rest are ignored
  /// with one warning.
  public static let maxURLsPerFile = 1000
  /// The most piece hashes one `<pieces>` lists.
  public static let maxPieces = 1 << 20
  /// Pieces shorter than this are for a small file only: at most `maxSmallPieces` of them.
  public static let minPieceLength: Int64 = 16 << 10
  public static let maxSmallPieces = 64

  /// Reads the document at `path`; `display` names it in diagnostics (default: `path`). A document
  /// that cannot be read (missing, a FIFO, unreadable) is reported at `named` (the manifest's value
  /// that names it) when given: the problem is there, not at the document's first line.
  public static func read(path: String, display: String? = nil, named: SourceMark? = nil) -> MetalinkDocument {
    let name = display ?? path
    do {
      // A FIFO a writer holds open would block every command that plans the manifest.
      let bytes = try ManifestLoader.readManifest(
        path, limit: maxBytes,
        tooLarge:
          "it holds more than \(ByteSize.format(Int64(maxBytes))), the most batchdl reads of a Metalink document",
        allowsPipe: false)
      return parse(bytes, file: name)
    } catch {
      return MetalinkDocument(
        version: nil, files: [],
        diagnostics: [
          Diagnostic(
            .error, at: named ?? SourceMark(file: name, line: 1, column: 1),
            "cannot read the Metalink document: \(error.reason)"
          )
        ])
    }
  }

  /// Why a document is not read as UTF-8, or nil. Only UTF-8 is read: libxml2's switch to some
  /// declared encodings (UTF-32, UCS-4) crashed it, and in UTF-16 a `<!DOCTYPE>` would pass the
  /// check on the bytes below.
  static func encodingProblem(_ bytes: [UInt8]) -> String? {
    let utf8 = "batchdl reads Metalink documents in UTF-8 only"
    if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) || bytes.prefix(4).contains(0) {
      return "the document is not UTF-8 (it looks like UTF-16 or UTF-32): \(utf8)"
    }
    // `<?xm` in EBCDIC, which libxml2 detects without a declaration: a `<!DOCTYPE>` in it would pass
    // the check on the bytes.
    if bytes.starts(with: [0x4C, 0x6F, 0xA7, 0x94]) {
      return "the document is not UTF-8 (it looks like EBCDIC): \(utf8)"
    }
    var text = bytes.prefix(512)[...]
    if text.starts(with: [0xEF, 0xBB, 0xBF]) { text = text.dropFirst(3) }
    guard text.starts(with: Array("<?xml".utf8)), let end = text.firstRange(of: Array("?>".utf8)) else { return nil }
    let declaration = String(decoding: text[..<end.lowerBound], as: UTF8.self)
    guard let equals = declaration.range(of: "encoding") else { return nil }
    // XML allows any white space around `=`, line breaks included.
    let rest = declaration[equals.upperBound...].drop { $0 == "=" || $0.isWhitespace }
    guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
    let name = rest.dropFirst().prefix { $0 != quote }
    guard ["utf-8", "utf8"].contains(name.lowercased()) else {
      return "the document declares encoding '\(ShownText.escaped(name, limit: 40))': \(utf8)"
    }
    return nil
  }

  /// Parses a document held in memory; `file` names it in diagnostics.
  public static func parse(_ bytes: [UInt8], file: String) -> MetalinkDocument {
    let start = SourceMark(file: file, line: 1, column: 1)
    func failed(_ mark: SourceMark, _ message: String) -> MetalinkDocument {
      MetalinkDocument(version: nil, files: [], diagnostics: [Diagnostic(.error, at: mark, message)])
    }
    if bytes.count > maxBytes {
      return failed(
        start,
        "the Metalink document holds \(bytes.count) bytes, more than \(ByteSize.format(Int64(maxBytes))), the most batchdl reads"
      )
    }
    if let problem = encodingProblem(bytes) { return failed(start, problem) }
    let positions = Positions(bytes, file: file)
    // Metalink needs no DTD, and none is read: a few lines of nested entities can expand to
    // gigabytes ("billion laughs"), external ones read files, and some declarations crash
    // Foundation's XMLParser before its delegate hears of them. libxml2's own parser says whether
    // there is one, with entities off and nothing loaded (CXML); the delegate refuses declarations
    // too (`parseXML`), and the bytes are searched last, for a position and as a last guard.
    let line = doctypeLine(bytes)
    let offset = positions.find(Array("<!DOCTYPE".utf8))
    if line != nil || offset != nil {
      let mark = offset.map(positions.mark(ofByte:)) ?? SourceMark(file: file, line: max(1, line ?? 1), column: 1)
      return failed(
        mark, "the document has a <!DOCTYPE>: Metalink needs none, and its entity declarations are refused; remove it")
    }
    return parseXML(bytes, positions: positions)
  }

  /// The line of the document's `<!DOCTYPE>` as libxml2's parser finds it (entities off, nothing
  /// loaded, the parse stopped there), or nil when it has none.
  static func doctypeLine(_ bytes: [UInt8]) -> Int? {
    var line: Int32 = 0
    let found = bytes.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: CChar.self) { cxml_find_doctype($0.baseAddress, Int32($0.count), &line) }
    }
    return found == 1 ? Int(line) : nil
  }

  /// The parse alone, without the checks on the bytes (size, encoding, `<!DOCTYPE>`): the tests
  /// show with it that the parser refuses DTD declarations by itself.
  static func parseXML(_ bytes: [UInt8], file: String) -> MetalinkDocument {
    parseXML(bytes, positions: Positions(bytes, file: file))
  }

  private static func parseXML(_ bytes: [UInt8], positions: Positions) -> MetalinkDocument {
    let file = positions.file
    let start = SourceMark(file: file, line: 1, column: 1)
    func failed(_ mark: SourceMark, _ message: String) -> MetalinkDocument {
      MetalinkDocument(version: nil, files: [], diagnostics: [Diagnostic(.error, at: mark, message)])
    }
    let reader = MetalinkReader(positions: positions)
    let parser = XMLParser(data: Data(bytes))
    parser.shouldProcessNamespaces = true
    parser.shouldReportNamespacePrefixes = false
    // XMLParser sets libxml2's options itself (XML_PARSE_RECOVER | XML_PARSE_NOENT, and DTDLOAD when
    // this is true) and offers no way to change them: the reader's DTD callbacks are the parser's
    // guard (see `MetalinkReader`).
    parser.shouldResolveExternalEntities = false
    parser.delegate = reader
    let finished = parser.parse()
    if let problem = reader.xmlError ?? reader.fatal {
      return failed(problem.mark, problem.message)
    }
    if !finished || parser.parserError != nil {
      let code = (parser.parserError as NSError?)?.code ?? 0
      return failed(
        SourceMark(file: file, line: max(1, parser.lineNumber), column: max(1, parser.columnNumber)),
        "not well-formed XML: \(MetalinkReader.describe(code: code))")
    }
    guard let version = reader.version else {
      return failed(start, "the document is empty: a Metalink document has a <metalink> element")
    }
    var document = MetalinkDocument(version: version, files: reader.files, diagnostics: reader.diagnostics.items)
    document.leftOut = reader.leftOut
    return document
  }
}

/// Line and column of byte offsets in a document; columns count characters, as libxml2 does.
///
/// Positions are asked for in document order, often many on one long line: each lookup goes on
/// from the last one instead of walking the line from its start again.
final class Positions {
  let bytes: [UInt8]
  let file: String
  /// Byte offset of the start of each line.
  let lineStarts: [Int]
  /// The last position found by `tagStart`: line, column and byte offset.
  private var tagCursor = (line: 0, column: 0, offset: 0)
  /// The last position found by `mark(ofByte:)`: byte offset, line and column.
  private var markCursor = (offset: -1, line: 0, column: 0)

  init(_ bytes: [UInt8], file: String) {
    self.bytes = bytes
    self.file = file
    var starts = [0]
    for (index, byte) in bytes.enumerated() where byte == 0x0A { starts.append(index + 1) }
    lineStarts = starts
  }

  func find(_ needle: [UInt8]) -> Int? {
    guard let first = needle.first, bytes.count >= needle.count else { return nil }
    var index = 0
    while index + needle.count <= bytes.count {
      if bytes[index] == first, bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
      index += 1
    }
    return nil
  }

  /// The mark of byte `offset`.
  func mark(ofByte offset: Int) -> SourceMark {
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
  func tagStart(line: Int, column: Int) -> SourceMark {
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

/// The SAX side of `Metalink.parse`: builds files as their elements end.
private final class MetalinkReader: NSObject, XMLParserDelegate {
  struct Problem {
    var mark: SourceMark
    var message: String
  }

  /// A `<file>` being read.
  struct FileDraft {
    var name: String?
    var mark: SourceMark
    var size: Int64?
    var sources: [(source: MetalinkSource, order: Int)] = []
    var hashes: [ExpectedDigest] = []
    var pieces: [MetalinkPieces] = []
    /// `<url>` elements met, those ignored included.
    var urlCount = 0
    /// The first error reported inside it.
    var problem: String?
    /// An error was reported inside it: it is left out.
    var broken = false
  }

  /// A `<pieces>` being read.
  struct PiecesDraft {
    var length: Int64?
    var algorithm: DigestAlgorithm?
    var typeText: String
    var mark: SourceMark
    var hashes: [String] = []
    /// Metalink 3 `piece` attributes, when given.
    var indices: [Int?] = []
    var broken = false
  }

  let positions: Positions
  var diagnostics = Diagnostics()
  var version: MetalinkDocument.Version?
  var namespace = ""
  var files: [MetalinkFile] = []
  /// Names by their bytes: NFC and NFD spellings of a name are two files.
  var names: [ByteString: SourceMark] = [:]
  /// Files left out, for `MetalinkDocument.leftOut`.
  var leftOut: [LeftOutFile] = []
  /// A problem that makes the whole document unusable (not Metalink).
  var fatal: Problem?
  /// The first XML error libxml2 reported.
  var xmlError: Problem?

  /// Local names of the open elements of the document's namespace; nil for foreign ones.
  var stack: [String?] = []
  /// The nil entries of `stack`: an element inside a foreign one is foreign, told without a walk.
  var foreignOpen = 0
  var file: FileDraft?
  var pieces: PiecesDraft?
  /// Text of the element being captured, with its start and attributes.
  var text: String?
  var textMark = SourceMark(file: "", line: 1, column: 1)
  var textAttributes: [String: String] = [:]
  var urlOrder = 0
  /// Open elements around the current `<file>`, `<pieces>` and captured element.
  var fileDepth = 0
  var piecesDepth = 0
  var textDepth = 0

  init(positions: Positions) {
    self.positions = positions
  }

  var parent: String? { stack.last ?? nil }

  func startMark(_ parser: XMLParser) -> SourceMark {
    positions.tagStart(line: parser.lineNumber, column: parser.columnNumber)
  }

  func parser(
    _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?,
    attributes attributeDict: [String: String] = [:]
  ) {
    if version == nil {
      let mark = startMark(parser)
      guard elementName == "metalink" else {
        stop(
          parser, mark,
          "not a Metalink document: the root element is <\(ShownText.escaped(elementName, limit: 40))>, not <metalink>")
        return
      }
      switch namespaceURI ?? "" {
      case Metalink.namespaceV4: version = .v4
      case Metalink.namespaceV3: version = .v3
      case "" where attributeDict["version"]?.hasPrefix("3.") == true: version = .v3
      default:
        stop(
          parser, mark,
          "not a Metalink document: <metalink> needs xmlns=\"\(Metalink.namespaceV4)\" (Metalink 4) or xmlns=\"\(Metalink.namespaceV3)\" (Metalink 3)"
        )
        return
      }
      namespace = namespaceURI ?? ""
      stack.append(elementName)
      return
    }
    if stack.count >= Metalink.maxDepth {
      stop(
        parser, startMark(parser),
        "elements are nested more than \(Metalink.maxDepth) deep: a Metalink document needs 4 levels; this one is refused"
      )
      return
    }
    let ours = (namespaceURI ?? "") == namespace && foreignOpen == 0
    defer {
      stack.append(ours ? elementName : nil)
      if !ours { foreignOpen += 1 }
    }
    guard ours, let version else { return }
    // Depths (open elements around this one): Metalink 4 has <file> in <metalink> and its details
    // right inside it; Metalink 3 has <files><file> and <verification> or <resources> between.
    let depth = stack.count
    let inFile = file != nil
    let detail = version == .v4 ? (parent == "file" && depth == fileDepth + 1) : false
    let verification = version == .v3 && parent == "verification" && depth == fileDepth + 2
    let resources = version == .v3 && parent == "resources" && depth == fileDepth + 2
    switch elementName {
    case "file" where !inFile && parent == (version == .v4 ? "metalink" : "files") && depth == (version == .v4 ? 1 : 2):
      file = FileDraft(name: attributeDict["name"], mark: startMark(parser))
      fileDepth = depth
      urlOrder = 0
    case "size" where inFile && parent == "file" && depth == fileDepth + 1,
      "url" where inFile && (detail || resources),
      "hash" where inFile && pieces == nil && (detail || verification),
      "hash" where pieces != nil && parent == "pieces" && depth == piecesDepth + 1:
      guard text == nil else { break }
      text = ""
      textDepth = depth
      textMark = startMark(parser)
      textAttributes = attributeDict
    case "metaurl" where inFile && detail:
      let type = attributeDict["mediatype"].map { " (\(ShownText.escaped($0, limit: 40)))" } ?? ""
      diagnostics.warning(
        startMark(parser), "<metaurl>\(type) is ignored: batchdl fetches the file's http and https <url>s only")
    case "pieces" where inFile && pieces == nil && (detail || verification):
      let mark = startMark(parser)
      let typeText = attributeDict["type"] ?? ""
      var draft = PiecesDraft(
        length: nil, algorithm: DigestAlgorithm(named: typeText), typeText: typeText, mark: mark)
      if let lengthText = attributeDict["length"], let length = Int64(lengthText.trimmingSpaces), length > 0,
        length <= Limits.bytes
      {
        draft.length = length
      } else {
        error(
          mark,
          "<pieces> needs length=\"BYTES\", a whole number from 1 to \(Limits.bytes), found \(quoted(attributeDict["length"]))"
        )
        draft.broken = true
      }
      pieces = draft
      piecesDepth = depth
    default:
      break
    }
  }

  func parser(_ parser: XMLParser, foundCharacters string: String) {
    text?.append(string)
  }

  func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
    if text != nil { text?.append(String(decoding: CDATABlock, as: UTF8.self)) }
  }

  func parser(
    _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
  ) {
    guard let top = stack.popLast() else { return }
    guard top != nil else {
      foreignOpen -= 1
      return
    }
    guard version != nil else { return }
    let depth = stack.count
    if let captured = text, depth == textDepth {
      text = nil
      switch elementName {
      case "size": endSize(captured)
      case "url": endURL(captured)
      case "hash" where pieces != nil: endPieceHash(captured)
      case "hash": endHash(captured)
      default: break
      }
    } else if elementName == "pieces", pieces != nil, depth == piecesDepth {
      endPieces()
    } else if elementName == "file", file != nil, depth == fileDepth {
      endFile()
    }
  }

  func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
    guard xmlError == nil, fatal == nil else { return }
    let code = (parseError as NSError).code
    xmlError = Problem(
      mark: SourceMark(file: positions.file, line: max(1, parser.lineNumber), column: max(1, parser.columnNumber)),
      message: "not well-formed XML: \(Self.describe(code: code))")
    parser.abortParsing()
  }

  func stop(_ parser: XMLParser, _ mark: SourceMark, _ message: String) {
    fatal = Problem(mark: mark, message: message)
    parser.abortParsing()
  }

  func error(_ mark: SourceMark, _ message: String) {
    diagnostics.error(mark, message)
    file?.broken = true
    if file != nil, file?.problem == nil { file?.problem = "\(mark): \(message)" }
  }

  /// A value of the document, quoted and escaped, at most 40 characters of it.
  func quoted(_ text: String?) -> String {
    guard let text else { return "nothing" }
    return "'\(ShownText.escaped(text, limit: 40))'"
  }

  // MARK: - DTD declarations

  // Metalink needs no DTD, and `Metalink.parse` refuses a `<!DOCTYPE>` on the bytes before any
  // parsing. The parser refuses the declarations it reports by itself too, at their position: nested
  // entities can expand to gigabytes ("billion laughs"), external ones read files, and attribute
  // defaults add attributes the document does not show. What Foundation on Linux does not cover:
  // - it passes no general entity declaration to the delegate: libxml2 records them and expands
  //   references (XMLParser always sets XML_PARSE_NOENT), stopping past its amplification limit
  //   (error 89); external ones are never loaded (`externalEntityResolvingPolicy` is `.never`). A
  //   reference to an entity not declared reaches `resolveExternalEntityName`, which stops the parse.
  // - it crashes (SIGSEGV) on `<!ATTLIST ... #IMPLIED>`, a `<!NOTATION>` without a public or a
  //   system id, and `<!ENTITY name SYSTEM "..." NDATA n>`, before calling the delegate.
  // So the check on the bytes is what keeps a DTD from the parser; this is the second line.

  func refuseDeclaration(_ parser: XMLParser, _ what: String) {
    guard fatal == nil else { return }
    stop(
      parser, SourceMark(file: positions.file, line: max(1, parser.lineNumber), column: max(1, parser.columnNumber)),
      "the document's <!DOCTYPE> declares \(what): Metalink needs no DTD, and batchdl refuses its declarations; remove it"
    )
  }

  func shown(_ name: String) -> String { "'\(ShownText.escaped(name, limit: 40))'" }

  func parser(_ parser: XMLParser, foundElementDeclarationWithName elementName: String, model: String) {
    refuseDeclaration(parser, "the element \(shown(elementName))")
  }

  func parser(
    _ parser: XMLParser, foundAttributeDeclarationWithName attributeName: String, forElement elementName: String,
    type: String?, defaultValue: String?
  ) {
    refuseDeclaration(parser, "the attribute \(shown(attributeName)) of <\(ShownText.escaped(elementName, limit: 40))>")
  }

  func parser(_ parser: XMLParser, foundNotationDeclarationWithName name: String, publicID: String?, systemID: String?)
  {
    refuseDeclaration(parser, "the notation \(shown(name))")
  }

  func parser(
    _ parser: XMLParser, foundUnparsedEntityDeclarationWithName name: String, publicID: String?, systemID: String?,
    notationName: String?
  ) {
    refuseDeclaration(parser, "the entity \(shown(name))")
  }

  func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
    refuseDeclaration(parser, "the entity \(shown(name))")
  }

  func parser(
    _ parser: XMLParser, foundExternalEntityDeclarationWithName name: String, publicID: String?, systemID: String?
  ) {
    refuseDeclaration(parser, "the entity \(shown(name))")
  }

  /// Called for a reference to an entity that is not one of XML's five: nothing is read for it.
  func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
    if fatal == nil {
      stop(
        parser,
        SourceMark(file: positions.file, line: max(1, parser.lineNumber), column: max(1, parser.columnNumber)),
        "not well-formed XML: an undeclared entity (&\(ShownText.escaped(name, limit: 40));): batchdl reads no entity declarations; write &amp; for '&'"
      )
    }
    return nil
  }

  // MARK: - Elements

  func endSize(_ captured: String) {
    let trimmed = captured.trimmingCharacters(in: .whitespacesAndNewlines)
    guard let size = Int64(trimmed), size >= 0, size <= Limits.bytes, trimmed.allSatisfy(\.isASCII) else {
      error(textMark, "<size> must be a whole number of bytes from 0 to \(Limits.bytes), found \(quoted(trimmed))")
      return
    }
    if let earlier = file?.size, earlier != size {
      error(textMark, "a second <size> (\(size)) disagrees with the first (\(earlier))")
      return
    }
    file?.size = size
  }

  func endURL(_ captured: String) {
    guard let count = file.map({ $0.urlCount + 1 }) else { return }
    file?.urlCount = count
    if count > Metalink.maxURLsPerFile {
      if count == Metalink.maxURLsPerFile + 1 {
        diagnostics.warning(
          textMark, "file \(quoted(file?.name)) has more than \(Metalink.maxURLsPerFile) <url>s: the rest are ignored")
      }
      return
    }
    let url = captured.trimmingCharacters(in: .whitespacesAndNewlines)
    let shown = ShownText.escaped(Redactor.stripUserInfo(url), limit: 200)
    let lowered = url.lowercased()
    let type = textAttributes["type"]?.lowercased()
    if version == .v3, let type, type != "http" && type != "https" {
      diagnostics.warning(
        textMark,
        "<url type=\"\(ShownText.escaped(type, limit: 40))\"> '\(shown)' is ignored: batchdl fetches http and https URLs only"
      )
      return
    }
    guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
      let scheme = url.range(of: ":").map { ShownText.escaped(url[..<$0.lowerBound], limit: 40) + ":" } ?? "not a URL"
      diagnostics.warning(
        textMark, "<url> '\(shown)' is ignored (\(scheme)): batchdl fetches http and https URLs only")
      return
    }
    if case .failure(let problem) = Metalink.normalizer.withLock({ $0.normalize(url) }) {
      diagnostics.warning(textMark, "<url> is ignored: \(problem.description)")
      return
    }
    let attribute = version == .v4 ? "priority" : "preference"
    var priority: Int?
    if let written = textAttributes[attribute] {
      let range = version == .v4 ? 1...999_999 : 0...100
      if let value = Int(written.trimmingSpaces), range.contains(value) {
        priority = value
      } else {
        diagnostics.warning(
          textMark,
          "<url \(attribute)=\"\(ShownText.escaped(written, limit: 40))\"> is not a whole number from \(range.lowerBound) to \(range.upperBound); the URL is tried after those with one"
        )
      }
    }
    let source = MetalinkSource(url: url, priority: priority, location: textAttributes["location"], mark: textMark)
    urlOrder += 1
    file?.sources.append((source, urlOrder))
  }

  func endHash(_ captured: String) {
    let typeText = textAttributes["type"] ?? ""
    guard let algorithm = DigestAlgorithm(named: typeText) else { return }  // other types are not used
    switch ExpectedDigest.parse(captured, algorithm: algorithm) {
    case .success(let digest):
      if let earlier = file?.hashes.first(where: { $0.algorithm == algorithm }) {
        if earlier != digest { error(textMark, "a second \(algorithm.rawValue) <hash> disagrees with the first") }
        return
      }
      file?.hashes.append(digest)
    case .failure(let problem):
      error(textMark, "bad <hash type=\"\(ShownText.escaped(typeText, limit: 40))\">: \(problem.message)")
    }
  }

  func endPieceHash(_ captured: String) {
    // Changed in place: a copy of the draft would copy its hashes for every piece.
    guard let broken = pieces?.broken, !broken, let algorithm = pieces?.algorithm, let length = pieces?.length,
      let mark = pieces?.mark
    else { return }
    let count = pieces?.hashes.count ?? 0
    if count >= Metalink.maxPieces {
      error(mark, "<pieces> lists more than \(Metalink.maxPieces) hashes, the most batchdl reads")
      pieces?.broken = true
      return
    }
    if length < Metalink.minPieceLength && count >= Metalink.maxSmallPieces {
      error(
        mark,
        "<pieces length=\"\(length)\"> lists more than \(Metalink.maxSmallPieces) pieces shorter than \(Metalink.minPieceLength) bytes: pieces that short are for a small file only"
      )
      pieces?.broken = true
      return
    }
    switch ExpectedDigest.parse(captured, algorithm: algorithm) {
    case .success(let digest):
      pieces?.hashes.append(digest.hex)
      pieces?.indices.append(textAttributes["piece"].map { Int($0.trimmingSpaces) ?? -1 })
    case .failure(let problem):
      error(textMark, "bad piece <hash>: \(problem.message)")
      pieces?.broken = true
    }
  }

  func endPieces() {
    guard let draft = pieces else { return }
    pieces = nil
    guard !draft.broken, let length = draft.length else { return }
    guard let algorithm = draft.algorithm else {
      diagnostics.warning(
        draft.mark,
        "<pieces type=\"\(ShownText.escaped(draft.typeText, limit: 40))\"> is ignored: batchdl checks sha-256, sha-512, sha-1 and md5"
      )
      return
    }
    var hashes = draft.hashes
    if draft.indices.contains(where: { $0 != nil }) {
      // Metalink 3 numbers its pieces: every number from 0 once, in any order.
      let numbered = zip(draft.indices, draft.hashes).map { (index: $0 ?? -1, hash: $1) }
      let sorted = numbered.sorted { $0.index < $1.index }
      guard sorted.enumerated().allSatisfy({ $0.offset == $0.element.index }) else {
        error(draft.mark, "the piece numbers of <pieces> must be 0, 1, 2... each once")
        return
      }
      hashes = sorted.map(\.hash)
    }
    let result = MetalinkPieces(length: length, algorithm: algorithm, hashes: hashes, mark: draft.mark)
    file?.pieces.append(result)
  }

  func endFile() {
    guard let draft = file else { return }
    file = nil
    let mark = draft.mark
    var name = ""
    func leaveOut(_ message: String, unsafeName: Bool = false) {
      leftOut.append(LeftOutFile(name: draft.name, mark: mark, unsafeName: unsafeName, message: message))
    }
    switch Self.checkName(draft.name) {
    case .success(let value): name = value
    case .failure(let problem):
      error(mark, problem.message + "; this file is left out")
      leaveOut(problem.message, unsafeName: draft.name?.isEmpty == false)
      return
    }
    let shown = "'\(ShownText.escaped(name, limit: 200))'"
    let key = ByteString(name)
    if let first = names[key] {
      error(mark, "file \(shown) is listed twice (first at line \(first.line)); the second is left out")
      leaveOut("file \(shown) is listed twice (first at line \(first.line))")
      return
    }
    names[key] = mark
    if draft.broken {
      diagnostics.warning(mark, "file \(shown) is left out because of the errors above")
      leaveOut(draft.problem ?? "file \(shown) has errors")
      return
    }
    if let size = draft.size {
      for pieces in draft.pieces where Int64(pieces.hashes.count) != pieces.count(forSize: size) {
        error(
          pieces.mark,
          "<pieces> of \(shown) lists \(pieces.hashes.count) hashes, but \(size) bytes in pieces of \(pieces.length) make \(pieces.count(forSize: size)); this file is left out"
        )
        leaveOut("<pieces> of \(shown) do not fit its <size>")
        return
      }
    }
    let sources = draft.sources.sorted { lhs, rhs in
      let left = rank(lhs.source.priority)
      let right = rank(rhs.source.priority)
      return left != right ? left < right : lhs.order < rhs.order
    }.map(\.source)
    guard !sources.isEmpty else {
      error(mark, "file \(shown) has no http or https <url>; this file is left out")
      leaveOut("file \(shown) has no http or https <url>")
      return
    }
    let hashes = draft.hashes.sorted { $0.algorithm < $1.algorithm }
    let pieces = draft.pieces.min { $0.algorithm < $1.algorithm }
    if let best = hashes.first, !best.algorithm.isStrong {
      diagnostics.warning(
        mark,
        "file \(shown) has only a \(best.algorithm.rawValue) hash, which is weak: it is checked, but cannot prove the file was not replaced; ask the publisher for sha-256"
      )
    } else if hashes.isEmpty, let pieces, !pieces.algorithm.isStrong {
      // Piece digests are then all that checks the file.
      diagnostics.warning(
        mark,
        "file \(shown) has only \(pieces.algorithm.rawValue) piece hashes, which are weak: they are checked, but cannot prove the file was not replaced; ask the publisher for sha-256"
      )
    }
    files.append(
      MetalinkFile(name: name, mark: mark, size: draft.size, sources: sources, hashes: hashes, pieces: pieces))
  }

  /// Sort key of a source: the lowest first.
  func rank(_ priority: Int?) -> Int {
    guard let priority else { return Int.max }
    return version == .v3 ? 100 - priority : priority
  }

  /// A file name as a relative path that stays inside its folder, normalized.
  static func checkName(_ name: String?) -> Result<String, MetalinkProblem> {
    guard let name, !name.isEmpty else { return .failure(MetalinkProblem("<file> has no name (name=\"...\")")) }
    let shown = ShownText.escaped(name)
    if name.hasPrefix("/") {
      return .failure(MetalinkProblem("file name '\(shown)' is absolute; Metalink names are relative to 'to:'"))
    }
    if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
      return .failure(MetalinkProblem("file name '\(shown)' contains a control character"))
    }
    if name.split(separator: "/", omittingEmptySubsequences: false).contains("..") {
      return .failure(MetalinkProblem("file name '\(shown)' contains '..'; it could escape 'to:'"))
    }
    if name.hasSuffix("/") { return .failure(MetalinkProblem("file name '\(shown)' names a folder, not a file")) }
    switch PathRules.normalize(name, allowAbsolute: false) {
    case .success(let value) where !value.isEmpty: return .success(value)
    case .success: return .failure(MetalinkProblem("file name '\(shown)' names the folder itself, not a file"))
    case .failure(let problem): return .failure(MetalinkProblem("file name '\(shown)' \(problem.message)"))
    }
  }

  /// A short description of a libxml2 error code (as `XMLParser` reports it).
  static func describe(code: Int) -> String {
    switch code {
    case 1: return "libxml2 stopped at one of its limits (a line or a text of more than 10MB, or nesting too deep)"
    case 4: return "the document is empty"
    case 5: return "the document ends before its elements are closed"
    case 9: return "an invalid character"
    case 26: return "an undeclared entity (&name;); write &amp; for '&'"
    case 38, 39, 40, 41: return "a bad attribute (write name=\"value\")"
    case 64: return "an XML declaration (<?xml ...?>) that is not at the very start"
    case 73: return "a '>' is missing"
    case 76: return "a closing tag does not match the element it closes"
    case 85: return "text after the closing </metalink>, or an element left open"
    case 89: return "entities that refer to each other in a loop, or expand too much"
    default: return "libxml2 error \(code)"
    }
  }
}

extension Metalink {
  /// One URL parser for all documents (libcurl's handle is not thread-safe: used under a lock).
  static let normalizer = LockedNormalizer()
}

/// A `URLNormalizer` behind a lock.
final class LockedNormalizer: @unchecked Sendable {
  private let lock = NSLock()
  private let normalizer = URLNormalizer()

  func withLock<T>(_ body: (URLNormalizer) -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body(normalizer)
  }
}
