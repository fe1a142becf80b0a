import BatchDLSupport
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

  /// How a file is cut into these pieces.
  public var layout: PieceLayout { PieceLayout(length: length) }

  /// The number of pieces a file of `size` bytes has with this `length`.
  public func count(forSize size: Int64) -> Int64 { layout.count(forSize: size) }

  /// The byte range of piece `index` in a file of `size` bytes.
  public func range(ofPiece index: Int, size: Int64) -> Range<Int64> { layout.range(ofPiece: index, size: size) }
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
  package static func encodingProblem(_ bytes: [UInt8]) -> String? {
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
  package static func doctypeLine(_ bytes: [UInt8]) -> Int? {
    var line: Int32 = 0
    let found = bytes.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: CChar.self) { cxml_find_doctype($0.baseAddress, Int32($0.count), &line) }
    }
    return found == 1 ? Int(line) : nil
  }

  /// The parse alone, without the checks on the bytes (size, encoding, `<!DOCTYPE>`): the tests
  /// show with it that the parser refuses DTD declarations by itself.
  package static func parseXML(_ bytes: [UInt8], file: String) -> MetalinkDocument {
    parseXML(bytes, positions: Positions(bytes, file: file))
  }

  private static func parseXML(_ bytes: [UInt8], positions: Positions) -> MetalinkDocument {
    let file = positions.file
    let start = SourceMark(file: file, line: 1, column: 1)
    func failed(_ mark: SourceMark, _ message: String) -> MetalinkDocument {
      MetalinkDocument(version: nil, files: [], diagnostics: [Diagnostic(.error, at: mark, message)])
    }
    let reader = MetalinkReader(positions: positions)
    // The reader's DTD callbacks are the parser's guard (see `MetalinkReader`).
    let parser = XMLParser.forNetworkDocument(bytes, delegate: reader)
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
