import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
import CCurl
import Crypto
import Foundation

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
  /// The sessions whose documents are fetched (nil: all); see `Descriptors.prepare`.
  var fetching: Set<String>?
  /// Documents read from the state folder for a session that does not fetch: a session that
  /// fetches the same document still does.
  private var storedOnly = Set<String>()
  /// Requests sent so far (conditional ones included; a connection that failed sent none).
  private(set) var requestsSent = 0
  /// Of `requestsSent`, by session index.
  private(set) var requestsPerSession: [Int: Int] = [:]

  init(manifest: Manifest, state: StateFolder, mode: DescriptorMode) {
    self.manifest = manifest
    self.state = state
    self.mode = mode
    redactor = Redactor(secrets: manifest.secrets)
  }

  /// Asks for `url` in the next batch (once: a document already read or asked for is not asked
  /// for again). `headers` are the entry's, merged over the session's; their secrets stay with
  /// `origin` (default: the URL's own).
  /// `pinned`: the SHA-256 a signed parent gives the document (an APT index by hash): a stored
  /// copy with that digest is used without a request.
  mutating func want(
    _ url: String, session: Session, sessionIndex: Int, headers: [Header], limit: Int, origin: String? = nil,
    pinned: String? = nil
  ) {
    let key = DescriptorSet.key(of: url, for: session, in: manifest)
    let mode = (fetching.map { $0.contains(session.name) } ?? true) ? self.mode : .stored
    guard documents[key] == nil || (mode == .fetch && storedOnly.contains(key)), !wantedKeys.contains(key) else {
      return
    }
    let masked = redactor.url(url)
    let files = state.descriptor(
      maskedURL: masked, connection: session.connectionIdentity(relativeTo: manifest.absoluteDirectory))
    let stored = StoredDescriptor.read(files, limit: limit)
    switch mode {
    case .stored:
      storedOnly.insert(key)
      documents[key] = stored?.document(.storedCopy) ?? FetchedDocument(outcome: .missing)
    case .fetch:
      if let pinned, let stored, stored.meta.sha256 == pinned {
        documents[key] = stored.document(.notModified)
        return
      }
      wantedKeys.insert(key)
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
    let fetch = DescriptorFetch(requests)
    let answers = fetch.run()
    requestsSent += fetch.requestsSent
    requestsPerSession.merge(fetch.requestsPerSession, uniquingKeysWith: +)
    for (item, answer) in zip(wanted, answers) {
      storedOnly.remove(item.key)
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

  /// The copy, when its bytes (at most `limit`, and never less than a checksum file may hold: the
  /// bound the document was fetched with) still match its digest.
  static func read(_ files: (body: String, meta: String), limit: Int = ChecksumFile.maxBytes) -> StoredDescriptor? {
    guard let metaBytes = try? ManifestLoader.readManifest(files.meta, limit: 1 << 16),
      let meta = DescriptorMeta(json: metaBytes),
      let body = try? ManifestLoader.readManifest(files.body, limit: max(limit, ChecksumFile.maxBytes)),
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
    spec.access = session.access
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
    /// The server answered 404 or 410.
    case notFound(String)
  }

  private let requests: [DescriptorRequest]
  /// Requests `run` sent (`Engine.requestsSent`).
  private(set) var requestsSent = 0
  /// Of `requestsSent`, by the index of the session each was sent for.
  private(set) var requestsPerSession: [Int: Int] = [:]
  private var outcomes: [Result<TransferResult, TransferFailure>?]

  init(_ requests: [DescriptorRequest]) {
    self.requests = requests
    outcomes = Array(repeating: nil, count: requests.count)
  }

  /// The answer of each request, in order.
  func run() -> [Answer] {
    do {
      let engine = try Engine(jobs: self, globalLimit: 16, observer: self)
      engine.countsRequestsPerJob = true
      defer {
        requestsSent = engine.requestsSent
        for (job, sent) in engine.requestsSentByJob where requests.indices.contains(job) {
          requestsPerSession[requests[job].sessionIndex, default: 0] += sent
        }
      }
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
      case .failure(let failure) where failure.status == 404 || failure.status == 410:
        return .notFound(failure.message)
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
