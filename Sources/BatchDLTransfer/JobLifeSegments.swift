import BatchDLSupport

/// A job's life while it is fetched in segments (docs/sources.md, "Segments"): whether it may be,
/// what becomes of the download after each piece's attempt, and where it goes when it fails.
extension JobLife {
  /// A response head showed whether the file may be fetched in segments: long enough (twice the
  /// least segment, beyond what is on disk), ranged, a plain GET, its length and a validator known.
  package mutating func mayUseSegments(
    ranged: Bool, plainGet: Bool, total: Int64?, validated: Bool, onDisk: Int64, minimum: Int64
  ) -> Bool {
    guard !segmentsOff else { return false }
    guard ranged, plainGet, let total, validated, total >= 2 * minimum, total - onDisk >= 2 * minimum else {
      segmentsOff = true
      return false
    }
    return true
  }

  /// What a piece's attempt of a segmented download ended with.
  package struct PieceEnd {
    /// The download's source that sent it (0: the job's own stream's source).
    package var source = 0
    /// The source answered the range with the whole file (no ranges, or another version).
    package var answeredWhole = false
    /// The next hop of a redirect the source answered with (`TransferSpec.following`), and the
    /// source's redirects so far, this one included.
    package var redirect: Result<TransferSpec, TransferFailure>?
    package var redirects = 0
    package var method = "GET"
    /// Why the attempt failed, if it did.
    package var failure: TransferFailure?
    /// Another source of the download may take the piece.
    package var hasOtherSource = false
    package var cancelled = false
    /// The attempt received body bytes.
    package var progressed = false
    /// The piece's attempts that moved nothing, before this one.
    package var failures = 0
    package var retryAfterSeconds: Int64 = 0
  }

  /// What becomes of a segmented download after a piece's attempt.
  package enum PieceStep: Equatable {
    /// The source's pieces go where it points.
    case follow(url: String, headers: [String])
    /// The download goes on as one stream (its first source cannot serve ranges faithfully).
    case oneStream
    /// The source serves no more pieces; with a failure, it is also set aside for the task.
    case dropSource(TransferFailure?)
    /// The piece is asked again, not before `notBefore`; `failures`: its attempts that moved nothing.
    case again(failures: Int, notBefore: UInt64)
    /// The download fails at this piece (it may go on from another source: `segmentsFailed`).
    case fail(TransferFailure)
    /// The piece is done or continues: the download goes on.
    case goOn
  }

  /// A piece's attempt ended: a source that redirects is followed (within the limit, the same
  /// method), one that answers ranges with the whole file or other bytes serves no more pieces
  /// (the first source: the download goes on as one stream), a mirror that fails is set aside while
  /// another source serves (a 401 or 403 to a range is that mirror's own), and the rest is the
  /// piece's retries, each with the backoff of every retry, doubled with each try that moved
  /// nothing.
  package func pieceEnded(_ end: PieceEnd, now: UInt64) -> PieceStep {
    var failure = end.failure
    if let redirect = end.redirect, !end.cancelled {
      switch redirect {
      case .success(let next) where next.method == end.method && end.redirects <= Self.redirectLimit:
        return .follow(url: next.url, headers: next.sourceHeaders)
      case .success:
        failure = TransferFailure(code: .tooManyRedirects, message: "more than \(Self.redirectLimit) redirects")
      case .failure(let problem):
        failure = problem
      }
    } else if end.answeredWhole {
      return end.source == 0 ? .oneStream : .dropSource(nil)
    }
    guard var failure else { return .goOn }
    if failure.code == .resumeRestart || failure.code == .rangeMismatch {
      // The source answers ranges with other bytes: it serves one stream at most.
      return end.source == 0 ? .oneStream : .dropSource(nil)
    }
    if FailureClassifier.isSourceFailure(failure) || end.source != 0, end.hasOtherSource, !end.cancelled {
      // Another source takes the piece at once; this one is set aside.
      return .dropSource(failure)
    }
    let failures = end.progressed ? end.failures : end.failures + 1
    guard FailureClassifier.isRetryable(failure), failures < max(1, rules.retry.attempts) else {
      failure.attempts = attempts
      return .fail(failure)
    }
    let delay = rules.retry.delay(
      exponent: failures - 1, retryAfterSeconds: end.retryAfterSeconds, random: rules.jitter)
    return .again(failures: failures, notBefore: end.progressed ? now : now + UInt64(max(0, delay.milliseconds)))
  }

  /// A segmented download failed for good at a piece from source `source` (an index in `sources`;
  /// nil: the one in use), with `kept` on disk from byte 0 and `extents` in all: it goes on from the
  /// next source when there is one (keeping the extents only under a strong ETag), else fails.
  package mutating func segmentsFailed(
    _ failure: TransferFailure, source: Int?, kept: TransferSpec.Resume, extents: [ByteExtent], cancelled: Bool
  ) -> [Action] {
    var failure = failure
    failure.attempts = attempts
    guard var list = sources, !cancelled, FailureClassifier.isSourceFailure(failure) else {
      return [.complete(.failure(failure))]
    }
    let failed = source ?? list.current
    var actions: [Action] = [.sourceFailed(url: list.sources[failed].url, failure)]
    list.setAside(failed, failure)
    sources = list
    guard !list.aside[list.current] else {
      return actions + [.complete(.failure(list.allFailed(attempts: attempts)))]
    }
    let keep = SourceList.mayContinue(kept)
    movedOn()
    actions.append(
      .switchSource(list.sources[list.current], resume: keep ? kept : nil, extents: keep ? extents : []))
    return actions
  }
}
