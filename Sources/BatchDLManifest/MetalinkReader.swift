import BatchDLSupport
import Foundation

#if canImport(FoundationXML)
  import FoundationXML
#endif

/// The SAX side of `Metalink.parse`: builds files as their elements end.
package final class MetalinkReader: NSObject, XMLParserDelegate {
  package struct Problem {
    package var mark: SourceMark
    package var message: String
  }

  /// A `<file>` being read.
  package struct FileDraft {
    package var name: String?
    package var mark: SourceMark
    package var size: Int64?
    package var sources: [(source: MetalinkSource, order: Int)] = []
    package var hashes: [ExpectedDigest] = []
    package var pieces: [MetalinkPieces] = []
    /// `<url>` elements met, those ignored included.
    package var urlCount = 0
    /// The first error reported inside it.
    package var problem: String?
    /// An error was reported inside it: it is left out.
    package var broken = false
  }

  /// A `<pieces>` being read.
  package struct PiecesDraft {
    package var length: Int64?
    package var algorithm: DigestAlgorithm?
    package var typeText: String
    package var mark: SourceMark
    package var hashes: [String] = []
    /// Metalink 3 `piece` attributes, when given.
    package var indices: [Int?] = []
    package var broken = false
  }

  package let positions: Positions
  package var diagnostics = Diagnostics()
  package var version: MetalinkDocument.Version?
  package var namespace = ""
  package var files: [MetalinkFile] = []
  /// Names by their bytes: NFC and NFD spellings of a name are two files.
  package var names: [ByteString: SourceMark] = [:]
  /// Files left out, for `MetalinkDocument.leftOut`.
  package var leftOut: [LeftOutFile] = []
  /// A problem that makes the whole document unusable (not Metalink).
  package var fatal: Problem?
  /// The first XML error libxml2 reported.
  package var xmlError: Problem?

  /// Local names of the open elements of the document's namespace; nil for foreign ones.
  package var stack: [String?] = []
  /// The nil entries of `stack`: an element inside a foreign one is foreign, told without a walk.
  package var foreignOpen = 0
  package var file: FileDraft?
  package var pieces: PiecesDraft?
  /// Text of the element being captured, with its start and attributes.
  package var text: String?
  package var textMark = SourceMark(file: "", line: 1, column: 1)
  package var textAttributes: [String: String] = [:]
  package var urlOrder = 0
  /// Open elements around the current `<file>`, `<pieces>` and captured element.
  package var fileDepth = 0
  package var piecesDepth = 0
  package var textDepth = 0

  package init(positions: Positions) {
    self.positions = positions
  }

  package var parent: String? { stack.last ?? nil }

  package func startMark(_ parser: XMLParser) -> SourceMark {
    positions.tagStart(line: parser.lineNumber, column: parser.columnNumber)
  }

  package func parser(
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

  package func parser(_ parser: XMLParser, foundCharacters string: String) {
    text?.append(string)
  }

  package func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
    if text != nil { text?.append(String(decoding: CDATABlock, as: UTF8.self)) }
  }

  package func parser(
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

  package func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
    guard xmlError == nil, fatal == nil else { return }
    let code = (parseError as NSError).code
    xmlError = Problem(
      mark: SourceMark(file: positions.file, line: max(1, parser.lineNumber), column: max(1, parser.columnNumber)),
      message: "not well-formed XML: \(Self.describe(code: code))")
    parser.abortParsing()
  }

  package func stop(_ parser: XMLParser, _ mark: SourceMark, _ message: String) {
    fatal = Problem(mark: mark, message: message)
    parser.abortParsing()
  }

  package func error(_ mark: SourceMark, _ message: String) {
    diagnostics.error(mark, message)
    file?.broken = true
    if file != nil, file?.problem == nil { file?.problem = "\(mark): \(message)" }
  }

  /// A value of the document, quoted and escaped, at most 40 characters of it.
  package func quoted(_ text: String?) -> String {
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

  package func refuseDeclaration(_ parser: XMLParser, _ what: String) {
    guard fatal == nil else { return }
    stop(
      parser, SourceMark(file: positions.file, line: max(1, parser.lineNumber), column: max(1, parser.columnNumber)),
      "the document's <!DOCTYPE> declares \(what): Metalink needs no DTD, and batchdl refuses its declarations; remove it"
    )
  }

  package func shown(_ name: String) -> String { "'\(ShownText.escaped(name, limit: 40))'" }

  package func parser(_ parser: XMLParser, foundElementDeclarationWithName elementName: String, model: String) {
    refuseDeclaration(parser, "the element \(shown(elementName))")
  }

  package func parser(
    _ parser: XMLParser, foundAttributeDeclarationWithName attributeName: String, forElement elementName: String,
    type: String?, defaultValue: String?
  ) {
    refuseDeclaration(parser, "the attribute \(shown(attributeName)) of <\(ShownText.escaped(elementName, limit: 40))>")
  }

  package func parser(
    _ parser: XMLParser, foundNotationDeclarationWithName name: String, publicID: String?, systemID: String?
  ) {
    refuseDeclaration(parser, "the notation \(shown(name))")
  }

  package func parser(
    _ parser: XMLParser, foundUnparsedEntityDeclarationWithName name: String, publicID: String?, systemID: String?,
    notationName: String?
  ) {
    refuseDeclaration(parser, "the entity \(shown(name))")
  }

  package func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
    refuseDeclaration(parser, "the entity \(shown(name))")
  }

  package func parser(
    _ parser: XMLParser, foundExternalEntityDeclarationWithName name: String, publicID: String?, systemID: String?
  ) {
    refuseDeclaration(parser, "the entity \(shown(name))")
  }

  /// Called for a reference to an entity that is not one of XML's five: nothing is read for it.
  package func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
    if fatal == nil {
      stop(
        parser,
        SourceMark(file: positions.file, line: max(1, parser.lineNumber), column: max(1, parser.columnNumber)),
        "not well-formed XML: an undeclared entity (&\(ShownText.escaped(name, limit: 40));): batchdl reads no entity declarations; write &amp; for '&'"
      )
    }
    return nil
  }
}

extension Metalink {
  /// One URL parser for all documents (libcurl's handle is not thread-safe: used under a lock).
  package static let normalizer = LockedNormalizer()
}

/// A `URLNormalizer` behind a lock.
package final class LockedNormalizer: @unchecked Sendable {
  private let lock = NSLock()
  private let normalizer = URLNormalizer()

  package func withLock<T>(_ body: (URLNormalizer) -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body(normalizer)
  }
}
