import Foundation

/// A manifest, read and checked: every default applied, every `${VAR}` expanded.
public struct Manifest: Sendable {
  /// The manifest's path as the user gave it.
  public var path: String
  /// The folder relative paths in the manifest are resolved against, as the user named it (for
  /// messages).
  public var directory: String

  /// `directory` as an absolute path (against the working directory when the manifest was read),
  /// for everything that touches files: state and partial files stay valid whatever the working
  /// directory of a later run.
  public let absoluteDirectory: String
  public var version: Int
  public var sessions: [Session]
  /// Values taken from the environment that must be masked wherever the manifest is echoed.
  public var secrets: [Secret]

  public init(path: String, directory: String, version: Int, sessions: [Session], secrets: [Secret]) {
    self.path = path
    self.directory = directory
    absoluteDirectory = Self.absolute(directory: directory)
    self.version = version
    self.sessions = sessions
    self.secrets = secrets
  }

  /// A manifest's folder as an absolute path, against the working directory.
  static func absolute(directory: String) -> String {
    if directory.hasPrefix("/") { return directory }
    let cwd = FileManager.default.currentDirectoryPath
    return directory == "." || directory.isEmpty ? cwd : cwd + "/" + directory
  }
}

public enum SessionKind: String, CaseIterable, Sendable {
  case `default`
  case ephemeral
  case background
}

public enum CachePolicy: String, CaseIterable, Sendable {
  case `protocol`
  case reload
  case preferCache = "prefer-cache"
  case onlyCache = "only-cache"
}

public struct Timeouts: Hashable, Sendable {
  /// Idle limit for one attempt: no bytes moving for this long fails the attempt.
  public var request: Interval
  /// Budget for the whole task across attempts, resumes and runs; nil is unlimited.
  public var resource: Interval?
}

public struct RetryPolicy: Hashable, Sendable {
  /// Total tries; 1 means no retry.
  public var attempts: Int
  public var backoff: Interval
  public var maxBackoff: Interval
}

public struct CacheSettings: Hashable, Sendable {
  public var policy: CachePolicy
  public var memory: Int64
  public var disk: Int64
}

public struct NetworkSettings: Hashable, Sendable {
  public var allowsCellular: Bool
  public var allowsExpensive: Bool
  public var allowsConstrained: Bool
  public var waitsForConnectivity: Bool
  public var discretionary: Bool
  /// Local-time window (`01:00-05:00`) for discretionary tasks, in minutes after midnight.
  public var window: TimeWindow?
  public var maxConnectionsPerHost: Int
  public var maxConcurrent: Int
  /// Bytes per second for the whole session; nil is unlimited.
  public var rateLimit: Int64?
  public var cellularInterfaces: [String]
  public var expensiveInterfaces: [String]
  public var constrainedInterfaces: [String]
  /// `network.segments`: at most this many connections for one download (a task's `segments:`
  /// overrides it).
  public var segments = 1
  /// `network.min_segment_size`: a download is split only into segments at least this long.
  public var minSegmentSize: Int64 = 16 << 20
  /// `network.http_version`.
  public var httpVersion = HTTPVersion.auto
}

/// `network.http_version`: which HTTP the session's requests ask for.
public enum HTTPVersion: String, CaseIterable, Sendable {
  /// HTTP/2 over TLS where the server offers it by ALPN, else HTTP/1.1; HTTP/1.1 on `http://`.
  case auto
  /// HTTP/1.1 only.
  case http1_1 = "1.1"
  /// HTTP/2: by ALPN over TLS (HTTP/1.1 still when the server offers nothing else), and with prior
  /// knowledge (h2c) on `http://`.
  case http2 = "2"
}

/// A session's `tls:` settings. Paths are absolute (relative ones were read from the manifest's
/// folder), and the files were there when the manifest was read.
public struct TLSSettings: Hashable, Sendable {
  public enum Version: String, CaseIterable, Sendable {
    case tls1_2 = "1.2"
    case tls1_3 = "1.3"
  }

  /// PEM file of the CAs to trust instead of the system's store.
  public var caFile: String?
  /// Folder of CA certificates named by subject hash (`c_rehash`), instead of the system's store.
  public var caPath: String?
  /// Client certificate (PEM), and its key when `clientKey` is not given.
  public var clientCert: String?
  public var clientKey: String?
  /// The client key's password: a secret.
  public var keyPassword: String?
  /// libcurl's `CURLOPT_PINNEDPUBLICKEY`: a public key file, or `sha256//BASE64[;sha256//...]`.
  public var pinnedPublicKey: String?
  /// The lowest TLS version accepted.
  public var minVersion: Version?

  public init() {}

  /// Whether nothing is set.
  public var isEmpty: Bool { self == TLSSettings() }

  /// `base` with each key `over` gives replaced; the client certificate, its key and the key's
  /// password go together (a session's certificate never gets the defaults' key or password).
  static func merged(_ base: TLSSettings, _ over: TLSSettings) -> TLSSettings {
    var result = base
    result.caFile = over.caFile ?? base.caFile
    result.caPath = over.caPath ?? base.caPath
    if over.clientCert != nil || over.clientKey != nil || over.keyPassword != nil {
      result.clientCert = over.clientCert
      result.clientKey = over.clientKey
      result.keyPassword = over.keyPassword
    }
    result.pinnedPublicKey = over.pinnedPublicKey ?? base.pinnedPublicKey
    result.minVersion = over.minVersion ?? base.minVersion
    return result
  }

  /// What the settings trust and present, for a request's identity: paths under `folder` relative
  /// to it (the same on every machine), the password left out (the key file stands for it).
  func identity(relativeTo folder: String) -> String {
    func path(_ value: String?) -> String {
      guard let value else { return "" }
      let prefix = folder.hasSuffix("/") ? folder : folder + "/"
      return value.hasPrefix(prefix) ? String(value.dropFirst(prefix.count)) : value
    }
    return [
      path(caFile), path(caPath), path(clientCert), path(clientKey),
      pinnedPublicKey.map { $0.hasPrefix("sha256//") ? $0 : path($0) } ?? "", minVersion?.rawValue ?? "",
    ].joined(separator: "\u{1F}")
  }
}

/// Bounds of the source keys.
extension Limits {
  /// `segments` (session and task): connections for one download.
  public static let segments = 64
  /// `network.min_segment_size`: from 1KB.
  public static let minSegmentSize: Int64 = 1 << 10
}

/// A daily window of local time; `end` may be before `start` (a window across midnight).
public struct TimeWindow: Hashable, Sendable, CustomStringConvertible {
  public var start: Int
  public var end: Int

  /// Parses `HH:MM-HH:MM`.
  public static func parse(_ text: String) -> TimeWindow? {
    let parts = text.trimmingSpaces.split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count == 2, let start = minutes(parts[0]), let end = minutes(parts[1]), start != end
    else { return nil }
    return TimeWindow(start: start, end: end)
  }

  private static func minutes(_ text: Substring) -> Int? {
    let pieces = String(text).trimmingSpaces.split(separator: ":", omittingEmptySubsequences: false)
    guard pieces.count == 2, pieces[1].count == 2, let hours = Int(pieces[0]), let mins = Int(pieces[1]),
      (0...24).contains(hours), (0..<60).contains(mins), hours * 60 + mins <= 24 * 60
    else { return nil }
    return hours * 60 + mins
  }

  /// Whether `minute` (minutes after local midnight) is inside the window.
  public func contains(minute: Int) -> Bool {
    start < end ? (minute >= start && minute < end) : (minute >= start || minute < end)
  }

  public var description: String {
    func hhmm(_ m: Int) -> String {
      let h = m / 60
      let r = m % 60
      return (h < 10 ? "0\(h)" : "\(h)") + ":" + (r < 10 ? "0\(r)" : "\(r)")
    }
    return "\(hhmm(start))-\(hhmm(end))"
  }
}

public struct Session: Sendable {
  public var name: String
  public var mark: SourceMark
  public var kind: SessionKind
  public var identifier: String?
  /// Output root, relative to the manifest's folder (or absolute), normalized; "" is the folder itself.
  public var dest: String
  public var timeouts: Timeouts
  public var retry: RetryPolicy
  public var cache: CacheSettings
  public var network: NetworkSettings
  public var headers: [Header]
  public var onFinished: String?
  public var tasks: [TaskEntry]
  /// `insecure: true`: TLS certificates are not verified (a warning says so).
  public var insecure = false
  /// `mirrors:`: URL prefixes whose files other prefixes serve too, as written.
  public var mirrors: [MirrorRule] = []
  /// `tls:`.
  public var tls = TLSSettings()
  /// `refresh:`: when finished downloads are asked again whether they changed.
  public var refresh = RefreshPolicy.never
}

/// When a run asks the server again, with a conditional request, whether a finished download
/// changed (`refresh:`; `run --refresh` does it once for every file).
public enum RefreshPolicy: Sendable, Equatable {
  /// Never: a finished manifest costs no request.
  case never
  /// Every run.
  case always
  /// Once the file was last checked with the server longer ago than this.
  case after(Interval)
}

/// One entry of a session's `mirrors:` map: a download whose URL starts with `prefix` also gets the
/// rest of its URL under each of `mirrors` as a mirror.
public struct MirrorRule: Hashable, Sendable {
  /// An http or https URL ending in `/`.
  public var prefix: String
  /// http or https URLs ending in `/`, in the order to try them.
  public var mirrors: [String]
  public var mark: SourceMark

  public init(prefix: String, mirrors: [String], mark: SourceMark) {
    self.prefix = prefix
    self.mirrors = mirrors
    self.mark = mark
  }
}

extension Session {
  /// The mirror URLs the session's `mirrors:` map gives `url` (as written): the rule with the
  /// longest matching prefix applies, its mirrors in order; [] when none matches.
  public func mirrorURLs(for url: String) -> [String] {
    var best: MirrorRule?
    for rule in mirrors where url.hasPrefix(rule.prefix) {
      if best.map({ rule.prefix.utf8.count > $0.prefix.utf8.count }) ?? true { best = rule }
    }
    guard let best else { return [] }
    let rest = url.dropFirst(best.prefix.count)
    return best.mirrors.map { $0 + rest }
  }
}

public enum TaskKind: String, CaseIterable, Sendable {
  case data
  case download
  case upload
}

public enum Priority: String, CaseIterable, Sendable, Comparable {
  case high
  case normal
  case low

  /// 0 for high, 2 for low: the order the scheduler serves them in.
  public var rank: Int {
    switch self {
    case .high: return 0
    case .normal: return 1
    case .low: return 2
    }
  }

  public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rank < rhs.rank }
}

/// `become_download`: turn a data task into a download when the response matches.
public struct BecomeDownload: Hashable, Sendable {
  public var contentTypes: [String]
  public var largerThan: Int64?
}

/// One field of a multipart form; a value starting with `@` names a file.
public struct FormField: Hashable, Sendable {
  public var name: String
  public var value: String
  /// The file, relative to the manifest's folder, when the value was `@path`.
  public var file: String?
}

/// A reference in `after:`.
public struct TaskReference: Hashable, Sendable {
  public var id: String
  public var mark: SourceMark
}

/// A `data:`, `download:` or `upload:` task.
public struct TaskSpec: Sendable {
  public var kind: TaskKind
  public var mark: SourceMark
  public var url: String
  public var urlMark: SourceMark
  public var id: String?
  public var idMark: SourceMark?
  /// Destination relative to the session's `dest`, as written.
  public var to: String?
  public var toMark: SourceMark?
  public var method: String
  public var headers: [Header]
  public var body: String?
  /// Paths relative to the manifest's folder.
  public var bodyFile: String?
  public var from: String?
  public var form: [FormField]
  public var sha256: String?
  public var size: Int64?
  public var priority: Priority
  public var after: [TaskReference]
  public var becomeDownload: BecomeDownload?
  /// `mirrors:` of a download: other URLs serving the same bytes, in the order to try them after
  /// `url`; none repeats `url` or another mirror.
  public var mirrors: [MirrorURL] = []
  /// `segments:` of a download; nil takes the session's `network.segments`.
  public var segments: Int?
}

/// One URL of a task's `mirrors:` list, after `${VAR}` expansion, with the headers the manifest
/// gives that mirror alone (`{url: ..., headers: {...}}`): they go to its origin only, beside the
/// session's and the task's (those of another origin without their secrets).
public struct MirrorURL: Hashable, Sendable {
  public var url: String
  public var mark: SourceMark
  public var headers: [Header] = []

  public init(url: String, mark: SourceMark, headers: [Header] = []) {
    self.url = url
    self.mark = mark
    self.headers = headers
  }
}

/// A `list:` entry: one task per line of a file of URLs.
public struct ListSpec: Sendable {
  public var mark: SourceMark
  /// The list file, relative to the manifest's folder.
  public var file: String
  public var fileMark: SourceMark
  public var kind: TaskKind
  /// Folder, relative to the session's `dest`, that the lines' destinations are relative to.
  public var to: String?
  public var toMark: SourceMark?
  public var method: String
  public var headers: [Header]
  public var priority: Priority
  public var after: [TaskReference]
}

/// What `list:` and `metalink:` entries share: a folder `to`, headers, priority and `after`.
protocol FolderEntrySpec {
  var to: String? { get set }
  var toMark: SourceMark? { get set }
  var headers: [Header] { get set }
  var priority: Priority { get set }
  var after: [TaskReference] { get set }
}

extension ListSpec: FolderEntrySpec {}
extension MetalinkSpec: FolderEntrySpec {}

/// A `metalink:` entry: one download per `<file>` of a Metalink document.
public struct MetalinkSpec: Sendable {
  public var mark: SourceMark
  /// The document: a path relative to the manifest's folder, or an http or https URL.
  public var document: String
  public var documentMark: SourceMark
  /// True when `document` is a URL (it starts with `http://` or `https://`).
  public var isURL: Bool
  /// Folder, relative to the session's `dest`, that the files' names are relative to.
  public var to: String?
  public var toMark: SourceMark?
  public var headers: [Header]
  public var priority: Priority
  public var after: [TaskReference]
}

public enum TaskEntry: Sendable {
  case task(TaskSpec)
  case list(ListSpec)
  case metalink(MetalinkSpec)

  public var mark: SourceMark {
    switch self {
    case .task(let spec): return spec.mark
    case .list(let spec): return spec.mark
    case .metalink(let spec): return spec.mark
    }
  }
}
