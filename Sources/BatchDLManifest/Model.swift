import BatchDLSupport
import BatchDLTransfer
import Foundation

/// A manifest, read and checked: every default applied, every `${VAR}` expanded.
public struct Manifest: Sendable {
  /// The manifest's path as the user gave it.
  public var path: String
  /// The file the path names, through symbolic links (the path itself when it is none): its
  /// folder is the manifest's folder and its name keys the manifest's state, so that a link to a
  /// manifest is that manifest (one lock, one state, one set of destinations).
  public var resolvedPath: String
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
  /// `report_history`: how many run reports the state folder keeps (`report show`, `report diff
  /// MANIFEST`).
  public var reportHistory = Manifest.defaultReportHistory

  /// Run reports kept when the manifest does not say.
  public static let defaultReportHistory = 10
  /// The most `report_history` may keep.
  public static let maxReportHistory = 10_000

  public init(path: String, directory: String, version: Int, sessions: [Session], secrets: [Secret]) {
    self.path = path
    resolvedPath = path
    self.directory = directory
    absoluteDirectory = Self.absolute(directory: directory)
    self.version = version
    self.sessions = sessions
    self.secrets = secrets
  }

  /// A manifest's folder as an absolute path, against the working directory.
  package static func absolute(directory: String) -> String {
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

public struct CacheSettings: Hashable, Sendable {
  public var policy: CachePolicy
  public var memory: Int64
  public var disk: Int64
}

/// Bounds of the source keys.
extension Limits {
  /// `segments` (session and task): connections for one download.
  public static let segments = 64
  /// `network.min_segment_size`: from 1KB.
  public static let minSegmentSize: Int64 = 1 << 10
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
  /// `preserve_mtime:`: a placed file takes its `Last-Modified` as its modification time.
  public var preserveMtime = true
  /// `max_size:`: a response longer than this fails its tasks with `too-large`; nil: no limit.
  public var maxSize: Int64? = nil
  /// `checksums:` (with `signature:` and `keyring:`) on the session: covers its downloads whose
  /// entry gives none of its own.
  public var checksums: ChecksumSpec?
  /// `prune:`: remove files earlier runs placed under `dest` that no task names any more.
  public var prune: PruneSettings? = nil
  /// `partial_dir:`: the folder partial files live in (absolute, or relative to `dest`), as
  /// normalized; nil: beside each destination.
  public var partialDir: String? = nil
  /// `auth`, `netrc`, `proxy`, `no_proxy`, `aws_sigv4`: how its requests are let in.
  public var access = AccessSettings()
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
  /// `preserve_mtime:` of the entry; nil: the session's.
  public var preserveMtime: Bool? = nil
  public var becomeDownload: BecomeDownload?
  /// `mirrors:` of a download: other URLs serving the same bytes, in the order to try them after
  /// `url`; none repeats `url` or another mirror.
  public var mirrors: [MirrorURL] = []
  /// `segments:` of a download; nil takes the session's `network.segments`.
  public var segments: Int?
  /// `sha512:`, lower-case hex: the expected SHA-512, like `sha256` (one of the two at most).
  public var sha512: String? = nil
  /// `max_size:` of the task; nil: the session's.
  public var maxSize: Int64? = nil
  /// The task's own `auth:`, in place of its session's (and of its `aws_sigv4:`).
  public var auth: Credentials? = nil
  /// The task's own `aws_sigv4:`, in place of its session's (and of its `auth:`).
  public var awsSigV4: AWSSigV4Settings? = nil
  /// The task's own `checksums:` (download tasks), in place of its session's.
  public var checksums: ChecksumSpec?
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
  /// `preserve_mtime:` of the entry; nil: the session's.
  public var preserveMtime: Bool? = nil
  /// `max_size:` of the entry's tasks; nil: the session's.
  public var maxSize: Int64? = nil
  /// The entry's own `checksums:`, in place of its session's.
  public var checksums: ChecksumSpec?
}

/// What `list:` and `metalink:` entries share: a folder `to`, headers, priority and `after`.
package protocol FolderEntrySpec {
  var to: String? { get set }
  var toMark: SourceMark? { get set }
  var headers: [Header] { get set }
  var priority: Priority { get set }
  var after: [TaskReference] { get set }
  var preserveMtime: Bool? { get set }
}

extension ListSpec: FolderEntrySpec {}
extension MetalinkSpec: FolderEntrySpec {}
extension IndexSpec: FolderEntrySpec {}

/// One checksum file of a `checksums:` key: a path (relative to the manifest's folder) or an http
/// or https URL, and its detached signature when one is given.
public struct ChecksumSource: Hashable, Sendable {
  public var location: String
  public var isURL: Bool
  public var mark: SourceMark
  /// `signature:` (path or URL) of this file; nil for none (or a clear-signed file).
  public var signature: String?
  public var signatureIsURL = false
  public var signatureMark: SourceMark?

  public init(location: String, isURL: Bool, mark: SourceMark) {
    self.location = location
    self.isURL = isURL
    self.mark = mark
  }
}

/// `checksums:`, `signature:` and `keyring:` at one level (session, task, `list:` or `index:`):
/// the checksum files whose entries the covered downloads are checked with, and the OpenPGP
/// keyring that must have signed them. With a keyring, every file must be signed: by its
/// `signature:`, or by a clear-signature of its own.
public struct ChecksumSpec: Hashable, Sendable {
  public var files: [ChecksumSource]
  /// The keyring's path as written (relative to the manifest's folder, or absolute).
  public var keyring: String?
  public var keyringMark: SourceMark?
  public var mark: SourceMark
  /// `unlisted:`: what a covered file no entry names gets.
  public var unlisted = UnlistedFiles.fail
  /// `checksums: sidecar`: each file is checked against its own `NAME.sha256` or `NAME.sha512`
  /// (`files` is then empty).
  public var sidecar = false
  /// `signature: sidecar` (with `checksums: sidecar` and `keyring:`): each file is checked against
  /// its own detached `NAME.asc` or `NAME.sig`.
  public var signatureSidecar = false

  public init(files: [ChecksumSource], keyring: String? = nil, keyringMark: SourceMark? = nil, mark: SourceMark) {
    self.files = files
    self.keyring = keyring
    self.keyringMark = keyringMark
    self.mark = mark
  }
}

/// An `index:` entry: the files a server's directory listing shows under a folder URL, each a
/// download at `to/` + its path relative to that folder.
public struct IndexSpec: Sendable {
  public var mark: SourceMark
  /// The folder's URL, ending with `/`.
  public var url: String
  public var urlMark: SourceMark
  public var include: [String] = []
  public var exclude: [String] = []
  /// `1`: the folder itself; `2`: and the folders it lists; ...
  public var depth = 1
  public var to: String?
  public var toMark: SourceMark?
  public var headers: [Header] = []
  public var priority = Priority.normal
  public var after: [TaskReference] = []
  public var preserveMtime: Bool? = nil
  public var checksums: ChecksumSpec?
  /// `max_size:` of the listed files; nil: the session's.
  public var maxSize: Int64? = nil

  public init(mark: SourceMark, url: String, urlMark: SourceMark) {
    self.mark = mark
    self.url = url
    self.urlMark = urlMark
  }
}

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
  /// `preserve_mtime:` of the entry; nil: the session's.
  public var preserveMtime: Bool? = nil
  /// `max_size:` of the entry's files; nil: the session's.
  public var maxSize: Int64? = nil
}

public enum TaskEntry: Sendable {
  case task(TaskSpec)
  case list(ListSpec)
  case metalink(MetalinkSpec)
  case index(IndexSpec)
  case apt(AptSpec)

  public var mark: SourceMark {
    switch self {
    case .task(let spec): return spec.mark
    case .list(let spec): return spec.mark
    case .metalink(let spec): return spec.mark
    case .index(let spec): return spec.mark
    case .apt(let spec): return spec.mark
    }
  }

  /// The entry's own `checksums:` (a Metalink document's files carry their own hashes: none).
  public var checksums: ChecksumSpec? {
    switch self {
    case .task(let spec): return spec.checksums
    case .list(let spec): return spec.checksums
    case .metalink, .apt: return nil
    case .index(let spec): return spec.checksums
    }
  }

  /// The entry's own `max_size:` (nil: its session's).
  public var maxSize: Int64? {
    switch self {
    case .task(let spec): return spec.maxSize
    case .list(let spec): return spec.maxSize
    case .metalink(let spec): return spec.maxSize
    case .index(let spec): return spec.maxSize
    case .apt(let spec): return spec.maxSize
    }
  }

  /// The entry's own `preserve_mtime:` (nil: its session's).
  public var preserveMtime: Bool? {
    switch self {
    case .task(let spec): return spec.preserveMtime
    case .list(let spec): return spec.preserveMtime
    case .metalink(let spec): return spec.preserveMtime
    case .index(let spec): return spec.preserveMtime
    case .apt(let spec): return spec.preserveMtime
    }
  }
}
