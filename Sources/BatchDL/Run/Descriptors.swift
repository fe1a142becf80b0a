import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
import CCurl
import Crypto
import Foundation

/// Whether commands fetch descriptors before planning (`run`, `plan`) or read the stored copies
/// only (`validate`, `plan --offline`, and the commands that only read state).
public enum DescriptorMode: Sendable {
  case fetch
  case stored
}

/// Fetches the documents a manifest's entries depend on, before planning: Metalink documents and
/// checksum files (and their signatures) given by URL, and the folder pages of `index:` entries,
/// level by level. One bounded GET each (a conditional one when the state folder holds an earlier
/// copy), by the transfer engine. Copies are kept in `StateFolder.descriptors`, written
/// atomically; their names and metadata hold the URL with user-info and secrets masked, never a
/// secret. Checksum files are then read (local ones from the manifest's folder), their signatures
/// checked with gpgv when a keyring is given, and parsed.
public enum Descriptors {
  /// The largest Metalink document fetched: what `Metalink` reads.
  public static let maxBytes = Metalink.maxBytes
  /// The longest `ETag` or `Last-Modified` kept with a copy (real ones are well under 100 bytes).
  static let maxValidatorBytes = 8 << 10

  /// Whether `manifest` has entries that need documents before planning.
  public static func needed(by manifest: Manifest) -> Bool {
    manifest.sessions.contains { session in
      session.checksums != nil
        || session.tasks.contains { entry in
          switch entry {
          case .metalink(let spec): return spec.isURL
          case .index: return true
          case .task, .list: return entry.checksums != nil
          }
        }
    }
  }

  /// The documents `manifest` needs, fetched or read from `state`.
  public static func prepare(_ manifest: Manifest, state: StateFolder, mode: DescriptorMode) -> DescriptorSet {
    var fetcher = DocumentFetcher(manifest: manifest, state: state, mode: mode)
    var set = DescriptorSet()
    // Metalink documents, checksum files and signatures by URL, and the first page of each index.
    for (index, session) in manifest.sessions.enumerated() {
      for spec in checksumSpecs(of: session, redactor: fetcher.redactor) {
        for source in spec.specs.files {
          if source.isURL {
            fetcher.want(
              source.location, session: session, sessionIndex: index, headers: spec.headers,
              limit: ChecksumFile.maxBytes, origin: spec.origin)
          }
          if let signature = source.signature, source.signatureIsURL {
            fetcher.want(
              signature, session: session, sessionIndex: index, headers: spec.headers,
              limit: SignatureCheck.maxSignatureBytes, origin: spec.origin)
          }
        }
      }
      for entry in session.tasks {
        switch entry {
        case .metalink(let spec) where spec.isURL:
          fetcher.want(spec.document, session: session, sessionIndex: index, headers: spec.headers, limit: maxBytes)
        case .index(let spec):
          fetcher.want(
            spec.url, session: session, sessionIndex: index, headers: spec.headers,
            limit: DirectoryIndex.maxBytes)
        default: break
        }
      }
    }
    fetcher.fetchWanted()
    set.documents = fetcher.documents
    // Each index, level by level: the pages of one level of every index are fetched together.
    var crawls: [(key: String, spec: IndexSpec, session: Session, sessionIndex: Int, crawl: IndexCrawl)] = []
    var crawlKeys = Set<String>()
    for (index, session) in manifest.sessions.enumerated() {
      for case .index(let spec) in session.tasks {
        let key = DescriptorSet.key(of: spec, for: session, in: manifest)
        guard crawlKeys.insert(key).inserted else { continue }
        crawls.append((key, spec, session, index, IndexCrawl()))
      }
    }
    var pending: [[DirectoryIndex.PendingFolder]] = crawls.map { item in
      DirectoryIndex.nextFolders(indexURL: item.spec.url, fetched: [], depth: item.spec.depth, filter: .init()).next
    }
    while pending.contains(where: { !$0.isEmpty }) {
      for (number, item) in crawls.enumerated() {
        for folder in pending[number] {
          fetcher.want(
            folder.url, session: item.session, sessionIndex: item.sessionIndex,
            headers: item.spec.headers, limit: DirectoryIndex.maxBytes, origin: item.spec.url)
        }
      }
      fetcher.fetchWanted()
      for number in crawls.indices {
        let item = crawls[number]
        for folder in pending[number] {
          let key = DescriptorSet.key(of: folder.url, for: item.session, in: manifest)
          let document = fetcher.documents[key] ?? FetchedDocument(outcome: .missing)
          let masked = fetcher.redactor.url(folder.url)
          var page = ListingPage(
            url: masked, outcome: document.outcome, sha256: document.sha256)
          var listing: DirectoryIndex.Listing?
          if let body = document.body {
            // Links resolve against the page's URL after redirects (a folder on another host).
            let base = document.finalURL.flatMap { $0.hasSuffix("/") ? $0 : nil } ?? folder.url
            let parsed = DirectoryIndex.parse(body, folderURL: base, contentType: document.contentType, display: masked)
            if parsed.isListing {
              // Names the page gets wrong are left out one by one (`leftOut`); the rest is used.
              listing = parsed
            } else {
              let reason = parsed.diagnostics.first { $0.severity == .error }.map { "\($0.mark): \($0.message)" }
              page.outcome = .failed
              page.failure = "cannot read it as a directory listing: \(reason ?? "no listing found")"
            }
          } else if document.outcome != .missing {
            page.failure = document.problem ?? "cannot fetch it"
          }
          crawls[number].crawl.pages.append(page)
          crawls[number].crawl.folders.append(
            DirectoryIndex.FetchedFolder(path: folder.path, url: folder.url, listing: listing))
        }
        if pending[number].isEmpty { continue }
        let step = DirectoryIndex.nextFolders(
          indexURL: item.spec.url, fetched: crawls[number].crawl.folders, depth: item.spec.depth,
          filter: DirectoryIndex.Filter(include: item.spec.include, exclude: item.spec.exclude))
        if let problem = step.limitProblem { crawls[number].crawl.limitProblem = problem }
        pending[number] = step.next
      }
    }
    for item in crawls { set.listings[item.key] = item.crawl }
    // Checksum files: read, checked, parsed.
    for session in manifest.sessions {
      for spec in checksumSpecs(of: session, redactor: fetcher.redactor) {
        for source in spec.specs.files {
          let key = DescriptorSet.key(of: source, keyring: spec.specs.keyring, for: session, in: manifest)
          guard set.checksums[key] == nil else { continue }
          set.checksums[key] = checksumDocument(source, keyring: spec.specs.keyring, session: session, fetcher: fetcher)
        }
      }
    }
    return set
  }

  /// The `checksums:` keys of a session and its entries, with the headers their files are fetched
  /// with, and the origin those headers' secrets belong to: a task's or an index's headers were
  /// given with its URL, and go to a checksum file at another origin without their secrets; a
  /// list's secrets never go (its lines have many origins); nil: the checksum file's own URL, for
  /// the session's headers.
  static func checksumSpecs(
    of session: Session, redactor: Redactor
  ) -> [(specs: ChecksumSpec, headers: [Header], origin: String?)] {
    var found: [(specs: ChecksumSpec, headers: [Header], origin: String?)] = []
    if let own = session.checksums { found.append((own, [], nil)) }
    for entry in session.tasks {
      guard let specs = entry.checksums else { continue }
      switch entry {
      case .task(let spec): found.append((specs, spec.headers, spec.headers.isEmpty ? nil : spec.url))
      // A list's secrets belong to its lines' origins, which are many: none of them goes to a
      // checksum file (its other headers, and the session's, do).
      case .list(let spec):
        let secret = redactor.originOnly(spec.headers)
        found.append((specs, spec.headers.filter { !secret.contains($0.name.lowercased()) }, nil))
      case .index(let spec): found.append((specs, spec.headers, spec.headers.isEmpty ? nil : spec.url))
      case .metalink: break
      }
    }
    return found
  }

  /// A checksum file read (from disk, or as fetched), its signature checked, and parsed.
  static func checksumDocument(
    _ source: ChecksumSource, keyring: String?, session: Session, fetcher: DocumentFetcher
  ) -> ChecksumDocument {
    let manifest = fetcher.manifest
    let display = source.isURL ? fetcher.redactor.url(source.location) : source.location
    var document = ChecksumDocument(
      display: display, url: source.isURL ? source.location : nil, outcome: source.isURL ? .missing : .storedCopy)
    func fail(_ code: FailureCode, _ message: String) -> ChecksumDocument {
      var failed = document
      failed.failure = DocumentFailure(code: code, message: fetcher.redactor.text(message))
      failed.file = nil
      if code == .descriptor { failed.outcome = .failed }
      return failed
    }
    let bytes: [UInt8]
    if source.isURL {
      let fetched =
        fetcher.documents[DescriptorSet.key(of: source.location, for: session, in: manifest)]
        ?? FetchedDocument(outcome: .missing)
      document.outcome = fetched.outcome
      document.problem = fetched.problem
      document.sha256 = fetched.sha256
      guard let body = fetched.body else {
        if fetched.outcome == .missing { return document }
        return fail(.descriptor, "the checksum file \(display): \(fetched.problem ?? "cannot fetch it")")
      }
      bytes = body
    } else {
      let path = FileAccess.resolve(source.location, against: manifest.directory)
      do {
        bytes = try ChecksumFile.readBytes(path: path)
      } catch {
        return fail(.descriptor, "cannot read the checksum file \(display): \(error.reason)")
      }
      document.outcome = .fetched
      document.sha256 = SHA256.hash(data: bytes).hexString
    }
    var parsed: ChecksumFile
    if let keyring {
      let keyringPath = FileAccess.resolve(keyring, against: manifest.directory)
      let check = SignatureCheck()
      let result: Result<SignedText, SignatureFailure>
      if let signature = source.signature {
        let signatureBytes: [UInt8]
        let shown = source.signatureIsURL ? fetcher.redactor.url(signature) : signature
        if source.signatureIsURL {
          let fetched =
            fetcher.documents[DescriptorSet.key(of: signature, for: session, in: manifest)]
            ?? FetchedDocument(outcome: .missing)
          document.signature = (shown, fetched.outcome, fetched.sha256)
          guard let body = fetched.body else {
            if fetched.outcome == .missing { return document }
            return fail(.signature, "the signature \(shown) of \(display): \(fetched.problem ?? "cannot fetch it")")
          }
          signatureBytes = body
        } else {
          let path = FileAccess.resolve(signature, against: manifest.directory)
          guard let read = try? ChecksumFile.readBytes(path: path) else {
            return fail(.signature, "cannot read the signature \(shown) of \(display)")
          }
          signatureBytes = read
        }
        result = check.verifyDetached(data: .bytes(bytes), signature: .bytes(signatureBytes), keyring: keyringPath)
      } else if ChecksumFile.isClearSigned(bytes) {
        result = check.verifyClearSigned(.bytes(bytes), keyring: keyringPath)
      } else {
        return fail(
          .signature,
          "the checksum file \(display) is neither clear-signed nor given a signature:, and keyring: says it must be signed"
        )
      }
      switch result {
      case .failure(let failure):
        return fail(.signature, "the signature of \(display): \(failure.message)")
      case .success(let signed):
        parsed =
          source.signature != nil
          ? ChecksumFile.parse(signed.bytes, file: display)
          : ChecksumFile.parse(signedText: signed.bytes, of: signed.document, file: display)
      }
    } else {
      parsed = ChecksumFile.parse(bytes, file: display)
    }
    if parsed.isUnusable {
      let reason = parsed.diagnostics.first { $0.severity == .error }.map { "\($0.mark): \($0.message)" }
      return fail(.descriptor, "cannot read the checksum file \(display): \(reason ?? "no checksum lines")")
    }
    document.file = parsed
    return document
  }

  /// What a fetch's answer means with the stored copy: a new copy is stored, a 304 keeps the old,
  /// a failure falls back on it.
  static func settle(
    _ answer: DescriptorFetch.Answer, stored: StoredDescriptor?, masked: String,
    files: (body: String, meta: String), redactor: Redactor
  ) -> FetchedDocument {
    switch answer {
    case .body(let body, let etag, let lastModified, let contentType, let finalURL):
      var meta = DescriptorMeta(
        url: masked, etag: etag, lastModified: lastModified, sha256: SHA256.hash(data: body).hexString)
      meta.contentType = contentType
      // Kept beside the copy only when it holds no secret.
      meta.finalURL = finalURL.flatMap { redactor.url($0) == $0 ? $0 : nil }
      var fetched = FetchedDocument(outcome: .fetched, body: body, contentType: contentType, sha256: meta.sha256)
      fetched.finalURL = finalURL
      // The same bytes with the same metadata (a page without validators, fetched whole again):
      // the stored copy stays as it is.
      if let stored, stored.meta == meta { return fetched }
      do {
        try AtomicFile.makeParent(of: files.body)
        try AtomicFile.write(body, to: files.body)
        try AtomicFile.write(meta.json, to: files.meta)
      } catch {
        // The document is used all the same; the next command fetches it again.
        var unstored = fetched
        unstored.problem = "cannot store a copy: \(error)"
        return unstored
      }
      return fetched
    case .notModified:
      if let stored { return stored.document(.notModified) }
      return FetchedDocument(
        outcome: .failed, problem: "the server answered 304 Not Modified, but no copy is stored; run again")
    case .failed(let message):
      let masked = redactor.text(message)
      if var document = stored?.document(.storedCopy) {
        document.problem = "cannot fetch it (\(masked)); the stored copy is used"
        return document
      }
      return FetchedDocument(outcome: .failed, problem: "cannot fetch it: \(masked)")
    }
  }
}

/// Fetches documents for `Descriptors.prepare`, batch by batch: each URL once per connection
/// identity, with the stored copy's validators, the copies kept in the state folder.
struct DocumentFetcher {
  let manifest: Manifest
  let state: StateFolder
  let mode: DescriptorMode
  let redactor: Redactor
  /// Every document fetched or read so far, by `DescriptorSet.key(of:for:in:)`.
  var documents: [String: FetchedDocument] = [:]
  private var wanted: [(key: String, stored: StoredDescriptor?, masked: String, files: (body: String, meta: String))] =
    []
  private var requests: [DescriptorRequest] = []
  private var wantedKeys = Set<String>()

  init(manifest: Manifest, state: StateFolder, mode: DescriptorMode) {
    self.manifest = manifest
    self.state = state
    self.mode = mode
    redactor = Redactor(secrets: manifest.secrets)
  }

  /// Asks for `url` in the next batch (once: a document already read or asked for is not asked
  /// for again). `headers` are the entry's, merged over the session's; their secrets stay with
  /// `origin` (default: the URL's own).
  mutating func want(
    _ url: String, session: Session, sessionIndex: Int, headers: [Header], limit: Int, origin: String? = nil
  ) {
    let key = DescriptorSet.key(of: url, for: session, in: manifest)
    guard documents[key] == nil, wantedKeys.insert(key).inserted else { return }
    let masked = redactor.url(url)
    let files = state.descriptor(
      maskedURL: masked, connection: session.connectionIdentity(relativeTo: manifest.absoluteDirectory))
    let stored = StoredDescriptor.read(files)
    switch mode {
    case .stored:
      documents[key] = stored?.document(.storedCopy) ?? FetchedDocument(outcome: .missing)
    case .fetch:
      let merged = session.headers.merged(with: headers)
      wanted.append((key, stored, masked, files))
      requests.append(
        DescriptorRequest(
          url: url, headers: merged.map { "\($0.name): \($0.value)" }, originOnly: redactor.originOnly(merged),
          session: session, sessionIndex: sessionIndex, conditional: stored?.meta, limit: limit,
          origin: origin ?? url))
    }
  }

  /// Fetches what was asked for since the last batch, all at once.
  mutating func fetchWanted() {
    defer {
      wanted = []
      requests = []
      wantedKeys = []
    }
    guard !requests.isEmpty else { return }
    let answers = DescriptorFetch(requests).run()
    for (item, answer) in zip(wanted, answers) {
      documents[item.key] = Descriptors.settle(
        answer, stored: item.stored, masked: item.masked, files: item.files, redactor: redactor)
    }
  }
}

/// What is kept beside a stored document.
struct DescriptorMeta: Equatable {
  var url: String
  var etag: String?
  var lastModified: String?
  var sha256: String
  var contentType: String?
  /// The URL after redirects, when it is another (`FetchedDocument.finalURL`).
  var finalURL: String?

  var json: String {
    var object: [String: JSON] = ["url": .string(url), "sha256": .string(sha256)]
    if let contentType { object["content_type"] = .string(contentType) }
    if let finalURL { object["final_url"] = .string(finalURL) }
    if let etag { object["etag"] = .string(etag) }
    if let lastModified { object["last_modified"] = .string(lastModified) }
    var text = ""
    JSON.object(object).write(to: &text)
    return text + "\n"
  }

  init(url: String, etag: String?, lastModified: String?, sha256: String) {
    self.url = url
    self.etag = etag
    self.lastModified = lastModified
    self.sha256 = sha256
  }

  init?(json: [UInt8]) {
    guard let object = (try? JSONSerialization.jsonObject(with: Data(json))) as? [String: Any],
      let url = object["url"] as? String, let sha256 = object["sha256"] as? String
    else { return nil }
    self.init(
      url: url, etag: object["etag"] as? String, lastModified: object["last_modified"] as? String, sha256: sha256)
    contentType = object["content_type"] as? String
    finalURL = object["final_url"] as? String
  }
}

/// A stored document whose bytes still match the digest written beside them.
struct StoredDescriptor {
  var body: [UInt8]
  var meta: DescriptorMeta

  static func read(_ files: (body: String, meta: String)) -> StoredDescriptor? {
    guard let metaBytes = try? ManifestLoader.readManifest(files.meta, limit: 1 << 16),
      let meta = DescriptorMeta(json: metaBytes),
      let body = try? ManifestLoader.readManifest(files.body, limit: ChecksumFile.maxBytes),
      SHA256.hash(data: body).hexString == meta.sha256
    else { return nil }
    return StoredDescriptor(body: body, meta: meta)
  }

  /// The copy as a document the planner uses, with `outcome`.
  func document(_ outcome: DescriptorOutcome) -> FetchedDocument {
    var document = FetchedDocument(outcome: outcome, body: body, contentType: meta.contentType, sha256: meta.sha256)
    document.finalURL = meta.finalURL
    return document
  }
}

/// What one descriptor's GET needs: its URL and headers, its session's settings, and the stored
/// copy's validators.
struct DescriptorRequest {
  var url: String
  var headers: [String]
  /// Headers that stay with the document's origin (secrets).
  var originOnly: Set<String>
  var session: Session
  var sessionIndex: Int
  var conditional: DescriptorMeta?
  /// The most bytes read.
  var limit: Int
  /// The origin its secret headers stay with (an index's sub-folder pages: the index URL's).
  var origin: String

  /// The budget of the whole fetch, every try and pause included: `timeouts.resource`, else
  /// 2 minutes, and never more than `TransferDefaults.resourceLimitMilliseconds` (10 minutes). A
  /// server that drips a few bytes a second can hold a fetch no longer than this before planning
  /// goes on.
  var budget: Interval {
    let resource = session.timeouts.resource.map(\.milliseconds) ?? 120_000
    return Interval(milliseconds: max(1, min(resource, TransferDefaults.resourceLimitMilliseconds)))
  }

  /// The request as a transfer of the engine: GET into memory (at most `Descriptors.maxBytes`),
  /// the session's idle limit, TLS and HTTP version, its retry policy (at most 5 tries) within
  /// the budget, conditional on the stored copy, the secrets with the document's origin.
  var spec: TransferSpec {
    let network = session.network
    var retry = session.retry
    retry.attempts = max(1, min(retry.attempts, 5))
    let host = (try? URLNormalizer().normalize(url).get())?.authority ?? url
    var spec = TransferSpec(
      method: "GET", url: url, headers: headers, body: .none,
      target: .memory(limit: Int64(limit), spill: nil), requestTimeout: session.timeouts.request,
      resourceTimeout: budget, retry: retry, rateLimit: network.rateLimit, hostKey: host,
      hostLimit: network.maxConnectionsPerHost, sessionKey: sessionIndex, sessionLimit: network.maxConcurrent,
      insecure: session.insecure)
    spec.tls = session.tls
    spec.httpVersion = network.httpVersion
    spec.decodeContent = true
    spec.originOnlyHeaders = originOnly
    spec.headerOrigin = Origin(url: origin)
    if let conditional { spec.conditional = .init(etag: conditional.etag, lastModified: conditional.lastModified) }
    return spec
  }
}

/// Fetches descriptors as jobs of the transfer engine, like every other request: the body gate,
/// the origin rule for secrets (redirects followed by batchdl when the request carries one), the
/// idle limit, the retry policy and the failure codes are those of every transfer; the sessions'
/// caps apply. All of a manifest's documents are fetched at once, before planning.
final class DescriptorFetch: TransferJobSource, TransferObserver {
  enum Answer {
    /// `finalURL`: where the body came from after redirects, when that is not the URL asked for.
    case body([UInt8], etag: String?, lastModified: String?, contentType: String?, finalURL: String?)
    case notModified
    case failed(String)
  }

  private let requests: [DescriptorRequest]
  private var outcomes: [Result<TransferResult, TransferFailure>?]

  init(_ requests: [DescriptorRequest]) {
    self.requests = requests
    outcomes = Array(repeating: nil, count: requests.count)
  }

  /// The answer of each request, in order.
  func run() -> [Answer] {
    do {
      let engine = try Engine(jobs: self, globalLimit: 16, observer: self)
      try engine.run()
    } catch {
      return requests.map { _ in .failed("the transfer engine failed: \(error)") }
    }
    return zip(requests, outcomes).map { request, outcome in
      switch outcome {
      case .success(let result) where result.notModified:
        return .notModified
      case .success(let result):
        // A validator past the cap is not kept (the copy's metadata must stay readable): the copy
        // is then fetched whole each time, and still used when a fetch fails.
        func kept(_ value: String?) -> String? {
          guard let value, !value.isEmpty, value.utf8.count <= Descriptors.maxValidatorBytes else { return nil }
          return value
        }
        return .body(
          result.body ?? [], etag: kept(result.head["etag"]), lastModified: kept(result.head["last-modified"]),
          contentType: kept(result.head["content-type"]),
          finalURL: result.effectiveURL == request.url ? nil : result.effectiveURL)
      case .failure(let failure):
        return .failed(failure.message)
      case nil:
        return .failed("not fetched")
      }
    }
  }

  // MARK: - TransferJobSource

  var count: Int { requests.count }

  func queue(of job: Int) -> TransferQueue {
    let spec = requests[job].spec
    return TransferQueue(
      session: spec.sessionKey, host: spec.hostKey, sessionLimit: spec.sessionLimit, hostLimit: spec.hostLimit)
  }

  func dependencies(of job: Int) -> [Int] { [] }

  func makeJob(_ job: Int) -> TransferJob { TransferJob(spec: requests[job].spec) }

  // MARK: - TransferObserver

  var wantsResponses: Bool { false }
  func transferReceivedResponse(_ job: Int, head: ResponseHead) {}
  func transferBecameDownload(_ job: Int) {}
  func transferWillRetry(_ job: Int, after delay: Interval, failure: TransferFailure) {}
  func transferCompleted(
    _ job: Int, outcome: Result<TransferResult, TransferFailure>, spent: Int64, started: UInt64?, ended: UInt64
  ) {
    outcomes[job] = outcome
  }
  func transferTick(active: [ActiveTransfer]) {}
  func transferCheckpoints(_ checkpoints: [TransferCheckpoint]) {}
  func settle() {}
}
