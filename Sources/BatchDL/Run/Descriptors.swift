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

/// Fetches the documents that `metalink:` entries name by URL, before planning: one bounded GET
/// each (a conditional one when the state folder holds an earlier copy), by the transfer engine.
/// Copies are kept in `StateFolder.descriptors`, written atomically; their names and metadata
/// hold the URL with user-info and secrets masked, never a secret.
public enum Descriptors {
  /// The largest document fetched: what `Metalink` reads.
  public static let maxBytes = Metalink.maxBytes
  /// The longest `ETag` or `Last-Modified` kept with a copy (real ones are well under 100 bytes).
  static let maxValidatorBytes = 8 << 10

  /// The documents `manifest` needs, fetched or read from `state`.
  public static func prepare(_ manifest: Manifest, state: StateFolder, mode: DescriptorMode) -> DescriptorSet {
    let redactor = Redactor(secrets: manifest.secrets)
    var set = DescriptorSet()
    var pending: [(key: String, stored: StoredDescriptor?, masked: String, files: (body: String, meta: String))] = []
    var requests: [DescriptorRequest] = []
    var pendingKeys = Set<String>()
    for (index, session) in manifest.sessions.enumerated() {
      for entry in session.tasks {
        guard case .metalink(let spec) = entry, spec.isURL else { continue }
        let key = DescriptorSet.key(of: spec.document, for: session, in: manifest)
        guard set.documents[key] == nil, pendingKeys.insert(key).inserted else { continue }
        let masked = redactor.url(spec.document)
        let files = state.descriptor(
          maskedURL: masked, connection: session.connectionIdentity(relativeTo: manifest.absoluteDirectory))
        let stored = StoredDescriptor.read(files)
        switch mode {
        case .stored:
          set.documents[key] =
            stored.map { FetchedDocument(outcome: .storedCopy, body: $0.body) } ?? FetchedDocument(outcome: .missing)
        case .fetch:
          let merged = session.headers.merged(with: spec.headers)
          pending.append((key, stored, masked, files))
          requests.append(
            DescriptorRequest(
              url: spec.document, headers: merged.map { "\($0.name): \($0.value)" },
              originOnly: redactor.originOnly(merged), session: session, sessionIndex: index,
              conditional: stored?.meta))
        }
      }
    }
    guard !requests.isEmpty else { return set }
    let answers = DescriptorFetch(requests).run()
    for (item, answer) in zip(pending, answers) {
      set.documents[item.key] = settle(
        answer, stored: item.stored, masked: item.masked, files: item.files, redactor: redactor)
    }
    return set
  }

  /// What a fetch's answer means with the stored copy: a new copy is stored, a 304 keeps the old,
  /// a failure falls back on it.
  static func settle(
    _ answer: DescriptorFetch.Answer, stored: StoredDescriptor?, masked: String,
    files: (body: String, meta: String), redactor: Redactor
  ) -> FetchedDocument {
    switch answer {
    case .body(let body, let etag, let lastModified):
      let meta = DescriptorMeta(
        url: masked, etag: etag, lastModified: lastModified, sha256: SHA256.hash(data: body).hexString)
      do {
        try AtomicFile.makeParent(of: files.body)
        try AtomicFile.write(body, to: files.body)
        try AtomicFile.write(meta.json, to: files.meta)
      } catch {
        // The document is used all the same; the next command fetches it again.
        return FetchedDocument(outcome: .fetched, body: body, problem: "cannot store a copy: \(error)")
      }
      return FetchedDocument(outcome: .fetched, body: body)
    case .notModified:
      if let stored { return FetchedDocument(outcome: .notModified, body: stored.body) }
      return FetchedDocument(
        outcome: .failed, problem: "the server answered 304 Not Modified, but no copy is stored; run again")
    case .failed(let message):
      let masked = redactor.text(message)
      if let stored {
        return FetchedDocument(
          outcome: .storedCopy, body: stored.body, problem: "cannot fetch it (\(masked)); the stored copy is used")
      }
      return FetchedDocument(outcome: .failed, problem: "cannot fetch it: \(masked)")
    }
  }
}

/// What is kept beside a stored document.
struct DescriptorMeta: Equatable {
  var url: String
  var etag: String?
  var lastModified: String?
  var sha256: String

  var json: String {
    var object: [String: JSON] = ["url": .string(url), "sha256": .string(sha256)]
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
  }
}

/// A stored document whose bytes still match the digest written beside them.
struct StoredDescriptor {
  var body: [UInt8]
  var meta: DescriptorMeta

  static func read(_ files: (body: String, meta: String)) -> StoredDescriptor? {
    guard let metaBytes = try? ManifestLoader.readManifest(files.meta, limit: 1 << 16),
      let meta = DescriptorMeta(json: metaBytes),
      let body = try? ManifestLoader.readManifest(files.body, limit: Descriptors.maxBytes),
      SHA256.hash(data: body).hexString == meta.sha256
    else { return nil }
    return StoredDescriptor(body: body, meta: meta)
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
      target: .memory(limit: Int64(Descriptors.maxBytes), spill: nil), requestTimeout: session.timeouts.request,
      resourceTimeout: budget, retry: retry, rateLimit: network.rateLimit, hostKey: host,
      hostLimit: network.maxConnectionsPerHost, sessionKey: sessionIndex, sessionLimit: network.maxConcurrent,
      insecure: session.insecure)
    spec.tls = session.tls
    spec.httpVersion = network.httpVersion
    spec.decodeContent = true
    spec.originOnlyHeaders = originOnly
    spec.headerOrigin = Origin(url: url)
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
    case body([UInt8], etag: String?, lastModified: String?)
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
    return outcomes.map { outcome in
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
          result.body ?? [], etag: kept(result.head["etag"]), lastModified: kept(result.head["last-modified"]))
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
