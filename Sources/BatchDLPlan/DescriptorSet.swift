import BatchDLManifest
import BatchDLTransfer

/// A document a `metalink:` entry names by URL, as the planner gets it: its bytes (fetched now or
/// stored by an earlier command), or why there are none.
public struct FetchedDocument: Sendable {
  public var outcome: DescriptorOutcome
  public var body: [UInt8]?
  /// Why there is no usable copy (`failed`), or what went wrong before a stored copy was used.
  public var problem: String?
  /// The response's `Content-Type` (an index page's format), when known.
  public var contentType: String?
  /// SHA-256 of `body`, as the copy's metadata keeps it (computed once, when the body came).
  public var sha256: String?
  /// The URL the body came from after redirects, when it is not the one asked for: what an index
  /// page's relative links resolve against.
  public var finalURL: String?
  /// The server answered 404 or 410: there is no such document (a sidecar that is not there).
  public var notFound = false

  public init(
    outcome: DescriptorOutcome, body: [UInt8]? = nil, problem: String? = nil, contentType: String? = nil,
    sha256: String? = nil
  ) {
    self.outcome = outcome
    self.body = body
    self.problem = problem
    self.contentType = contentType
    self.sha256 = sha256
  }
}

/// The documents of a manifest's `metalink:` entries given by URL, by URL as written (after
/// `${VAR}` expansion).
public struct DescriptorSet: Sendable {
  /// By `key(of:for:in:)`: the document's URL, and the fetching session's connection identity.
  public var documents: [String: FetchedDocument] = [:]
  /// Checksum files, by `key(of:keyring:for:in:)`.
  public var checksums: [String: ChecksumDocument] = [:]
  /// `index:` crawls, by `key(of:for:in:)` of their spec.
  public var listings: [String: IndexCrawl] = [:]
  /// `apt:` crawls, by `key(of:for:in:)` of their spec.
  public var repositories: [String: RepositoryCrawl] = [:]
  /// Requests sent to fetch these documents (`summary.descriptor_requests` of the run's report).
  public var requestsSent = 0
  /// Of `requestsSent`, by the index of the session each was sent for.
  public var requestsPerSession: [Int: Int] = [:]
  /// The sidecars of downloads `checksums: sidecar` covers, by `key(of:for:in:)` of the file's URL.
  public var sidecars: [String: SidecarPair] = [:]

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

/// Why the tasks that depend on a document fail: `descriptor` (it cannot be fetched or read) or
/// `signature` (its signature is bad, missing or made by a key the keyring does not hold).
public struct DocumentFailure: Error, Sendable, Hashable {
  public var code: FailureCode
  public var message: String

  public init(code: FailureCode, message: String) {
    self.code = code
    self.message = message
  }
}

/// A checksum file of a `checksums:` key as the planner gets it: read (from the manifest's folder,
/// or fetched by URL), its signature checked when a keyring is given, and parsed. Only the bytes
/// the signature covers are parsed.
public struct ChecksumDocument: Sendable {
  /// The path or the URL (user-info and secrets masked).
  public var display: String
  /// For a file given by URL: the URL, which matching takes names relative to.
  public var url: String?
  public var outcome: DescriptorOutcome
  /// SHA-256 of the file's bytes (all of them, signature included), when there were any.
  public var sha256: String?
  /// The parsed entries; nil when there are none to use.
  public var file: ChecksumFile?
  /// Set when the file cannot be used: every task it covers fails with this.
  public var failure: DocumentFailure?
  /// A problem worth a warning that did not stop the file's use (a stored copy used instead).
  public var problem: String?
  /// The signature, for the report: its URL (masked) and what became of its fetch.
  public var signature: (url: String, outcome: DescriptorOutcome, sha256: String?)?

  public init(display: String, url: String?, outcome: DescriptorOutcome) {
    self.display = display
    self.url = url
    self.outcome = outcome
  }
}

/// A page of an `index:` entry's listing, as the report lists it.
public struct ListingPage: Sendable {
  /// The page's URL, masked.
  public var url: String
  public var outcome: DescriptorOutcome
  public var sha256: String?
  /// Why it could not be used, masked.
  public var failure: String?

  public init(url: String, outcome: DescriptorOutcome, sha256: String? = nil, failure: String? = nil) {
    self.url = url
    self.outcome = outcome
    self.sha256 = sha256
    self.failure = failure
  }
}

/// What an `index:` entry's crawl found: the folder pages read, level by level, and the pages that
/// failed. A listing with a failed page is incomplete.
public struct IndexCrawl: Sendable {
  public var folders: [DirectoryIndex.FetchedFolder] = []
  public var pages: [ListingPage] = []
  /// Set when a limit stopped the crawl.
  public var limitProblem: String?

  public init() {}
}

extension DescriptorSet {
  /// Where the checksum file `source` of a `checksums:` key with `keyring` is kept: it is read
  /// and checked once per file, signature, keyring and connection identity.
  package static func key(
    of source: ChecksumSource, keyring: String?, for session: Session, in manifest: Manifest
  )
    -> String
  {
    let base = source.isURL ? key(of: source.location, for: session, in: manifest) : "file:" + source.location
    return base + "\n" + (source.signature ?? "") + "\n" + (keyring ?? "")
  }

  /// Where the crawl of `spec` is kept: by URL, depth, filter and connection identity.
  package static func key(of spec: IndexSpec, for session: Session, in manifest: Manifest) -> String {
    key(of: spec.url, for: session, in: manifest) + "\n\(spec.depth)\n" + spec.exclude.joined(separator: "\n")
  }
}

/// What an `apt:` entry's crawl found (`RepositoryFormat`): the final result, the documents
/// asked for, and the pool paths `keep_removed` still keeps.
public struct RepositoryCrawl: Sendable {
  public var result = RepositoryResult()
  /// Each document asked for, as the report lists it.
  public var pages: [ListingPage] = []
  /// Why the crawl stopped before the format answered (a round limit); nil when it answered.
  public var problem: String?
  /// Paths (relative to the root) no index names any more that `keep_removed` keeps in the mirror,
  /// with the time (seconds since 1970) each may go.
  public var kept: [[UInt8]: Int64] = [:]

  public init() {}
}

extension DescriptorSet {
  /// Where the crawl of `spec` is kept: by root URL, what it selects, keyring, destination and
  /// connection identity.
  package static func key(of spec: AptSpec, for session: Session, in manifest: Manifest) -> String {
    [
      key(of: spec.url, for: session, in: manifest), spec.suites.joined(separator: ","),
      spec.components.joined(separator: ","), spec.architectures.joined(separator: ","), "\(spec.sources)",
      spec.keyring, session.dest, spec.to ?? "", "\(spec.keepRemoved.milliseconds)",
    ].joined(separator: "\n")
  }
}
