import BatchDLManifest
import BatchDLSupport
import BatchDLTransfer

/// The identity of a request: the first 128 bits of the SHA-256 of its session kind, method,
/// normalized URL, effective headers and body.
public struct RequestKey: Hashable, Sendable, Comparable, CustomStringConvertible {
  public var high: UInt64
  public var low: UInt64

  public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }

  /// 32 lower-case hexadecimal digits.
  public var description: String {
    withBytes { hexDigits($0) }
  }

  /// Calls `body` with the key's 16 bytes, in the order its digits are written.
  package func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
    withUnsafeBytes(of: (high.bigEndian, low.bigEndian), body)
  }

  /// The first 12 digits, enough to tell requests apart in a listing.
  public var short: String { String(description.prefix(12)) }

  public static func < (lhs: RequestKey, rhs: RequestKey) -> Bool {
    (lhs.high, lhs.low) < (rhs.high, rhs.low)
  }
}

/// Where a planned task was declared: a task entry of a session, and for `list:` entries the line.
public struct TaskOrigin: Hashable, Sendable {
  public var session: Int
  public var entry: Int
}

/// One task after `list:` expansion.
public struct PlannedTask: Sendable {
  /// Index into `Manifest.sessions`.
  public var session: Int32
  /// Index into that session's `tasks`.
  public var entry: Int32
  /// Line in the `list:` file, or 0 for a task declared in the manifest.
  public var line: Int32
  public var kind: TaskKind
  /// Index into `Plan.requests` (scheduled order).
  public var request: Int32
  /// The next task that shares this task's request, or -1.
  public var nextSharing: Int32
  /// In `Plan.text`; read with `Plan.id(of:)`.
  public var id: TextRef
  /// The URL as written, after `${VAR}` expansion; read with `Plan.url(of:)`.
  public var url: TextRef
  /// The destination relative to the manifest's folder (or absolute), or `.none` for a data task
  /// without `to:`; read with `Plan.destination(of:)`.
  public var to: TextRef
  /// Index into `Plan.expectations` for a task whose size and digest come from a document (a
  /// Metalink file), or -1: a task declared in the manifest keeps its own `size:` and `sha256:`.
  public var expectation: Int32 = -1
}

/// What a download must be for its file to be put in place: its length and its digest.
public struct TaskExpectation: Hashable, Sendable {
  public var size: Int64?
  public var digest: ExpectedDigest?
  /// A Metalink file's piece digests: checked piece by piece when the whole file's digest fails.
  public var pieces: MetalinkPieces?
  /// The digests of the other algorithms the checksum files give for the file (`digest` is the
  /// one preferred): each is checked on the finished file too, before it is put in place.
  public var otherDigests: [ExpectedDigest] = []
  /// The file's own detached signature (`signature: sidecar`): checked with gpgv on the finished
  /// file, before it is put in place.
  public var signature: SignaturePin?

  public init(size: Int64? = nil, digest: ExpectedDigest? = nil, pieces: MetalinkPieces? = nil) {
    self.size = size
    self.digest = digest
    self.pieces = pieces
  }

  /// The expected SHA-256 (what every download computes as it goes), when that is the digest.
  public var sha256: String? { digest?.algorithm == .sha256 ? digest?.hex : nil }

  public var isEmpty: Bool {
    size == nil && digest == nil && pieces == nil && otherDigests.isEmpty && signature == nil
  }
}

/// What became of a document a `metalink:` entry names by URL, fetched before planning.
public enum DescriptorOutcome: String, Sendable {
  /// Fetched now (a new or changed copy, stored in the state folder).
  case fetched
  /// The server answered 304 to the conditional request: the stored copy is current.
  case notModified = "not-modified"
  /// The stored copy was used without asking (`validate`, `plan --offline`), or because the server
  /// could not be reached.
  case storedCopy = "stored-copy"
  /// Neither fetched nor stored, or not a usable document: the entry's tasks fail with `descriptor`.
  /// Also a document upstream did not give (refused, 5xx...) whose stored copy stands in: it
  /// still plans the tasks it lists, but the run fails (`FetchedDocument.body` is the copy).
  case failed
  /// Not fetched (`validate`, `plan --offline`) and no stored copy: the entry lists no tasks.
  case missing
}

/// A document fetched before planning, as the plan and the report show it.
public struct PlannedDescriptor: Sendable {
  public var session: Int32
  public var entry: Int32
  /// The URL, user-info and secrets masked.
  public var url: String
  public var outcome: DescriptorOutcome
  /// SHA-256 of the document's bytes, when there were any.
  public var sha256: String?
  /// Why the entry's tasks fail (`outcome == .failed`), masked.
  public var failure: String?
  /// A task that stands for the entry's unknown files in reports when the document failed; it has
  /// no request (`request == -1`) and is not in `Plan.tasks`.
  public var task: PlannedTask?
}

/// A file of a document that the plan leaves out; see `Plan.refusedFiles`.
public struct RefusedFile: Sendable {
  /// Stands for the file in reports: no request (`request == -1`), no destination.
  public var task: PlannedTask
  public var code: FailureCode
  /// Why, masked.
  public var message: String
}

/// One request to send: the tasks that share it, in scheduled order.
public struct PlannedRequest: Sendable {
  public var key: RequestKey
  public var method: String
  /// The normalized URL, in `Plan.text` (secrets included: mask it with `Redactor.url` before
  /// printing).
  public var url: TextRef
  /// Index into `Plan.hosts`.
  public var host: Int32
  /// The session of the first task that asked for this request; its settings apply.
  public var session: Int32
  public var priority: Priority
  /// The first task in manifest order that asked for it.
  public var firstTask: Int32
  public var taskCount: Int32
  /// Requests (indices into `Plan.requests`) that must complete first.
  public var dependencies: [Int32]
  /// The key that decides the shard: the smallest key of the requests joined to this one by `after:`
  /// that wait for nothing themselves.
  public var shardKey: RequestKey
  /// Other URLs serving the same bytes (normalized, in `Plan.text`), in the order to try them after
  /// `url`: the tasks' `mirrors:` and their sessions' `mirrors:` maps.
  public var mirrors: [TextRef] = []
}

/// What `plan` and `run` work from: every task once, every request once, in the order to send them.
public struct Plan: Sendable {
  public var manifest: Manifest
  /// Storage of the tasks' and requests' URLs, ids and destinations.
  public var text: TextArena
  /// Tasks in manifest order (list lines in file order).
  public var tasks: [PlannedTask]
  /// Requests in the order they were first asked for.
  public var requests: [PlannedRequest]
  /// Indices into `requests` in the order to send them: `after:` first, then priority, then
  /// round-robin across hosts.
  public var order: [Int32]
  /// Host names with non-default ports, as per-host caps count them.
  public var hosts: [String]
  /// Tasks that repeated an earlier task exactly and were merged into it.
  public var mergedDuplicates: Int
  public var warnings: [Diagnostic]
  /// Sizes and digests of tasks whose documents give them (`PlannedTask.expectation`).
  public var expectations: [TaskExpectation] = []
  /// Documents given by URL (`metalink:`), in manifest order.
  public var descriptors: [PlannedDescriptor] = []
  /// Files of documents that were left out: a name that is refused (`unsafe-path`), a `<file>`
  /// the document gets wrong (`descriptor`), a destination that clashes with another task's
  /// (`conflict`). Each fails in the run as one task, its id the document and the name
  /// (`DOCUMENT#NAME`); it has no request and is not in `tasks`.
  public var refusedFiles: [RefusedFile] = []
  /// Requests whose tasks wait (`after:`) for an id no task has, where a document decides which
  /// ids there are (a failed document left the plan without its files; a listing or Metalink
  /// document that does not name it): the id, and why (`the document URL, which may have listed
  /// it, failed`). They fail with `dependency` instead of running, and so does whatever waits for
  /// them: a document from the network never makes the manifest invalid.
  public var unresolvedAfter: [Int32: (id: String, why: String)] = [:]
  /// Requests that fail before they are sent, and why: a download covered by `checksums:` whose
  /// checksum file has no entry for it (`checksum-missing`), cannot be read (`descriptor`) or is
  /// not signed as `keyring:` requires (`signature`). Whatever waits for them fails with
  /// `dependency`.
  public var refusedRequests: [Int32: DocumentFailure] = [:]
  /// Requests fetched without an upstream digest although `checksums:` covers them (`unlisted:
  /// fetch`): their tasks are reported `"verified": false`.
  public var unverifiedRequests: Set<Int32> = []
  /// Downloads covered by `checksums: sidecar` whose sidecars the descriptors did not hold: the
  /// command fetches them and plans again (`SidecarWant`).
  public var wantedSidecars: [SidecarWant] = []
  /// Publish order, over the whole manifest: a request that mirrors a document (a checksum file,
  /// its signature, an index page) → the requests of the files the document covers. It is placed
  /// only after them, and only when none of them failed in the run (`Publication`).
  public var publishedAfter: [Int32: [Int32]] = [:]
  /// Destinations (bytes, in the form of `PlannedTask.to`) no task names that prune keeps all the
  /// same, with the time (seconds since 1970) each may go: an `apt:` entry's pool files upstream
  /// removed less than `keep_removed` ago.
  public var keptFromPrune: [[UInt8]: Int64] = [:]
  /// The documents of `apt:` entries with their verdicts and the files each adds (`plan`).
  public var repositoryChain: [RepositoryChainLine] = []
  /// Requests placed together or not at all (an APT suite's index files and roots), and the
  /// group of each member request.
  public var publishGroups: [PublishGroup] = []
  public var publishGroupOfRequest: [Int32: Int32] = [:]
  /// Each session's `dest` as an absolute, normalized folder (`absoluteDest(of:)`).
  public var sessionRoots: [String] = []
  /// The sizes listings (`index:`) give their files, by request: what `plan`'s totals, the progress
  /// and preallocation expect when nothing pins a size; a file of another size is no error.
  public var listedSizes: [Int32: ListedFileSize] = [:]
  /// Requests sent for the documents fetched before planning (`DescriptorSet.requestsSent`).
  public var descriptorRequests = 0
  /// Of `descriptorRequests`, by session index.
  public var descriptorRequestsPerSession: [Int: Int] = [:]
  /// Each session's `partial_dir:` as an absolute, normalized folder; nil: beside each destination.
  public var partialFolders: [String?] = []

  /// The size and digest a download must have, wherever they were written: the task's `size:` and
  /// `sha256:`, or its Metalink `<size>` and `<hash>`. Nil when nothing is expected.
  public func expectation(of task: PlannedTask) -> TaskExpectation? {
    if task.expectation >= 0 { return expectations[Int(task.expectation)] }
    guard case .task(let spec) = entry(of: task), spec.size != nil || spec.sha256 != nil || spec.sha512 != nil
    else { return nil }
    let digest =
      spec.sha256.map { ExpectedDigest(algorithm: .sha256, hex: $0.lowercased()) }
      ?? spec.sha512.map { ExpectedDigest(algorithm: .sha512, hex: $0.lowercased()) }
    return TaskExpectation(size: spec.size, digest: digest)
  }

  /// The `max_size` a task's response may not pass: the entry's, else its session's; nil for none.
  public func maxSize(of task: PlannedTask) -> Int64? {
    entry(of: task).maxSize ?? manifest.sessions[Int(task.session)].maxSize
  }

  /// The `max_size` a request's transfer keeps to: the largest of its tasks' (each task is held to
  /// its own when the body is placed); nil when one of them has none.
  public func maxSize(of request: PlannedRequest) -> Int64? {
    var largest: Int64 = 0
    for task in tasks(of: request) {
      guard let limit = maxSize(of: task) else { return nil }
      largest = max(largest, limit)
    }
    return largest
  }

  /// The tasks sharing `request`, in manifest order: a walk along the plan's chain of them, not
  /// an array (a run asks for the tasks of each request some six times).
  public func tasks(of request: PlannedRequest) -> SharingTasks {
    SharingTasks(tasks: tasks, first: request.firstTask, count: Int(request.taskCount))
  }

  public func id(of task: PlannedTask) -> String { text.string(task.id) }
  public func url(of task: PlannedTask) -> String { text.string(task.url) }
  public func destination(of task: PlannedTask) -> String? { text.optionalString(task.to) }
  public func url(of request: PlannedRequest) -> String { text.string(request.url) }

  /// The session a request belongs to.
  public func session(of request: PlannedRequest) -> Session { manifest.sessions[Int(request.session)] }

  /// The declaration a task came from.
  public func entry(of task: PlannedTask) -> TaskEntry {
    manifest.sessions[Int(task.session)].tasks[Int(task.entry)]
  }

  /// Whether a task's file takes its `Last-Modified` as its modification time (`preserve_mtime`:
  /// the entry's, else its session's, default true).
  public func preservesModificationTime(of task: PlannedTask) -> Bool {
    entry(of: task).preserveMtime ?? manifest.sessions[Int(task.session)].preserveMtime
  }

  /// The shard of `request` among `count` shards.
  public func shard(of request: PlannedRequest, count: Int) -> Int {
    Shard.bucket(for: request.shardKey, count: count)
  }
}

/// The tasks that share one request, in manifest order (at least one).
public struct SharingTasks: Sequence {
  fileprivate let tasks: [PlannedTask]
  fileprivate let first: Int32
  /// How many there are.
  public let count: Int

  /// The first of them, the one in whose name a request is reported.
  public var firstTask: PlannedTask { tasks[Int(first)] }

  public var underestimatedCount: Int { count }

  public func makeIterator() -> Iterator { Iterator(tasks: tasks, position: first) }

  public struct Iterator: IteratorProtocol {
    fileprivate let tasks: [PlannedTask]
    fileprivate var position: Int32

    public mutating func next() -> PlannedTask? {
      guard position >= 0 else { return nil }
      let task = tasks[Int(position)]
      position = task.nextSharing
      return task
    }
  }
}

/// Requests whose files are placed together, in `members` order, once every one of them has come
/// whole and checked, or none at all (the copies in place stay): an APT suite's index files and
/// then its `Release`, `Release.gpg` and `InRelease`. `removals` (destinations) go once the
/// members are placed: roots upstream no longer publishes, which would contradict the new ones.
public struct PublishGroup: Sendable {
  /// What the group is, for messages (`suite stable of https://…/debian/`).
  public var name: String
  public var members: [Int32]
  public var removals: [String]
  /// The group is not published this run (a file of its suite was left out of the plan): each
  /// member fails before it is placed, and the copies in place stay.
  public var withheld: Bool
  /// Destinations the new roots list but the plan does not keep (an architecture dropped from
  /// the manifest): once the members are placed, a copy an earlier run of this manifest placed
  /// there, and no task names, goes (it would not match the new roots).
  public var retired: [String] = []

  public init(name: String, members: [Int32], removals: [String], withheld: Bool) {
    self.name = name
    self.members = members
    self.removals = removals
    self.withheld = withheld
  }
}
