/// A package repository format (APT now; RPM's `repomd.xml` and PyPI's simple index next) as a
/// pure step function: documents in, documents to fetch or the final tasks and pins out.
///
/// The caller (the engine) starts with no documents, fetches what `step` asks for, runs gpgv on
/// signed roots, and calls `step` again with everything fetched so far, until it answers `done`.
/// `step` keeps no state: the same documents give the same answer. Every failure is one
/// document's or one path's, never the whole mirror's.
public protocol RepositoryFormat: Sendable {
  /// The next documents to fetch, or the result once every document it needs is in `documents`.
  func step(_ documents: RepositoryDocuments) -> RepositoryStep
}

/// A document the caller fetched (or tried to): its bytes, or nil when the server answered 404.
public struct RepositoryDocument: Sendable {
  /// The body; nil when the server does not have the document (HTTP 404).
  public var bytes: [UInt8]?
  /// Whether gpgv verified its signature against the keyring (for a signed root: `InRelease`, or
  /// `Release` with its `Release.gpg`); false for documents that carry no signature.
  public var signatureVerified: Bool
  /// The `Date` (seconds since 1970-01-01 UTC) of the copy already published in the mirror, for a
  /// signed root; nil when there is none (a first mirror).
  public var storedDate: Int64?
  /// The SHA-256 of `bytes` (64 lower-case hexadecimal digits) when the caller computed it as they
  /// came; nil: the format computes it.
  public var sha256: String?

  public init(bytes: [UInt8]?, signatureVerified: Bool = false, storedDate: Int64? = nil, sha256: String? = nil) {
    self.bytes = bytes
    self.signatureVerified = signatureVerified
    self.storedDate = storedDate
    self.sha256 = sha256
  }
}

/// The documents fetched so far, by the path they were fetched from (relative to the
/// repository's root, as bytes), and the time the checks use.
public struct RepositoryDocuments: Sendable {
  public var documents: [[UInt8]: RepositoryDocument]
  /// Now, in seconds since 1970-01-01 UTC (`Valid-Until` is checked against it).
  public var now: Int64

  public init(_ documents: [[UInt8]: RepositoryDocument] = [:], now: Int64) {
    self.documents = documents
    self.now = now
  }

  public subscript(path: [UInt8]) -> RepositoryDocument? { documents[path] }
}

/// A document to fetch: where it is published, where to fetch it from, and its pins when a parent
/// document gives them.
public struct RepositoryRequest: Hashable, Sendable {
  /// Relative to the repository's root: where the mirror publishes it.
  public var path: [UInt8]
  /// Relative to the repository's root: where to fetch it from (a by-hash path, or `path`).
  public var fetchPath: [UInt8]
  public var size: Int64?
  /// 64 lower-case hexadecimal digits.
  public var sha256: String?
  /// A 404 on it is no failure.
  public var isOptional: Bool

  public init(path: [UInt8], fetchPath: [UInt8]? = nil, size: Int64? = nil, sha256: String? = nil, isOptional: Bool) {
    self.path = path
    self.fetchPath = fetchPath ?? path
    self.size = size
    self.sha256 = sha256
    self.isOptional = isOptional
  }
}

/// A file the mirror publishes, with the size and digest it must have.
public struct RepositoryFile: Hashable, Sendable {
  /// Relative to the repository's root, as bytes.
  public var path: [UInt8]
  public var size: Int64
  /// 64 lower-case hexadecimal digits.
  public var sha256: String
  /// Where its bytes come from, relative to the root (a by-hash path, or `path`).
  public var fetchPath: [UInt8]
  /// Other paths the same bytes are published at too (an index's by-hash path).
  public var alsoAt: [[UInt8]]

  public init(path: [UInt8], size: Int64, sha256: String, fetchPath: [UInt8]? = nil, alsoAt: [[UInt8]] = []) {
    self.path = path
    self.size = size
    self.sha256 = sha256
    self.fetchPath = fetchPath ?? path
    self.alsoAt = alsoAt
  }
}

/// One document's or one path's failure: a stable code (`signature`, `checksum-mismatch`,
/// `descriptor`) and a message that says what is wrong.
public struct RepositoryFailure: Error, Hashable, Sendable, CustomStringConvertible {
  /// The document or pool path that fails, relative to the repository's root.
  public var path: [UInt8]
  public var code: String
  public var message: String

  public init(path: [UInt8], code: String, message: String) {
    self.path = path
    self.code = code
    self.message = message
  }

  public var description: String { "\(AptPath.shown(path)): \(code): \(message)" }
}

/// What one document came to (for `plan`): accepted with how many files it adds, or failed.
public struct RepositoryVerdict: Hashable, Sendable {
  public var path: [UInt8]
  /// nil when accepted.
  public var failure: RepositoryFailure?
  /// How many files it adds: index files for a root, pool files for an index.
  public var filesAdded: Int
  /// The bytes those files hold.
  public var bytesAdded: Int64

  public init(path: [UInt8], failure: RepositoryFailure? = nil, filesAdded: Int = 0, bytesAdded: Int64 = 0) {
    self.path = path
    self.failure = failure
    self.filesAdded = filesAdded
    self.bytesAdded = bytesAdded
  }
}

/// One part of a repository that is published whole or not at all (an APT suite): the pool files
/// its indexes name, which its index files wait for, and the root files that wait for those.
public struct RepositoryPart: Sendable {
  public var name: String
  /// The pool paths its indexes name (each in `RepositoryResult.pool`).
  public var pool: [[UInt8]] = []
  /// Empty when the part is withheld.
  public var indexes: [RepositoryFile] = []
  /// Empty when the part is withheld.
  public var roots: [RepositoryFile] = []
  /// Why its indexes and roots are not published (the previous copy stays); nil when they are.
  public var withheld: String?
  /// Documents its root lists that the mirror does not keep (relative to the repository's root).
  public var unmirrored: [[UInt8]] = []

  public init(name: String) { self.name = name }
}

/// The final answer: what to fetch and publish, in publish order, and what failed.
///
/// Publish `pool` first, then `indexes`, then `roots` in their order (last); `indexes` and `roots`
/// are empty for a part (an APT suite) with any failure, so the previous, consistent copy stays.
public struct RepositoryResult: Sendable {
  public var pool: [RepositoryFile] = []
  public var indexes: [RepositoryFile] = []
  /// The signed root files (`Release`, `Release.gpg`, `InRelease`), published last, in this order.
  public var roots: [RepositoryFile] = []
  /// The parts `indexes` and `roots` belong to, each published whole or not at all.
  public var parts: [RepositoryPart] = []
  public var verdicts: [RepositoryVerdict] = []
  /// Every failure: of a document (its verdict has it too) or of one pool path.
  public var failures: [RepositoryFailure] = []

  public init() {}
}

/// A step's answer.
public enum RepositoryStep: Sendable {
  /// Fetch these (those not yet in the documents) and call `step` again.
  case fetch([RepositoryRequest])
  case done(RepositoryResult)
}

extension RepositoryResult {
  /// Withholds the parts (suites) whose documents are below one of `folders` (e.g.
  /// `dists/stable/`): their indexes and roots are not published, `why` says so.
  public mutating func withhold(partsBelow folders: [[UInt8]: String]) {
    for number in parts.indices where parts[number].withheld == nil {
      let folder = Array("dists/\(parts[number].name)/".utf8)
      guard let why = folders[folder] else { continue }
      parts[number].withheld = why
      parts[number].indexes = []
      parts[number].roots = []
    }
    indexes = parts.flatMap(\.indexes)
    roots = parts.flatMap(\.roots)
  }
}
