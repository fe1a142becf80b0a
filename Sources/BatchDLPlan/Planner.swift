import BatchDLManifest
import BatchDLSupport
import Crypto

/// Expands `list:` files, normalizes URLs, deduplicates identical requests and orders them.
///
/// It checks everything that needs the whole task list: destinations written by two different
/// requests, ids, `after:` references and cycles. It never touches the network.
public struct Planner {
  /// Problems reported per `list:` file before the rest are only counted.
  public var maxProblemsPerList = 50

  public init() {}

  /// Plans `manifest`; `warnings` (the loader's diagnostics) are carried into the plan or the error
  /// alongside the planner's own. When they hold errors, the manifest is partial (tasks with
  /// problems were left out), so references to unknown ids are not reported again.
  ///
  /// `descriptors` holds the documents that `metalink:` entries name by URL (fetched or stored by
  /// the command); without one, such an entry lists no tasks, with a warning.
  ///
  /// `stateFolder`: the state folder the command uses (absolute), which no destination may name;
  /// the default one beside the manifest is never a destination either. `outputs`: the files the
  /// command writes besides destinations (`run --report`...), which no document's file may name.
  public func plan(
    _ manifest: Manifest, warnings: [Diagnostic] = [], descriptors: DescriptorSet? = nil, stateFolder: String? = nil,
    outputs: [String] = []
  ) throws(ManifestError) -> Plan {
    var clashes: [DocumentFile: String] = [:]
    var several: [String: Set<Int32>] = [:]
    var builder: PlanBuilder
    // A document's file whose destination clashes with another task's is left out, and the plan
    // made again without it (taking files out makes no new clash: twice at most). A bare name of a
    // checksum file matched while one covered file had it, that a later covered file has too, is
    // known to the plan made again (each time one more such name at least: bounded by the names).
    repeat {
      builder = PlanBuilder(manifest: manifest, maxProblemsPerList: maxProblemsPerList)
      builder.reserved = ReservedPaths(manifest: manifest, stateFolder: stateFolder, outputs: outputs)
      builder.form = DestinationForm(manifestDirectory: manifest.absoluteDirectory)
      builder.descriptorSet = descriptors
      builder.partial = warnings.contains { $0.severity == .error }
      builder.clashingFiles = clashes
      builder.knownSeveral = several
      builder.expandAll()
      let stale = builder.staleChecksumNames
      builder.checkIDs()
      builder.checkFolders()
      let found = builder.newClashes.filter { clashes[$0.key] == nil }
      if found.isEmpty && stale.isEmpty { break }
      clashes.merge(found) { first, _ in first }
      several.merge(stale) { $0.union($1) }
    } while true
    builder.recordUnusedChecksumFiles()
    builder.resolveAfter()
    builder.checkPublishCycles()
    let order = builder.diagnostics.hasErrors ? [] : builder.schedule()
    builder.assignShardKeys()
    var all = Diagnostics()
    all.append(contentsOf: warnings)
    // The planner's messages quote ids, URLs and list lines: mask user-info and secrets in them
    // (the loader's are masked already).
    all.append(contentsOf: builder.diagnostics.items.map(builder.redactor.diagnostic))
    if all.hasErrors { throw ManifestError(diagnostics: all.sorted) }
    var plan = Plan(
      manifest: manifest, text: builder.text, tasks: builder.tasks, requests: builder.requests, order: order,
      hosts: builder.hosts, mergedDuplicates: builder.merged, warnings: all.sorted, expectations: builder.expectations,
      descriptors: builder.descriptors, refusedFiles: builder.refusedFiles, unresolvedAfter: builder.unresolvedAfter,
      refusedRequests: builder.refusedRequests, publishedAfter: builder.publishWaits.mapValues { $0.sorted() })
    plan.descriptorRequests = descriptors?.requestsSent ?? 0
    plan.descriptorRequestsPerSession = descriptors?.requestsPerSession ?? [:]
    plan.listedSizes = builder.listedSizes
    plan.sessionRoots = manifest.sessions.map { plan.sessionRoot(dest: $0.dest) }
    plan.partialFolders = manifest.sessions.indices.map { plan.partialFolder(session: $0) }
    plan.unverifiedRequests = builder.unverifiedRequests
    plan.wantedSidecars = builder.wantedSidecars
    plan.keptFromPrune = builder.keptFromPrune
    plan.repositoryChain = builder.repositoryChain
    plan.publishGroups = builder.publishGroups
    for (number, group) in builder.publishGroups.enumerated() {
      for member in group.members { plan.publishGroupOfRequest[member] = Int32(number) }
    }
    return plan
  }
}

/// One plan in the making: everything the planner has found so far. Its work is split by what each
/// part decides: request identity, list and Metalink expansion, mirrors, destinations, request
/// sharing, ids and `after:`, and scheduling.
package struct PlanBuilder {
  package let manifest: Manifest
  package let maxProblemsPerList: Int
  package let normalizer = URLNormalizer()
  package let redactor: Redactor
  package var diagnostics = Diagnostics()
  package var text = TextArena()
  package var tasks: [PlannedTask] = []
  package var requests: [PlannedRequest] = []
  package var lastSharing: [Int32] = []
  /// The last `to` normalized, and what it became: every line of a list shares its entry's folder.
  package var lastTo: (text: String, normalized: RelativeDestination)?
  /// Requests by key.
  package var requestIndex = IndexTable()
  /// The request of each expected content (downloads with `sha256:`).
  package var contentRequests: [ContentName: Int32] = [:]
  /// Tasks by destination.
  package var destinations = IndexTable()
  /// The mirrors of each request with more than `unindexedMirrors` of them, by their bytes.
  package var mirrorIndex: [Int32: IndexTable] = [:]
  /// Explicit ids, the URL ids of data tasks without `to:` and the relative ids under an absolute
  /// `dest`, by their bytes (an id spelled in NFC and one in NFD are two ids, as two file names are).
  package var namedIDs: [ByteString: Int32] = [:]
  package var explicitIDs: [(task: Int32, mark: SourceMark)] = []
  package var hosts: [String] = []
  package var hostIndex: [String: Int32] = [:]
  /// The host of the last request added (-1 before the first).
  package var lastHost: Int32 = -1
  package var afterRefs: [(task: Int32, refs: [TaskReference])] = []
  /// See `Plan.unresolvedAfter`.
  package var unresolvedAfter: [Int32: (id: String, why: String)] = [:]
  /// Documents' files left out of this plan because they clashed in an earlier one, and why.
  package var clashingFiles: [DocumentFile: String] = [:]
  /// Documents' files found clashing in this plan, and why: the plan is made again without them.
  package var newClashes: [DocumentFile: String] = [:]
  /// The document's file each task comes from, for tasks listed by a document.
  package var documentFileOfTask: [Int32: DocumentFile] = [:]
  /// See `Plan.refusedFiles`.
  package var refusedFiles: [RefusedFile] = []
  /// Each session's absolute `dest` with a final `/` (nil for a relative one), made when first asked.
  package var destPrefixes: [[UInt8]?]?
  package var refusedIDs = Set<String>()
  package var resolvedAfter: [Int32: [(task: Int32, ref: TaskReference)]] = [:]
  package var merged = 0
  /// The manifest had errors already: some tasks are missing, so unknown ids are expected.
  package var partial = false
  /// Documents fetched before planning (`metalink:` by URL).
  package var descriptorSet: DescriptorSet?
  /// The files batchdl reads or keeps, which no destination may name.
  package var reserved = ReservedPaths()
  /// Sizes and digests from documents, and the documents given by URL.
  package var expectations: [TaskExpectation] = []
  /// The sizes listings give their files, by request (`Plan.listedSizes`).
  package var listedSizes: [Int32: ListedFileSize] = [:]
  package var descriptors: [PlannedDescriptor] = []

  /// Set by `expandLine` (and `add`) when the line being read has a problem, reported or not: the
  /// list's count of problem lines goes on past the ones it lists.
  package var lineHadProblem = false

  /// The destination `resolveDestination` resolved last, relative to its session's `dest`.
  package var lastRelative = ""
  /// Requests that fail before anything is sent (see `Plan.refusedRequests`).
  package var refusedRequests: [Int32: DocumentFailure] = [:]
  /// Checksum files and signatures recorded in `descriptors` already, by key.
  package var recordedDocuments = Set<String>()
  /// The requests of the files each descriptor covers (checksum files and signatures by their
  /// normalized URL, indexes by their folder URL), over the whole manifest: a task of any session
  /// that mirrors one is placed after them.
  package var coveredByDocument: [String: [Int32]] = [:]
  /// What a download of a document read before planning must be, by normalized URL, over the
  /// whole manifest: the bytes the plan read (a checksum file's or signature's, an index page's
  /// SHA-256), or the document's failure (`orderPublishing`).
  package var documentPins: [String: ChecksumVerdict] = [:]
  /// The waits `orderPublishing` added (request → the requests it waits for): they order a shard's
  /// work but do not join requests into one shard.
  package var publishWaits: [Int32: Set<Int32>] = [:]
  /// See `Plan.keptFromPrune`.
  package var keptFromPrune: [[UInt8]: Int64] = [:]
  /// See `Plan.repositoryChain`.
  package var repositoryChain: [RepositoryChainLine] = []
  /// See `Plan.publishGroups`.
  package var publishGroups: [PublishGroup] = []
  /// The documents (normalized URLs) the last `checksumVerdict` consulted.
  package var lastCoverage: [String] = []
  /// Memos of `documentKey` and `checksumKey`.
  package var documentKeys: [String: String] = [:]
  /// A document's URL after redirects → its URL as written (`noteFinalURL`).
  package var documentAliases: [String: String] = [:]
  /// Checksum files and signatures whose downloads are not published this run, and why
  /// (`blockPublication`).
  package var blockedDocuments: [String: String] = [:]
  package var checksumKeys: [String: String] = [:]
  package var folderPrefixes: [String: String?] = [:]
  /// Checksum files warned about for a weak digest.
  package var weakWarned = Set<String>()
  /// What each checksum file (by key) covers and matches (`ChecksumMatcher`).
  package var checksumMatchers: [String: ChecksumMatcher] = [:]
  /// Bare names of checksum files (by key) that an earlier plan found several covered files have.
  package var knownSeveral: [String: Set<Int32>] = [:]
  /// See `Plan.unverifiedRequests` and `Plan.wantedSidecars`.
  package var unverifiedRequests: Set<Int32> = []
  package var wantedSidecars: [SidecarWant] = []
  package var wantedSidecarKeys = Set<String>()
  /// The signature the last `checksumVerdict` found for the file (`signature: sidecar`).
  package var lastSignature: SignaturePin?
  /// The `checksums:` that cover the lines of the `list:` entry being expanded.
  package var listChecksums: ChecksumSpec?

  /// The form destinations take in this plan (set when the plan starts).
  package var form = DestinationForm()

  package init(manifest: Manifest, maxProblemsPerList: Int) {
    self.manifest = manifest
    self.maxProblemsPerList = maxProblemsPerList
    self.redactor = Redactor(secrets: manifest.secrets)
  }
}

/// Expansion: every entry of every session becomes tasks.
extension PlanBuilder {
  package mutating func expandAll() {
    for (sessionIndex, session) in manifest.sessions.enumerated() {
      for (entryIndex, entry) in session.tasks.enumerated() {
        switch entry {
        case .task(let spec):
          expand(spec, session: session, sessionIndex: sessionIndex, entryIndex: entryIndex)
        case .list(let spec):
          expand(spec, session: session, sessionIndex: sessionIndex, entryIndex: entryIndex)
        case .metalink(let spec):
          expand(spec, session: session, sessionIndex: sessionIndex, entryIndex: entryIndex)
        case .index(let spec):
          expand(spec, session: session, sessionIndex: sessionIndex, entryIndex: entryIndex)
        case .apt(let spec):
          expand(spec, session: session, sessionIndex: sessionIndex, entryIndex: entryIndex)
        }
      }
    }
    orderPublishing()
  }

  package mutating func expand(_ spec: TaskSpec, session: Session, sessionIndex: Int, entryIndex: Int) {
    // A task's own credentials replace its session's: its requests are made as that user.
    var session = session
    if spec.auth != nil || spec.awsSigV4 != nil {
      session.access.auth = spec.auth
      session.access.awsSigV4 = spec.awsSigV4
    }
    let context = context(
      session: session, sessionIndex: sessionIndex, entryIndex: entryIndex, kind: spec.kind, method: spec.method,
      headers: spec.headers, body: bodyIdentity(spec), priority: spec.priority)
    let normalized: NormalizedURL
    switch normalizer.normalize(spec.url) {
    case .success(let value): normalized = value
    case .failure(let problem):
      diagnostics.error(spec.urlMark, problem.description)
      return
    }
    // Where the file goes: `to:` (a trailing `/` names a folder), else the URL's last segment.
    var destination: String?
    let needsFile = spec.kind == .download || spec.to != nil || spec.becomeDownload != nil
    if needsFile {
      let mark = spec.toMark ?? spec.urlMark
      destination = resolveDestination(
        session: session, to: spec.to, isFolder: spec.to?.hasSuffix("/") ?? false, url: normalized, mark: mark)
      if destination == nil { return }
    }
    let urlRef = text.append(spec.url)
    let toRef = destination.map { text.append($0) } ?? .none
    var idRef = toRef
    if let id = spec.id {
      idRef = text.append(id)
    } else if destination == nil {
      idRef = text.append(redactor.url(spec.url))
    }
    var mirrors: [NormalizedURL] = []
    if spec.kind == .download {
      let written =
        spec.mirrors.map { ($0.url, $0.mark) } + session.mirrorURLs(for: spec.url).map { ($0, spec.urlMark) }
      for (url, mark) in written {
        switch normalizer.normalize(url) {
        case .success(let value): mirrors.append(value)
        case .failure(let problem): diagnostics.error(mark, "mirror: \(problem.description)")
        }
      }
    }
    var verdict = ChecksumVerdict.none
    var salted = context
    if spec.kind == .download, destination != nil {
      verdict = checksumVerdict(
        spec.checksums ?? session.checksums, url: normalized, relative: lastRelative, session: session,
        sessionIndex: sessionIndex, entryIndex: entryIndex, ownDigest: spec.sha256 != nil || spec.sha512 != nil)
      // `unlisted: skip`: a file no checksum entry names is left out.
      if verdict == .skip { return }
      if let salt = identitySalt(of: verdict) { salted.prefix.update(data: Array(salt.utf8)) }
    }
    if let sha512 = spec.sha512 {
      // The state records a file's SHA-256 alone: a changed `sha512:` pin is a request of its own,
      // so that the task runs again (as a checksum file's SHA-512 does).
      salted.prefix.update(data: Array("expected:sha-512:\(sha512)\n".utf8))
    }
    let before = tasks.count
    let task = add(
      context: salted, normalized: normalized, urlRef: urlRef, toRef: toRef, idRef: idRef, line: 0,
      mark: spec.mark, explicitID: spec.id != nil, mirrors: mirrors,
      content: spec.kind == .download && spec.method == "GET" ? spec.sha256?.lowercased() ?? content(of: verdict) : nil)
    apply(verdict, to: task, before: before, size: spec.size)
    if let task {
      if spec.id != nil, let mark = spec.idMark { explicitIDs.append((task, mark)) }
      if !spec.after.isEmpty { afterRefs.append((task, spec.after)) }
    }
  }
}
