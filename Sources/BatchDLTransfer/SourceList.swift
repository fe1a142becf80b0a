import Crypto

/// A URL that serves a download's bytes: the one it was asked for or a mirror, with the host whose
/// caps it counts against.
public struct TransferSource: Sendable, Equatable {
  public var url: String
  public var hostKey: String
  /// Header lines the manifest gives this source alone (`mirrors: [{url, headers}]`).
  public var headers: [String]

  public init(url: String, hostKey: String, headers: [String] = []) {
    self.url = url
    self.hostKey = hostKey
    self.headers = headers
  }
}

/// The bytes one source gave a download (the report's `sources`).
public struct SourceBytes: Sendable, Equatable {
  public var url: String
  public var bytes: Int64

  package init(url: String, bytes: Int64) {
    self.url = url
    self.bytes = bytes
  }
}

/// Why a source was set aside (the report's `error.sources`).
public struct SourceFailure: Sendable, Equatable {
  public var url: String
  public var code: FailureCode
  public var message: String

  public init(url: String, code: FailureCode, message: String) {
    self.url = url
    self.code = code
    self.message = message
  }
}

/// The sources of one download and what happened at each: the URL it was asked for, then its
/// mirrors in order; the one in use; the bytes each gave; why each was set aside. The engine keeps
/// one per job that has mirrors, for the job's length.
///
/// Rules (docs/sources.md): a source that fails for a reason of its own (it cannot be reached, it
/// answers 5xx, 404 or 410, it sends bytes that disagree with `size:` or `sha256:`) is set aside
/// for the rest of the task, and the task goes on from the next source at once; the last source
/// left gets the retries of `retry.attempts`.
/// Kept bytes go on to the next source only under `If-Range` with a strong ETag: a source with
/// another version answers with the whole file, and the file starts over. A file joined from two
/// sources whose digest fails is fetched again whole from one source before that source is blamed.
package struct SourceList {
  package let sources: [TransferSource]
  /// The source a single stream uses: the first one not set aside.
  package private(set) var current = 0
  /// Body bytes received from each source.
  package private(set) var bytes: [Int64]
  /// Sources set aside for the rest of the task.
  package private(set) var aside: [Bool]
  /// Sources asked for bytes (a segment), whatever they answered: one that answered a range with
  /// its whole file gave no byte, but was tried.
  package private(set) var asked: [Bool]
  package private(set) var failures: [SourceFailure] = []
  /// Whether the joined file was already fetched again whole after a digest failure.
  private var refetched = false

  package init(_ sources: [TransferSource]) {
    self.sources = sources
    bytes = Array(repeating: 0, count: sources.count)
    aside = Array(repeating: false, count: sources.count)
    asked = Array(repeating: false, count: sources.count)
  }

  package var url: String { sources[current].url }

  /// Whether a source is left besides the one in use.
  package var hasNext: Bool { aside.indices.contains { $0 != current && !aside[$0] } }

  /// The sources not set aside, in order.
  package var healthy: [Int] { aside.indices.filter { !aside[$0] } }

  package mutating func received(_ count: Int64) { bytes[current] += count }

  /// Bytes a segment fetched from source `index`.
  package mutating func received(_ count: Int64, from index: Int) { bytes[index] += count }

  /// A segment was asked of source `index`.
  package mutating func ask(_ index: Int) { asked[index] = true }

  /// What is wrong with a complete body against the expected size and digest, if anything: the
  /// source's failure, as `BodyCheck` tells it.
  package static func contentProblem(_ result: TransferResult, spec: TransferSpec) -> TransferFailure? {
    BodyCheck(size: spec.expectedSize, digest: spec.expectedDigest).failure(of: result, by: .source)
  }

  /// Whether bytes of more than one source went into the file a result describes.
  package func joined(_ result: TransferResult) -> Bool {
    result.resumedFrom > 0 && bytes.indices.contains { $0 != current && bytes[$0] > 0 }
  }

  /// For a joined file whose digest failed, the first time: fetch it again whole from the same
  /// source (true), before that source is blamed.
  package mutating func refetchWhole(after failure: TransferFailure, _ result: TransferResult?) -> Bool {
    guard failure.code == .checksumMismatch, !refetched, let result, joined(result) else { return false }
    refetched = true
    return true
  }

  /// Sets the current source aside for `failure`; returns the next source, or nil when none is left.
  package mutating func setAside(_ failure: TransferFailure) -> TransferSource? {
    setAside(current, failure)
    return aside[current] ? nil : sources[current]
  }

  /// Sets source `index` aside for `failure` (a segment's source, or the one in use); when it was
  /// the one in use, the next healthy one after it (else before it) takes its place.
  package mutating func setAside(_ index: Int, _ failure: TransferFailure) {
    guard !aside[index] else { return }
    aside[index] = true
    failures.append(SourceFailure(url: sources[index].url, code: failure.code, message: failure.message))
    guard index == current else { return }
    if let next = (index + 1..<sources.count).first(where: { !aside[$0] }) ?? healthy.first { current = next }
  }

  /// Kept bytes go on to the next source only where `If-Range` with a strong ETag guards them.
  package static func mayContinue(_ resume: TransferSpec.Resume) -> Bool {
    resume.validator.carriesAcrossSources
  }

  /// The failure of a download whose every source failed: each source's last error.
  package func allFailed(attempts: Int) -> TransferFailure {
    let each = failures.map { "\($0.url): \($0.code): \($0.message)" }.joined(separator: "; ")
    var failure = TransferFailure(
      code: .allSourcesFailed, message: "every source failed (\(failures.count)): \(each)", attempts: attempts)
    failure.sources = failures
    return failure
  }

  /// The report's `sources` when more than one source was tried: each, with the bytes it gave.
  package var used: [SourceBytes] { used(all: false) }

  /// The sources tried (asked, set aside or that gave bytes), with the bytes each gave; `all`: also
  /// when only the first was (a download fetched in segments lists its sources whatever their
  /// number).
  package func used(all: Bool) -> [SourceBytes] {
    let tried = sources.indices.filter { $0 == current || aside[$0] || asked[$0] || bytes[$0] > 0 }
    guard all || tried != [0] else { return [] }
    return tried.map { SourceBytes(url: sources[$0].url, bytes: bytes[$0]) }
  }
}
