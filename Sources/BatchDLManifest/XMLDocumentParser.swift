import Foundation

#if canImport(FoundationXML)
  import FoundationXML
#endif

extension XMLParser {
  /// A parser of `bytes` for a document from the network (a Metalink document, an S3 listing):
  /// namespaces processed, no external entity resolved, `delegate` answering. Its DTD callbacks
  /// are the readers' guard: XMLParser sets libxml2's options itself and offers no way to change
  /// them (`XML_PARSE_RECOVER | XML_PARSE_NOENT`, and DTD loading when entities would resolve).
  static func forNetworkDocument(_ bytes: [UInt8], delegate: XMLParserDelegate) -> XMLParser {
    let parser = XMLParser(data: Data(bytes))
    parser.shouldProcessNamespaces = true
    parser.shouldReportNamespacePrefixes = false
    parser.shouldResolveExternalEntities = false
    parser.delegate = delegate
    return parser
  }
}
