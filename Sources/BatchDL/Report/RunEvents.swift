import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
import Foundation

/// What happened to a task, named after URLSession's delegate callbacks. Reports, the event log and
/// the progress display are all built from these.
public enum RunEvent: Sendable {
  /// `didReceive response`: the final response's head arrived.
  /// `proto`: the protocol that carried the response (`HTTP/2`, `HTTP/1.1`).
  case response(task: String, status: Int, contentType: String?, contentLength: Int64?, proto: String? = nil)
  /// A download continues a partial file from `offset` (`Range` answered with 206).
  case resumed(task: String, offset: Int64)
  /// `didWriteData`: bytes so far (throttled).
  case progress(task: String, bytes: Int64, expected: Int64?)
  /// A source of a download with mirrors failed and was set aside.
  case sourceFailed(task: String, url: String, code: String, message: String)
  /// A segmented download started fetching `length` bytes from `start` at `url` on a connection of
  /// its own.
  case segment(task: String, start: Int64, length: Int64, url: String)
  /// A complete download's pieces failed their Metalink digests (`urls`: the sources that sent
  /// them); they are fetched again while the good pieces stay.
  case piecesFailed(task: String, pieces: [Int], urls: [String], message: String)
  /// An attempt failed; the task will be tried again.
  case retrying(task: String, attempt: Int, delay: Interval, code: String, message: String)
  /// `didBecome downloadTask`: a data task's body moved to a file.
  case becameDownload(task: String, to: String)
  /// `didFinishDownloadingTo`: the file is in place.
  case finished(task: String, to: String)
  /// `didCompleteWithError`: the task ended.
  case completed(TaskResult)
  /// `urlSessionDidFinishEvents`: every task of the session has ended.
  case sessionFinished(session: String, summary: RunSummary)
  /// `prune:` deleted a file no task names any more (`path` relative to the manifest's folder).
  case pruned(session: String, path: String)

  /// The event as one JSON object for `--events` (without the time, which the log adds).
  public var json: [String: JSON] {
    switch self {
    case .response(let task, let status, let type, let length, let proto):
      var fields: [String: JSON] = ["event": .string("response"), "task": .string(task), "status": .int(status)]
      if let proto, !proto.isEmpty { fields["protocol"] = .string(proto) }
      if let type { fields["content_type"] = .string(type) }
      if let length { fields["content_length"] = .int(length) }
      return fields
    case .resumed(let task, let offset):
      return ["event": .string("resumed"), "task": .string(task), "offset": .int(offset)]
    case .progress(let task, let bytes, let expected):
      var fields: [String: JSON] = ["event": .string("progress"), "task": .string(task), "bytes": .int(bytes)]
      if let expected { fields["expected"] = .int(expected) }
      return fields
    case .retrying(let task, let attempt, let delay, let code, let message):
      return [
        "event": .string("retrying"), "task": .string(task), "attempt": .int(attempt),
        "delay_ms": .int(delay.milliseconds), "error": .object(["code": .string(code), "message": .string(message)]),
      ]
    case .sourceFailed(let task, let url, let code, let message):
      return [
        "event": .string("source_failed"), "task": .string(task), "url": .string(url),
        "error": .object(["code": .string(code), "message": .string(message)]),
      ]
    case .segment(let task, let start, let length, let url):
      return [
        "event": .string("segment"), "task": .string(task), "start": .int(start), "length": .int(length),
        "url": .string(url),
      ]
    case .piecesFailed(let task, let pieces, let urls, let message):
      return [
        "event": .string("pieces_failed"), "task": .string(task), "pieces": .array(pieces.map { .int(Int64($0)) }),
        "urls": .array(urls.map { .string($0) }), "message": .string(message),
      ]
    case .becameDownload(let task, let to):
      return ["event": .string("became_download"), "task": .string(task), "to": .string(to)]
    case .finished(let task, let to):
      return ["event": .string("finished"), "task": .string(task), "to": .string(to)]
    case .completed(let result):
      var fields = result.json(timings: false)
      fields["event"] = .string("completed")
      fields["task"] = fields.removeValue(forKey: "id")
      return fields
    case .pruned(let session, let path):
      return ["event": .string("pruned"), "session": .string(session), "path": .string(path)]
    case .sessionFinished(let session, let summary):
      return ["event": .string("session_finished"), "session": .string(session), "summary": summary.json]
    }
  }
}

/// One task's line in the report.
public struct TaskResult: Sendable {
  public var id: String
  public var session: String
  public var kind: TaskKind
  /// The URL as written, credentials masked.
  public var url: String
  public var to: String?
  public var outcome: TaskOutcome
  public var status: Int?
  public var size: Int64?
  public var sha256: String?
  public var resumedFrom: Int64
  public var attempts: Int
  /// `network`, `cache`, `not-modified` or `duplicate`.
  public var source: String?
  public var error: (code: String, message: String)?
  /// Seconds from the start of the run to the task's end (reported with `--timings` only).
  public var seconds: Double?
  /// Seconds from the start of the run to the start of the task's transfer, when its turn came
  /// (reported with `--timings` only); nil for a task that needed no transfer (unchanged, from the
  /// cache) or never got its turn.
  public var started: Double?
  /// The protocol of the response that completed the task (`HTTP/2`, `HTTP/1.1`); reported with
  /// `--timings` only, beside the times it explains.
  public var httpVersion: String?
  /// Body bytes received from the network in this run (not those a resume kept); for the summary.
  public var transferred: Int64 = 0
  /// The plan's task, in a run: what its id, session, kind, URL and destination were made from.
  var task: PlannedTask?
  /// A download that tried more than one source: each, with the bytes it gave (URLs masked).
  public var sources: [SourceBytes] = []
  /// `all-sources-failed`: each source's last error (URLs and messages masked).
  public var sourceErrors: [SourceFailure] = []
  /// False for a download fetched without an upstream digest although `checksums:` covers it
  /// (`unlisted: fetch`); nil otherwise (not written).
  public var verified: Bool?

  public init(
    id: String, session: String, kind: TaskKind, url: String, to: String?, outcome: TaskOutcome, status: Int? = nil,
    size: Int64? = nil, sha256: String? = nil, resumedFrom: Int64 = 0, attempts: Int = 0, source: String? = nil,
    error: (code: String, message: String)? = nil, seconds: Double? = nil
  ) {
    self.init(
      id: id, session: session, kind: kind, url: url, to: to, outcome: outcome, status: status, size: size,
      sha256: sha256, resumedFrom: resumedFrom, attempts: attempts, source: source, error: error, seconds: seconds,
      task: nil)
  }

  init(
    id: String, session: String, kind: TaskKind, url: String, to: String?, outcome: TaskOutcome, status: Int? = nil,
    size: Int64? = nil, sha256: String? = nil, resumedFrom: Int64 = 0, attempts: Int = 0, source: String? = nil,
    error: (code: String, message: String)? = nil, seconds: Double? = nil, task: PlannedTask?
  ) {
    self.task = task
    self.id = id
    self.session = session
    self.kind = kind
    self.url = url
    self.to = to
    self.outcome = outcome
    self.status = status
    self.size = size
    self.sha256 = sha256
    self.resumedFrom = resumedFrom
    self.attempts = attempts
    self.source = source
    self.error = error
    self.seconds = seconds
  }

  public func json(timings: Bool) -> [String: JSON] {
    var fields: [String: JSON] = [
      "id": .string(id), "session": .string(session), "kind": .string(kind.rawValue), "url": .string(url),
      "outcome": .string(outcome.rawValue), "resumed_from": .int(resumedFrom), "attempts": .int(attempts),
    ]
    if let to { fields["to"] = .string(to) }
    if let status { fields["status"] = .int(status) }
    if let size { fields["size"] = .int(size) }
    if let sha256 { fields["sha256"] = .string(sha256) }
    if let source { fields["source"] = .string(source) }
    if let verified { fields["verified"] = .bool(verified) }
    if let error {
      var object: [String: JSON] = ["code": .string(error.code), "message": .string(error.message)]
      if !sourceErrors.isEmpty {
        object["sources"] = .array(
          sourceErrors.map {
            .object(["url": .string($0.url), "code": .string($0.code.rawValue), "message": .string($0.message)])
          })
      }
      fields["error"] = .object(object)
    }
    if !sources.isEmpty {
      fields["sources"] = .array(
        sources.sorted { $0.url < $1.url }.map { .object(["url": .string($0.url), "bytes": .int($0.bytes)]) })
    }
    if timings, let seconds { fields["seconds"] = .string(TextFormat.fixed(seconds, decimals: 3)) }
    if timings, let started { fields["started"] = .string(TextFormat.fixed(started, decimals: 3)) }
    if timings, let httpVersion, !httpVersion.isEmpty { fields["protocol"] = .string(httpVersion) }
    return fields
  }
}

/// Counts for a report's `summary`.
public struct RunSummary: Sendable, Equatable {
  public var tasks = 0
  /// Every request the run sent: its tasks' (retries, segments, redirects and revalidations
  /// included) and its descriptors'.
  public var requests = 0
  /// Of `requests`, those of descriptors fetched before planning (listing pages, checksum files,
  /// signatures, Metalink documents, conditional or not).
  public var descriptorRequests = 0
  public var completed = 0
  public var unchanged = 0
  public var failed = 0
  public var deferred = 0
  public var cancelled = 0
  public var bytes: Int64 = 0

  public init() {}

  public mutating func add(_ result: TaskResult) {
    tasks += 1
    switch result.outcome {
    case .completed: completed += 1
    case .unchanged: unchanged += 1
    case .failed: failed += 1
    case .deferred: deferred += 1
    case .cancelled: cancelled += 1
    }
    if result.outcome == .completed, result.source == "network" {
      // Saturating: a report read back is input, and its sizes may add past Int64.max.
      let (sum, overflow) = bytes.addingReportingOverflow(result.transferred)
      bytes = overflow ? .max : sum
    }
  }

  public var json: JSON {
    var fields: [String: JSON] = [
      "tasks": .int(tasks), "requests": .int(requests), "completed": .int(completed), "unchanged": .int(unchanged),
      "failed": .int(failed), "deferred": .int(deferred), "bytes": .int(bytes),
    ]
    if cancelled > 0 { fields["cancelled"] = .int(cancelled) }
    if descriptorRequests > 0 { fields["descriptor_requests"] = .int(descriptorRequests) }
    return .object(fields)
  }
}
