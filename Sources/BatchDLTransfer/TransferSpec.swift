import BatchDLSupport
import Crypto

/// Everything the engine needs to send one request and keep its response: no manifest, no plan.
public struct TransferSpec: Sendable {
  public enum Body: Sendable {
    case none
    case bytes([UInt8])
    /// A file streamed from disk (uploads, `body_file`).
    case file(String)
    case form([FormPart])
  }

  public struct FormPart: Sendable {
    public var name: String
    public var value: String
    public var file: String?

    public init(name: String, value: String, file: String?) {
      self.name = name
      self.value = value
      self.file = file
    }
  }

  /// Where a 2xx body goes.
  public enum Target: Sendable {
    /// Into this partial file (created or truncated).
    case file(String)
    /// Into memory, at most `limit` bytes; past that, or when `spill` matches the response, into
    /// `spill.path` (a data task that becomes a download).
    case memory(limit: Int64, spill: Spill?)

    /// The partial file, for a download.
    public var path: String? {
      if case .file(let path) = self { return path }
      return nil
    }
  }

  /// When a data task becomes a download.
  public struct Spill: Sendable {
    public var contentTypes: [String]
    public var largerThan: Int64?
    public var path: String

    public init(contentTypes: [String], largerThan: Int64?, path: String) {
      self.contentTypes = contentTypes
      self.largerThan = largerThan
      self.path = path
    }
  }

  /// Where an interrupted download continues: `Range: bytes=offset-` with `If-Range: validator`.
  public struct Resume: Sendable, Equatable {
    public var offset: Int64
    public var validator: ResumeValidator
    /// The full length recorded with the checkpoint, when known.
    public var total: Int64?

    public init(offset: Int64, validator: ResumeValidator, total: Int64?) {
      self.offset = offset
      self.validator = validator
      self.total = total
    }
  }

  /// Validators for a conditional request (`--refresh`): a 304 means the file is unchanged.
  public struct Validators: Sendable, Equatable {
    public var etag: String?
    public var lastModified: String?

    public init(etag: String?, lastModified: String?) {
      self.etag = etag
      self.lastModified = lastModified
    }
  }

  public var method: String

  /// Whether `method` is `name` (given in upper case), in any case, without making a string: asked
  /// for every transfer.
  package func method(is name: String) -> Bool {
    method.utf8.count == name.utf8.count && zip(method.utf8, name.utf8).allSatisfy { $0 & 0xDF == $1 }
  }

  /// Whether the request may go over HTTP/2 and be sent again safely: before the first response of
  /// its host says so, its first requests may already have shared a connection that a GOAWAY
  /// ended. Only a GET or HEAD: whether an unknown server processed anything else is not known.
  package var mayMultiplex: Bool {
    guard method(is: "GET") || method(is: "HEAD") else { return false }
    return httpVersion == .http2 || (httpVersion == .auto && url.utf8.starts(with: "https:".utf8))
  }
  public var url: String
  /// `Name: value` lines.
  public var headers: [String]
  public var body: Body
  public var target: Target
  /// Idle limit for one attempt.
  public var requestTimeout: Interval
  /// Budget for all attempts; nil is unlimited.
  public var resourceTimeout: Interval?
  public var retry: RetryPolicy
  /// Bytes per second for the whole session (`sessionKey`), shared evenly by its transfers in
  /// flight; nil is unlimited.
  public var rateLimit: Int64?
  /// Per-host cap key and limit (the session's `max_connections_per_host`).
  public var hostKey: String
  public var hostLimit: Int
  /// Per-session cap key and limit (the session's `max_concurrent`).
  public var sessionKey: Int
  public var sessionLimit: Int
  /// Skip TLS verification (a session's `insecure: true`).
  public var insecure: Bool
  /// The session's `tls:` settings.
  public var tls = TLSSettings()
  /// The session's (or task's) credentials, netrc, proxy route and signing keys.
  public var access = AccessSettings()
  /// The session's `network.http_version`.
  public var httpVersion = HTTPVersion.auto
  /// Ask for compressed bodies and decode them (data tasks); false sends `Accept-Encoding: identity`
  /// (downloads, whose bytes on disk must be the resource's own).
  public var decodeContent = false
  /// Continue a partial file instead of starting over.
  public var resume: Resume?
  /// Ask whether the resource changed since these validators.
  public var conditional: Validators?
  /// Milliseconds already spent against `resourceTimeout` in earlier runs.
  public var spentBefore: Int64 = 0
  /// The session's cookie jar: a path, "" for cookies kept in memory only, nil for no cookies.
  public var cookieJar: String?
  /// On connect and DNS failures, keep trying within the resource budget (without one,
  /// `TransferDefaults.resourceLimitMilliseconds`) instead of counting attempts:
  /// `waits_for_connectivity`.
  public var waitsForConnectivity = false
  /// An interface to bind to (`CURLOPT_INTERFACE`, `if!NAME`), chosen by the network policy.
  public var interface: String?
  /// Names (lower-case) of headers that must never reach another origin (credentials, tokens,
  /// values from `${VAR}`): when there are any, batchdl follows redirects itself and drops them
  /// when a redirect leaves the origin.
  public var originOnlyHeaders: Set<String> = []
  /// The origin those headers were given for: the URL the
  /// manifest names for the request, or the document's for a file a document fetched from the
  /// network names. A request to any other URL (a mirror, a source a document lists, a redirect)
  /// goes without them. The job builder sets it for every request with such headers; nil (a spec
  /// made elsewhere) leaves them to `following`, which drops them when a redirect leaves the origin.
  public var headerOrigin: Origin?
  /// Header lines of the source in use alone (a mirror's own `headers:`): sent to it beside the
  /// others, replacing those of the same name; secret ones are dropped by a redirect that leaves
  /// its origin.
  public var sourceHeaders: [String] = []
  /// Other URLs serving the same bytes, tried in order when the source in use fails (`mirrors:`).
  public var mirrors: [TransferSource] = []
  /// What the body must be (`size:`, `sha256:` of a download with mirrors): a source whose bytes
  /// disagree is set aside.
  public var expectedSize: Int64?
  /// The size a listing gave the file, to the byte: reserved before the body is written and shown
  /// by the progress bar when the response says no length. Not a pin: another size is no error.
  public var listedSize: Int64?
  /// The whole file's expected digest (`sha256:`, `sha512:`, a Metalink or checksum-file hash).
  public var expectedDigest: ExpectedDigest?
  /// `expectedDigest` when it is a SHA-256.
  public var expectedSHA256: String? {
    get { expectedDigest?.algorithm == .sha256 ? expectedDigest?.hex : nil }
    set { expectedDigest = newValue.map { ExpectedDigest(algorithm: .sha256, hex: $0) } }
  }
  /// `max_size`: a response whose representation is longer fails with `too-large` (`BodyGate`).
  public var maxSize: Int64?
  /// Piece digests (a Metalink `<pieces>`): a file whose whole digest fails, or that has none, is
  /// checked piece by piece, and only the pieces that fail are fetched again.
  public var pieces: PieceDigests?
  /// At most this many connections for the download (`segments`), each a range of at least
  /// `minSegmentSize` bytes (`min_segment_size`).
  public var segments = 1
  public var minSegmentSize: Int64 = 16 << 20
  /// The last byte (inclusive) a ranged request asks for: `Range: bytes=resume.offset-rangeEnd`.
  public var rangeEnd: Int64?
  /// Extents of the partial file known to be on disk (a segmented download's checkpoint): the
  /// rest is fetched as ranges, with `resume`'s validator and total.
  public var extents: [ByteExtent] = []

  public init(
    method: String, url: String, headers: [String], body: Body, target: Target, requestTimeout: Interval,
    resourceTimeout: Interval?, retry: RetryPolicy, rateLimit: Int64?, hostKey: String, hostLimit: Int,
    sessionKey: Int, sessionLimit: Int, insecure: Bool = false
  ) {
    self.method = method
    self.url = url
    self.headers = headers
    self.body = body
    self.target = target
    self.requestTimeout = requestTimeout
    self.resourceTimeout = resourceTimeout
    self.retry = retry
    self.rateLimit = rateLimit
    self.hostKey = hostKey
    self.hostLimit = hostLimit
    self.sessionKey = sessionKey
    self.sessionLimit = sessionLimit
    self.insecure = insecure
  }
}

/// A finished transfer's response.
public struct TransferResult: Sendable {
  public var head: ResponseHead
  public var size: Int64
  /// Lower-case hex SHA-256 of the body; empty for a small download's body kept in memory, which
  /// `withDigest()` hashes off the engine's thread.
  public var sha256: String
  /// The partial file holding the body, when it went to a file.
  public var file: String?
  /// The identity of `file` once its bytes were written and hashed: it is placed only if its path
  /// still names that file, unchanged.
  public var fileIdentity: FileIdentity?
  /// The body, when it stayed in memory.
  public var body: [UInt8]?
  public var becameDownload: Bool
  public var attempts: Int
  /// The URL after redirects.
  public var effectiveURL: String
  /// The byte the body continued from (0 when it came whole).
  public var resumedFrom: Int64 = 0
  /// The server answered 304 to a conditional request: nothing was transferred.
  public var notModified = false
  /// Body bytes received from the network in this run, over all attempts (not those kept from
  /// an earlier run).
  public var transferred: Int64 = 0
  /// The sources tried, with the bytes each gave, when there was more than one.
  public var sources: [SourceBytes] = []

  /// The result with `sha256` computed from `body` where the engine left that to the run.
  /// Where the body is, for `BodyCheck`: the file, else the bytes in memory.
  public var checkedBody: BodyCheck.Body? { file.map { .file($0) } ?? body.map { .memory($0) } }

  public func withDigest() -> TransferResult {
    guard sha256.isEmpty, !notModified, let body else { return self }
    var result = self
    result.sha256 = SHA256.hash(data: body).hexString
    return result
  }
}

/// Why a transfer failed, with a stable code for reports (`http-404`, `timeout`, `connect`...).
public struct TransferFailure: Error, Sendable, Equatable, CustomStringConvertible {
  public var code: FailureCode
  public var message: String
  public var status: Int?
  public var attempts: Int
  /// For `all-sources-failed`: each source's last error.
  public var sources: [SourceFailure] = []

  public init(code: FailureCode, message: String, status: Int? = nil, attempts: Int = 0) {
    self.code = code
    self.message = message
    self.status = status
    self.attempts = attempts
  }

  public var description: String { "\(code): \(message)" }
}

extension TransferSpec.Spill {
  /// Whether a response makes a data task a download: its type is listed, or it is larger than the limit.
  package func matches(_ head: ResponseHead) -> Bool {
    if let type = head.mediaType, contentTypes.contains(where: { $0.lowercased() == type }) { return true }
    if let limit = largerThan, let length = head.contentLength, length > limit { return true }
    return false
  }
}
