import CCurl
import Crypto
import Foundation

/// A document a `metalink:` entry names by URL, as the planner gets it: its bytes (fetched now or
/// stored by an earlier command), or why there are none.
public struct FetchedDocument: Sendable {
  public var outcome: DescriptorOutcome
  public var body: [UInt8]?
  /// Why there is no usable copy (`failed`), or what went wrong before a stored copy was used.
  public var problem: String?

  public init(outcome: DescriptorOutcome, body: [UInt8]? = nil, problem: String? = nil) {
    self.outcome = outcome
    self.body = body
    self.problem = problem
  }
}

/// The documents of a manifest's `metalink:` entries given by URL, by URL as written (after
/// `${VAR}` expansion).
public struct DescriptorSet: Sendable {
  /// By `key(of:for:in:)`: the document's URL, and the fetching session's connection identity.
  public var documents: [String: FetchedDocument] = [:]

  /// Where a document fetched for `session` is kept: one fetch per URL and connection identity
  /// (`Session.connectionIdentity`), so that sessions that trust other things never share one.
  static func key(of document: String, for session: Session, in manifest: Manifest) -> String {
    guard let identity = session.connectionIdentity(relativeTo: manifest.absoluteDirectory) else { return document }
    return document + "\n" + identity
  }

  public init(documents: [String: FetchedDocument] = [:]) {
    self.documents = documents
  }
}

/// Whether commands fetch descriptors before planning (`run`, `plan`) or read the stored copies
/// only (`validate`, `plan --offline`, and the commands that only read state).
public enum DescriptorMode: Sendable {
  case fetch
  case stored
}

/// Fetches the documents that `metalink:` entries name by URL, before planning: one bounded GET
/// each (a conditional one when the state folder holds an earlier copy), outside the engine.
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
    for session in manifest.sessions {
      for entry in session.tasks {
        guard case .metalink(let spec) = entry, spec.isURL else { continue }
        let key = DescriptorSet.key(of: spec.document, for: session, in: manifest)
        guard set.documents[key] == nil else { continue }
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
          let answer = DescriptorFetch(
            url: spec.document, headers: merged.map { "\($0.name): \($0.value)" },
            originOnly: redactor.originOnly(merged), timeouts: session.timeouts, retry: session.retry,
            insecure: session.insecure, tls: session.tls, httpVersion: session.network.httpVersion
          ).run(conditional: stored?.meta)
          set.documents[key] = settle(
            answer, stored: stored, masked: masked, files: files, redactor: redactor)
        }
      }
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

/// One bounded GET of a descriptor with libcurl's easy interface: http and https only, at most 10
/// redirects, the session's idle and total timeouts, at most `Descriptors.maxBytes`, retried as
/// the session's `retry` says (up to 5 tries) on connection failures, timeouts, 429 and 5xx.
struct DescriptorFetch {
  enum Answer {
    case body([UInt8], etag: String?, lastModified: String?)
    case notModified
    case failed(String)
  }

  var url: String
  var headers: [String]
  /// Headers that stay with the document's origin: with any, batchdl follows redirects itself and
  /// drops them at a hop to another origin, as for every other request.
  var originOnly: Set<String> = []
  var timeouts: Timeouts
  var retry: RetryPolicy
  var insecure: Bool
  var tls: TLSSettings
  var httpVersion: HTTPVersion

  /// The whole fetch's budget, every try and pause included: `timeouts.resource`, else 2 minutes,
  /// and never more than 10 minutes. A server that drips a few bytes a second can hold a fetch no
  /// longer than this before planning goes on.
  var budgetMilliseconds: Int {
    let resource = timeouts.resource.map { Int(clamping: $0.milliseconds) } ?? 120_000
    return max(1, min(resource, 600_000))
  }

  func run(conditional: DescriptorMeta?) -> Answer {
    let tries = max(1, min(retry.attempts, 5))
    let deadline = ContinuousClock.now + .milliseconds(budgetMilliseconds)
    var last = Answer.failed("not tried")
    for attempt in 1...tries {
      let left = ContinuousClock.now.duration(to: deadline)
      let leftMilliseconds =
        Int(left.components.seconds) * 1000 + Int(left.components.attoseconds / 1_000_000_000_000_000)
      guard leftMilliseconds > 0 else { break }
      let (answer, retryable) = once(conditional: conditional, milliseconds: leftMilliseconds)
      last = answer
      guard retryable, attempt < tries else { break }
      let pause = min(max(retry.backoff.milliseconds, 0), 2000) << min(attempt - 1, 4)
      let wait = min(Int(pause), 2000, max(0, leftMilliseconds - 1))
      usleep(useconds_t(wait * 1000))
    }
    return last
  }

  /// One try: the request and, when batchdl follows redirects itself, its hops (at most 10).
  private func once(conditional: DescriptorMeta?, milliseconds: Int) -> (Answer, retryable: Bool) {
    var hop = TransferSpec(
      method: "GET", url: url, headers: headers, body: .none, target: .memory(limit: 0, spill: nil),
      requestTimeout: timeouts.request, resourceTimeout: nil, retry: retry, rateLimit: nil, hostKey: "", hostLimit: 1,
      sessionKey: 0, sessionLimit: 1)
    hop.originOnlyHeaders = originOnly
    hop.headerOrigin = TransferSpec.origin(of: url)
    for _ in 0...10 {
      let (answer, retryable, location) = request(hop, conditional: conditional, milliseconds: milliseconds)
      guard let (status, next) = location else { return (answer, retryable) }
      switch hop.following(next, status: status) {
      case .success(let spec): hop = spec
      case .failure(let failure): return (.failed(failure.message), false)
      }
    }
    return (.failed("more than 10 redirects"), false)
  }

  private func request(
    _ spec: TransferSpec, conditional: DescriptorMeta?, milliseconds: Int
  ) -> (Answer, retryable: Bool, redirect: (status: Int, location: String)?) {
    let sink = DescriptorSink()
    let url = spec.url
    do {
      let easy = try EasyHandle()
      try easy.set(CURLOPT_URL, url)
      try easy.allowHTTPOnly()
      try easy.set(CURLOPT_FOLLOWLOCATION, spec.followsRedirectsItself ? 0 : 1)
      try easy.set(CURLOPT_MAXREDIRS, 10)
      try easy.set(CURLOPT_NOSIGNAL, 1)
      try easy.setSecurity(url: url, httpVersion: httpVersion, tls: tls, insecure: insecure)
      let idle = max(1, Int(clamping: timeouts.request.milliseconds))
      try easy.set(CURLOPT_CONNECTTIMEOUT_MS, idle)
      // Less than 1 KiB a second over the idle limit fails a try (a document is at most 8MB);
      // each try gets what is left of the fetch's budget.
      try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1024)
      try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, idle / 1000))
      try easy.set(CURLOPT_TIMEOUT_MS, max(1, milliseconds))
      try easy.set(CURLOPT_ACCEPT_ENCODING, "")
      var lines = spec.headersForURL
      if let etag = conditional?.etag {
        lines.append("If-None-Match: \(etag)")
      } else if let date = conditional?.lastModified {
        lines.append("If-Modified-Since: \(date)")
      }
      try easy.set(CURLOPT_HTTPHEADER, list: lines)
      let context = Unmanaged.passUnretained(sink).toOpaque()
      try easy.set(CURLOPT_WRITEDATA, pointer: context)
      try easy.setCallback(CURLOPT_WRITEFUNCTION, DescriptorSink.bodyCallback)
      try easy.set(CURLOPT_HEADERDATA, pointer: context)
      try easy.setCallback(CURLOPT_HEADERFUNCTION, DescriptorSink.headerCallback)
      let code = withExtendedLifetime(sink) { curl_easy_perform(easy.raw) }
      if sink.tooLarge {
        return (.failed("it is larger than \(ByteSize.format(Int64(Descriptors.maxBytes)))"), false, nil)
      }
      guard code == CURLE_OK else {
        // The same words as a transfer's (a TLS failure names the setting that answers it).
        let failure = FailureClassifier.classify(code, message: easy.message(for: code))
        return (.failed(failure.message), FailureClassifier.isRetryable(failure), nil)
      }
      let status = easy.info(CURLINFO_RESPONSE_CODE)
      switch status {
      case 200:
        return (.body(sink.body, etag: sink.etag, lastModified: sink.lastModified), false, nil)
      case 304 where conditional != nil:
        return (.notModified, false, nil)
      case 301, 302, 303, 307, 308:
        guard spec.followsRedirectsItself else {
          return (.failed("the server answered HTTP \(status)"), false, nil)
        }
        guard let location = easy.info(string: CURLINFO_REDIRECT_URL) else {
          return (.failed("the server answered HTTP \(status) without a Location"), false, nil)
        }
        return (.failed("HTTP \(status)"), false, (status, location))
      default:
        return (.failed("the server answered HTTP \(status)"), status == 429 || status >= 500, nil)
      }
    } catch {
      return (.failed(error.message), false, nil)
    }
  }
}

/// Collects a descriptor's body (up to `Descriptors.maxBytes`) and the validators of the last
/// response (redirects included).
private final class DescriptorSink {
  var body: [UInt8] = []
  var etag: String?
  var lastModified: String?
  var tooLarge = false

  func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
    guard body.count + bytes.count <= Descriptors.maxBytes else {
      tooLarge = true
      return 0
    }
    body.append(contentsOf: bytes)
    return bytes.count
  }

  func header(_ bytes: UnsafeRawBufferPointer) -> Int {
    let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    if line.hasPrefix("HTTP/") {
      etag = nil
      lastModified = nil
      body.removeAll()
    } else if let colon = line.firstIndex(of: ":") {
      let name = line[..<colon].lowercased()
      let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
      // A validator past the cap is not kept (the copy's metadata must stay readable): the copy is
      // then fetched whole each time, and still used when a fetch fails.
      let kept = !value.isEmpty && value.utf8.count <= Descriptors.maxValidatorBytes
      if name == "etag", kept { etag = value }
      if name == "last-modified", kept { lastModified = value }
    }
    return bytes.count
  }

  static let bodyCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    let sink = Unmanaged<DescriptorSink>.fromOpaque(context).takeUnretainedValue()
    return sink.receive(UnsafeRawBufferPointer(start: data, count: size * count))
  }

  static let headerCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    let sink = Unmanaged<DescriptorSink>.fromOpaque(context).takeUnretainedValue()
    return sink.header(UnsafeRawBufferPointer(start: data, count: size * count))
  }
}
