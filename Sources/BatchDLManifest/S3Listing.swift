import BatchDLSupport
import Foundation

#if canImport(FoundationXML)
  import FoundationXML
#endif

/// Why a page of an S3 listing is refused. `code` is the S3 error code when the server answered
/// with an `<Error>` document (`AccessDenied`, `NoSuchBucket`, `SignatureDoesNotMatch`...).
package struct S3ListingProblem: Error, Hashable, Sendable, CustomStringConvertible {
  package var message: String
  package var code: String?
  package init(_ message: String, code: String? = nil) {
    self.message = message
    self.code = code
  }
  package var description: String { message }
}

/// One `<Contents>` of a ListObjectsV2 page.
package struct S3ListedObject: Hashable, Sendable {
  /// The key's bytes, XML entities decoded (and `%XX` decoded when the page says
  /// `<EncodingType>url</EncodingType>`). Compared as bytes, never as a Swift `String`.
  package var key: [UInt8]
  /// `<Size>`: a whole number of bytes, 0 or more.
  package var size: Int64
  /// `<ETag>` exactly as given, quotes included (`"9b2cf535f27731c974343645a3985328"`).
  package var etag: String?
  /// `<LastModified>` as given (ISO 8601, `2009-10-12T17:50:30.000Z`).
  package var lastModified: String?

  /// The key as text (bytes that are not UTF-8 shown as U+FFFD): for messages only.
  package var keyText: String { String(decoding: key, as: UTF8.self) }
}

/// One page of an S3 `ListObjectsV2` answer (`<ListBucketResult>`).
package struct S3ListingPage: Hashable, Sendable {
  package var objects: [S3ListedObject] = []
  /// `<CommonPrefixes><Prefix>`: the folders of a listing with a delimiter (decoded as keys are).
  package var commonPrefixes: [[UInt8]] = []
  /// More pages follow; `nextContinuationToken` is then set.
  package var isTruncated = false
  /// The token of the next page's request, as given.
  package var nextContinuationToken: String?
  /// `<KeyCount>` when given: objects and common prefixes on this page, as the server counts them.
  package var keyCount: Int?
  /// `<Prefix>` of the listing when given (decoded as keys are).
  package var prefix: [UInt8]?
}

/// Reads ListObjectsV2 pages with libxml2 (Foundation's `XMLParser`), as the Metalink reader does:
/// a document with a DTD is refused before the parse, element names are compared without their
/// namespace, and every size and count is bounded.
package enum S3Listing {
  /// The largest page read (16 MiB): a page of 1,000 keys of 1,024 bytes is about 1.3 MB.
  package static let maxBytes = 16 << 20
  /// The most objects and common prefixes one page may list (S3 sends at most 1,000).
  package static let maxEntries = 100_000
  /// The longest text of one element (S3 keys are at most 1,024 bytes; `%XX` triples that).
  package static let maxText = 16 << 10
  /// The most elements open at once (a page needs 3).
  package static let maxDepth = 32

  /// Reads one page. An `<Error>` document gives its `Code` and `Message`; anything else that is
  /// not a `<ListBucketResult>`, a DTD, a size that is not a whole number of bytes, or a truncated
  /// page without a continuation token is refused with a message that says which.
  package static func parse(_ bytes: [UInt8]) -> Result<S3ListingPage, S3ListingProblem> {
    guard bytes.count <= maxBytes else {
      return .failure(S3ListingProblem("the listing page is larger than \(maxBytes >> 20) MiB; it is not read"))
    }
    if Metalink.doctypeLine(bytes) != nil || bytes.firstRange(of: Array("<!DOCTYPE".utf8)) != nil {
      return .failure(
        S3ListingProblem(
          "the listing page has a <!DOCTYPE>: S3 sends none, and its entity declarations are refused"))
    }
    let reader = S3ListingReader()
    let parser = XMLParser.forNetworkDocument(bytes, delegate: reader)
    let finished = parser.parse()
    if let problem = reader.problem { return .failure(problem) }
    guard finished, parser.parserError == nil else {
      let code = (parser.parserError as NSError?)?.code ?? 0
      return .failure(
        S3ListingProblem(
          "the listing page is not well-formed XML (line \(max(1, parser.lineNumber))): \(MetalinkReader.describe(code: code))"
        ))
    }
    return reader.finish()
  }
}

/// The SAX side of `S3Listing.parse`.
final class S3ListingReader: NSObject, XMLParserDelegate {
  enum Root { case listing, error }

  var root: Root?
  var stack: [String] = []
  var text: String?
  var textBytes = 0
  var problem: S3ListingProblem?
  var page = S3ListingPage()
  var encodingType: String?
  var truncatedText: String?
  var keyCountText: String?
  /// The `<Contents>` being read: its fields as given.
  var contents: [String: String] = [:]
  var rawKeys: [(key: String, size: String?, etag: String?, lastModified: String?)] = []
  var rawPrefixes: [String] = []
  var rawPrefix: String?
  var errorCode: String?
  var errorMessage: String?

  /// Where a captured element sits: its parent (nil for the root's children).
  static let captured: [String: Set<String>] = [
    "ListBucketResult": ["IsTruncated", "NextContinuationToken", "KeyCount", "Prefix", "EncodingType"],
    "Contents": ["Key", "Size", "ETag", "LastModified"],
    "CommonPrefixes": ["Prefix"],
    "Error": ["Code", "Message"],
  ]

  func stop(_ parser: XMLParser, _ message: String) {
    guard problem == nil else { return }
    problem = S3ListingProblem(message)
    parser.abortParsing()
  }

  func parser(
    _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?,
    attributes attributeDict: [String: String] = [:]
  ) {
    if root == nil {
      switch elementName {
      case "ListBucketResult": root = .listing
      case "Error": root = .error
      default:
        return stop(
          parser,
          "the answer is not an S3 ListObjectsV2 page: its root element is <\(ShownText.escaped(elementName, limit: 40))>, not <ListBucketResult>"
        )
      }
    }
    guard stack.count < S3Listing.maxDepth else {
      return stop(parser, "the listing page nests elements more than \(S3Listing.maxDepth) deep; it is refused")
    }
    let parent = stack.last
    let depth = stack.count
    stack.append(elementName)
    if let parent, (depth == 1 || (depth == 2 && stack[0] == "ListBucketResult")),
      Self.captured[parent]?.contains(elementName) == true, text == nil
    {
      text = ""
      textBytes = 0
    }
    if depth == 1, root == .listing, elementName == "Contents" || elementName == "CommonPrefixes" {
      contents = [:]
      if rawKeys.count + rawPrefixes.count >= S3Listing.maxEntries {
        stop(parser, "the listing page lists more than \(S3Listing.maxEntries) entries; it is refused")
      }
    }
  }

  func parser(_ parser: XMLParser, foundCharacters string: String) {
    guard text != nil else { return }
    textBytes += string.utf8.count
    guard textBytes <= S3Listing.maxText else {
      return stop(parser, "an element of the listing page holds more than \(S3Listing.maxText) bytes; it is refused")
    }
    text?.append(string)
  }

  func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
    self.parser(parser, foundCharacters: String(decoding: CDATABlock, as: UTF8.self))
  }

  func parser(
    _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
  ) {
    guard stack.popLast() != nil else { return }
    let depth = stack.count
    if let value = text, depth >= 1, depth <= 2, let parent = stack.last,
      Self.captured[parent]?.contains(elementName) == true
    {
      text = nil
      switch (parent, elementName) {
      case ("ListBucketResult", "IsTruncated"): truncatedText = value
      case ("ListBucketResult", "NextContinuationToken"): page.nextContinuationToken = value
      case ("ListBucketResult", "KeyCount"): keyCountText = value
      case ("ListBucketResult", "Prefix"): rawPrefix = value
      case ("ListBucketResult", "EncodingType"): encodingType = value
      case ("Error", "Code"): errorCode = value
      case ("Error", "Message"): errorMessage = value
      case ("CommonPrefixes", "Prefix"): rawPrefixes.append(value)
      default: contents[elementName] = value
      }
      return
    }
    if depth == 1, elementName == "Contents", root == .listing {
      guard let key = contents["Key"] else {
        return stop(parser, "a <Contents> of the listing page has no <Key>; the page is refused")
      }
      rawKeys.append((key, contents["Size"], contents["ETag"], contents["LastModified"]))
    }
  }

  func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
    guard problem == nil else { return }
    let code = (parseError as NSError).code
    stop(
      parser,
      "the listing page is not well-formed XML (line \(max(1, parser.lineNumber))): \(MetalinkReader.describe(code: code))"
    )
  }

  // DTD declarations: refused on the bytes before the parse; these are the second line (see
  // MetalinkReader).
  func parser(_ parser: XMLParser, foundElementDeclarationWithName elementName: String, model: String) {
    stop(parser, "the listing page declares an element: S3 sends no DTD, and batchdl refuses its declarations")
  }

  func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
    stop(parser, "the listing page declares an entity: S3 sends no DTD, and batchdl refuses its declarations")
  }

  func parser(
    _ parser: XMLParser, foundExternalEntityDeclarationWithName name: String, publicID: String?, systemID: String?
  ) {
    stop(parser, "the listing page declares an entity: S3 sends no DTD, and batchdl refuses its declarations")
  }

  func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
    stop(parser, "the listing page refers to an undeclared entity (&\(ShownText.escaped(name, limit: 40));)")
    return nil
  }

  /// The page from what was read, checked.
  func finish() -> Result<S3ListingPage, S3ListingProblem> {
    switch root {
    case nil:
      return .failure(S3ListingProblem("the answer is empty: an S3 ListObjectsV2 page is a <ListBucketResult>"))
    case .error:
      let code = errorCode.map { ShownText.escaped($0, limit: 80) } ?? "no Code"
      let message = errorMessage.map { ": " + ShownText.escaped($0, limit: 300) } ?? ""
      return .failure(S3ListingProblem("the server answered with an S3 error, \(code)\(message)", code: errorCode))
    case .listing:
      break
    }
    let urlEncoded: Bool
    switch encodingType?.trimmingCharacters(in: .whitespaces) {
    case nil: urlEncoded = false
    case "url": urlEncoded = true
    case let other?:
      return .failure(
        S3ListingProblem(
          "the listing page has <EncodingType>\(ShownText.escaped(other, limit: 40))</EncodingType>; batchdl reads url only"
        ))
    }
    func decoded(_ text: String) -> [UInt8] {
      guard urlEncoded else { return Array(text.utf8) }
      // S3 writes a space as `+` (botocore reads the keys with unquote_plus).
      return Hex.percentDecoded(Array(text.utf8).map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 })
    }
    switch truncatedText?.trimmingCharacters(in: .whitespacesAndNewlines) {
    case nil, "false": page.isTruncated = false
    case "true": page.isTruncated = true
    case let other?:
      return .failure(
        S3ListingProblem(
          "the listing page's <IsTruncated> is '\(ShownText.escaped(other, limit: 40))', not true or false"))
    }
    if page.isTruncated && (page.nextContinuationToken ?? "").isEmpty {
      return .failure(
        S3ListingProblem(
          "the listing page says more pages follow (<IsTruncated>true) but gives no <NextContinuationToken>; the listing cannot go on and is refused"
        ))
    }
    if let keyCountText {
      guard let count = Self.wholeNumber(keyCountText), count <= Int64(Int.max) else {
        return .failure(
          S3ListingProblem(
            "the listing page's <KeyCount> is '\(ShownText.escaped(keyCountText, limit: 40))', not a whole number"))
      }
      page.keyCount = Int(count)
    }
    page.prefix = rawPrefix.map(decoded)
    page.commonPrefixes = rawPrefixes.map(decoded)
    page.objects.reserveCapacity(rawKeys.count)
    for raw in rawKeys {
      let key = decoded(raw.key)
      guard let sizeText = raw.size, let size = Self.wholeNumber(sizeText) else {
        let shown = raw.size.map { "'\(ShownText.escaped($0, limit: 40))'" } ?? "missing"
        return .failure(
          S3ListingProblem(
            "the listing page gives the key '\(ShownText.escaped(String(decoding: key, as: UTF8.self), limit: 200))' a <Size> that is \(shown), not a whole number of bytes; the page is refused"
          ))
      }
      page.objects.append(S3ListedObject(key: key, size: size, etag: raw.etag, lastModified: raw.lastModified))
    }
    return .success(page)
  }

  /// Decimal digits only (spaces around them allowed), at most `Int64.max`.
  static func wholeNumber(_ text: String) -> Int64? {
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
    return Int64(trimmed)
  }
}
