import BatchDLManifest

/// A document a `metalink:` entry names by URL, as the planner gets it: its bytes (fetched now or
/// stored by an earlier command), or why there are none.
public struct FetchedDocument: Sendable {
  public var outcome: DescriptorOutcome
  public var body: [UInt8]?
  /// Why there is no usable copy (`failed`), or what went wrong before a stored copy was used.
  public var problem: String?

  public init(outcome: DescriptorOutcome, body: [UInt8]? = nil, problem: String? = nil) {
    self.outcome = outcome
    self.body = body
    self.problem = problem
  }
}

/// The documents of a manifest's `metalink:` entries given by URL, by URL as written (after
/// `${VAR}` expansion).
public struct DescriptorSet: Sendable {
  /// By `key(of:for:in:)`: the document's URL, and the fetching session's connection identity.
  public var documents: [String: FetchedDocument] = [:]

  /// Where a document fetched for `session` is kept: one fetch per URL and connection identity
  /// (`Session.connectionIdentity`), so that sessions that trust other things never share one.
  package static func key(of document: String, for session: Session, in manifest: Manifest) -> String {
    guard let identity = session.connectionIdentity(relativeTo: manifest.absoluteDirectory) else { return document }
    return document + "\n" + identity
  }

  public init(documents: [String: FetchedDocument] = [:]) {
    self.documents = documents
  }
}
