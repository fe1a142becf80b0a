import BatchDLSupport

/// A job's life in the engine, as a value: the engine tells it what happened (its turn came, an
/// attempt ended, a body was checked, a segmented download failed) and carries out the actions it
/// answers, in order. Whether a job is sent, sent again, retried after a backoff, moved to another
/// source, fetched again whole, repaired piece by piece, placed or failed is decided here and
/// nowhere else; `JobLifeTests` drive it without sockets.
///
/// What it does not own: the bytes (the transfers and the segmented download, which report what
/// they saw), and the graph of jobs (which job waits on which, `Engine.complete`).
package struct JobLife {
  /// The rules of a job's tries, from its spec.
  package struct Rules {
    package var retry: RetryPolicy
    /// `timeouts.resource`: the time all tries of the job may take, across runs.
    package var resourceLimit: Interval?
    /// Milliseconds spent on the job in earlier runs.
    package var spentBefore: Int64 = 0
    /// `waits_for_connectivity`: connect and DNS failures wait for the network within the budget.
    package var waitsForConnectivity = false
    /// Piece digests are known: a complete body is checked against them.
    package var checksPieces = false
    /// A size or a whole-file digest is expected: a complete body resumed from kept bytes is
    /// checked against them in the engine, so that a failure fetches it again whole first.
    package var checksContent = false
    /// Draws a backoff's jitter from `0...bound` (`RetryPolicy.delay`; tests pass a fixed one).
    package var jitter: @Sendable (Int64) -> Int64 = { Int64.random(in: 0...$0) }

    package init(retry: RetryPolicy, resourceLimit: Interval? = nil) {
      self.retry = retry
      self.resourceLimit = resourceLimit
    }

    package init(spec: TransferSpec) {
      retry = spec.retry
      resourceLimit = spec.resourceTimeout
      spentBefore = spec.spentBefore
      waitsForConnectivity = spec.waitsForConnectivity
      checksPieces = spec.pieces != nil
      checksContent = spec.expectedDigest != nil || spec.expectedSize != nil
    }

    /// The limit a job that waits (for the network policy, for connectivity) waits within.
    package var waitLimit: Int64 { resourceLimit?.milliseconds ?? TransferDefaults.resourceLimitMilliseconds }
  }

  /// What the engine does, in the order given.
  package enum Action {
    // For the observer.
    case sourceFailed(url: String, TransferFailure)
    case piecesFailed(pieces: [Int], urls: [String], message: String)
    case willRetry(after: Interval, TransferFailure)
    // The job.
    /// Send the request, within `budget`, bound to `interface` when the network policy says so.
    case send(budget: Interval?, interface: String?)
    /// Continue the segmented download from its extents on disk (its kept pieces, a repair).
    case resumeSegments
    /// The network policy says wait: ask again at this time.
    case askPolicyAgain(at: UInt64)
    /// Follow a redirect the engine follows itself (the next hop's spec is `TransferSpec.following`).
    case follow(location: String, status: Int)
    /// Send the request again at once, without an attempt charged; `fromStart`: without the kept
    /// bytes (a server that cannot continue them, a joined file whose digest failed).
    case sendAgain(fromStart: Bool)
    /// Fetch the file again whole, as one stream, without its pieces on disk.
    case restartWhole
    /// Check the complete body against what the job expects (`contentChecked` takes the verdict).
    case check(TransferResult)
    /// Try again at `at` (the engine's clock), continuing from `resume` when it is given.
    case retry(at: UInt64, resume: TransferSpec.Resume?)
    /// Go on from another source with its own retries; `extents`: the pieces on disk to keep (nil:
    /// leave them as they are).
    case switchSource(TransferSource, resume: TransferSpec.Resume?, extents: [ByteExtent]?)
    /// Ask again the pieces that failed their digests, keeping the rest.
    case repair(Repair)
    /// Checkpoint what the attempt wrote, for the next run to continue.
    case keepPartial
    /// The job's end.
    case complete(Result<TransferResult, TransferFailure>)
  }

  /// Pieces of a complete download to ask again (docs/sources.md, "Pieces").
  package struct Repair {
    /// The source to ask first (nil: the one the job uses).
    package var source: TransferSource?
    /// The bytes on disk that passed their digests.
    package var kept: [ByteExtent]
    /// Where the kept bytes end from byte 0, under the validator of the repair.
    package var resume: TransferSpec.Resume
    /// Each bad range with the sources (indices in `sources`) that sent bytes of it.
    package var blame: [(extent: ByteExtent, sources: Set<Int>)]
  }

  package var rules: Rules
  /// The URL and its mirrors, for a download that has mirrors.
  package var sources: SourceList?
  /// The URL the job was made with (before redirects): the one source of a download without
  /// mirrors, which `pieces_failed` names.
  package var firstURL = ""

  package private(set) var attempts = 0
  /// Attempts made on earlier sources: each source has the retries of `rules.retry`.
  package private(set) var attemptsBefore = 0
  /// When the job's turn came in this run (the engine's clock).
  package private(set) var startedAt: UInt64?
  /// Body bytes received from the network in this run, over all attempts.
  package private(set) var transferred: Int64 = 0
  /// Redirects followed by the engine in the current attempt.
  package private(set) var redirects = 0
  /// Attempts lost with a multiplexed connection before any response, not charged (at most
  /// `connectionLossLimit`).
  package private(set) var connectionLosses = 0
  /// The download is fetched as one stream from now on (too small, no ranges, a source that
  /// answered a range with the whole file or with other bytes, a digest that failed).
  package var segmentsOff = false
  /// A segmented file whose digest failed was fetched again whole.
  package private(set) var refetchedWhole = false
  /// A resumed file whose size or digest failed was fetched again whole.
  package private(set) var refetchedResumed = false
  /// Times pieces that failed their digests were fetched again.
  package private(set) var pieceRepairs = 0
  /// The pieces that failed are being fetched again: the rest of the file is kept as extents,
  /// whatever `segmentsOff` says.
  package var repairing = false

  /// Requests lost with a multiplexed connection before any of their response go again free at
  /// most this many times (each after libcurl's own five tries): at many streams against a server
  /// that ends connections every few requests (nginx's `keepalive_requests`), one request can be
  /// among the refused streams many times in a row before its turn comes.
  package static let connectionLossLimit = 10
  /// Redirects the engine follows itself, at most (as libcurl).
  package static let redirectLimit = 10

  package init(rules: Rules) {
    self.rules = rules
  }

  /// The life of a job whose spec is known (its turn came): its rules and its sources.
  package init(spec: TransferSpec) {
    rules = Rules(spec: spec)
    sources =
      spec.mirrors.isEmpty
      ? nil : SourceList([TransferSource(url: spec.url, hostKey: spec.hostKey, headers: [])] + spec.mirrors)
    firstURL = spec.url
  }

  /// Time charged against `timeouts.resource`: earlier runs plus this one so far.
  package func spent(now: UInt64) -> Int64 {
    rules.spentBefore + Int64(now &- (startedAt ?? now))
  }

  // MARK: - Events

  /// The job's turn came (or came again): `refused` is a reason found before sending, `policy`
  /// what the network policy says now, `segmentsOnDisk` whether the spec continues pieces kept on
  /// disk (extents, with the length and the partial file known).
  package mutating func turnCame(
    now: UInt64, refused: TransferFailure? = nil, policy: Admission? = nil, segmentsOnDisk: Bool = false
  ) -> [Action] {
    if let refused { return [.complete(.failure(refused))] }
    var interface: String?
    switch policy {
    case .go(let bound):
      interface = bound
    case .wait(let reason):
      if startedAt == nil { startedAt = now }
      guard spent(now: now) < rules.waitLimit else {
        return [.complete(.failure(TransferFailure(code: .policy, message: reason + "; stopped waiting")))]
      }
      return [.askPolicyAgain(at: now + 1000)]
    case .defer(let reason):
      return [.complete(.failure(TransferFailure(code: .policy, message: reason)))]
    case nil:
      break
    }
    if startedAt == nil { startedAt = now }
    var budget: Interval?
    if let resource = rules.resourceLimit {
      let left = resource.milliseconds - spent(now: now)
      guard left > 0 else { return [.complete(.failure(resourceSpent(resource)))] }
      budget = Interval(milliseconds: left)
    }
    attempts += 1
    if segmentsOnDisk, repairing || !segmentsOff { return [.resumeSegments] }
    return [.send(budget: budget, interface: interface)]
  }

  /// An attempt could not start (its handle could not be made).
  package mutating func couldNotStart(_ failure: TransferFailure) -> [Action] {
    var failure = failure
    failure.attempts = attempts
    return [.complete(.failure(failure))]
  }

  /// Body bytes an attempt or a piece received, from source `index` of `sources` (nil: the one in use).
  package mutating func received(_ count: Int64, from index: Int? = nil) {
    transferred += count
    if let index {
      sources?.received(count, from: index)
    } else {
      sources?.received(count)
    }
  }

  /// What an attempt of one stream (not a piece) ended with.
  package struct AttemptEnd {
    package var outcome: Result<TransferResult, TransferFailure>
    /// A redirect the engine follows itself (the attempt ended without an error).
    package var redirect: (location: String, status: Int)?
    package var cancelled = false
    package var bodyBytes: Int64 = 0
    /// The response head was complete.
    package var responseComplete = false
    /// The request may have shared an HTTP/2 connection that a GOAWAY ended.
    package var multiplexed = false
    /// The server's `Retry-After`, in seconds (0: none).
    package var retryAfterSeconds: Int64 = 0
    /// Where what this attempt wrote may be continued from, when the response allows it.
    package var resumePoint: TransferSpec.Resume?
    /// What this attempt wrote is on disk (a file sink).
    package var wroteFile = false

    package init(_ outcome: Result<TransferResult, TransferFailure>) {
      self.outcome = outcome
    }
  }

  /// An attempt of one stream ended.
  package mutating func attemptEnded(_ end: AttemptEnd, now: UInt64) -> [Action] {
    if let redirect = end.redirect, !end.cancelled {
      redirects += 1
      attempts -= 1
      guard redirects <= Self.redirectLimit else {
        return [
          .complete(
            .failure(
              TransferFailure(
                code: .tooManyRedirects, message: "more than \(Self.redirectLimit) redirects", attempts: attempts + 1)))
        ]
      }
      return [.follow(location: redirect.location, status: redirect.status)]
    }
    redirects = 0
    if !end.cancelled, case .success(var result) = end.outcome,
      sources != nil || rules.checksPieces || (rules.checksContent && result.resumedFrom > 0)
    {
      result.sources = sources?.used ?? []
      return [.check(result)]
    }
    return failedOrDone(end.outcome, end, now: now)
  }

  /// A redirect's next hop was refused (`TransferSpec.following`).
  package mutating func redirectRefused(_ failure: TransferFailure) -> [Action] {
    var failure = failure
    failure.attempts = attempts + 1
    return [.complete(.failure(failure))]
  }

  /// What `check` found: the piece digests' verdict, then what the whole-file checks found
  /// (`problem`, from `BodyCheck` on size and digest) when the pieces did not decide.
  /// `segmented`: the body was joined from pieces of a segmented download; `end`: the attempt of
  /// one stream it came from (its failure goes on as that attempt's).
  package mutating func contentChecked(
    _ result: TransferResult, pieces: PieceVerdict, problem: TransferFailure?, end: AttemptEnd?, now: UInt64
  ) -> [Action] {
    var outcome: Result<TransferResult, TransferFailure> = .success(result)
    switch pieces {
    case .bad(let bad):
      return repairPieces(bad, total: result.size)
    case .failed(var failure):
      failure.attempts = attempts
      outcome = .failure(failure)
    case .verified, .unchecked:
      if case .verified = pieces, end == nil { repairing = false }
      if var problem {
        problem.attempts = attempts
        if let end {
          // Bytes of two sources that do not make the file: fetch it whole from this one.
          if sources?.refetchWhole(after: problem, result) ?? false {
            refetchedResumed = true
            return [.sendAgain(fromStart: true)]
          }
          // Kept bytes and the rest that do not make the file (the file changed under the same
          // validators): fetch it whole, once, before the source is blamed.
          if result.resumedFrom > 0, !refetchedResumed,
            problem.code == .checksumMismatch || problem.code == .sizeMismatch
          {
            refetchedResumed = true
            return [.sendAgain(fromStart: true)]
          }
          outcome = .failure(problem)
          return failedOrDone(outcome, end, now: now)
        }
        // Which piece of a segmented file is wrong is unknown: it is fetched again whole, as one
        // stream, once.
        guard refetchedWhole else {
          refetchedWhole = true
          segmentsOff = true
          return [.restartWhole]
        }
        outcome = .failure(problem)
      }
    }
    guard let end else { return [.complete(outcome)] }
    return failedOrDone(outcome, end, now: now)
  }

  /// The job goes on from another source, or asks again pieces it had: the tries so far count
  /// against the sources before.
  package mutating func movedOn() {
    attemptsBefore = attempts
  }

  // MARK: - Decisions

  /// After an attempt (its checks done): the same request again, a retry after a backoff, the
  /// next source, or the end.
  private mutating func failedOrDone(
    _ outcome: Result<TransferResult, TransferFailure>, _ end: AttemptEnd, now: UInt64
  ) -> [Action] {
    guard case .failure(var failure) = outcome, !end.cancelled else { return [.complete(outcome)] }
    if failure.code == .network, !end.responseComplete, end.bodyBytes == 0, end.multiplexed,
      connectionLosses < Self.connectionLossLimit
    {
      // A request refused or lost when the server ended its HTTP/2 connection (GOAWAY past the
      // last stream it took), before any of its response: sent again at once, without an attempt
      // charged, as libcurl does a few times itself before it gives up.
      connectionLosses += 1
      attempts -= 1
      return [.sendAgain(fromStart: false)]
    }
    if failure.code == .resumeRestart {
      // The server cannot continue this partial file: start over at once, without an attempt charged.
      attempts -= 1
      return [.sendAgain(fromStart: true)]
    }
    // With another source to go to, a failure moves on at once rather than wait out a backoff here.
    if FailureClassifier.isRetryable(failure), !(sources?.hasNext ?? false),
      attempts - attemptsBefore < rules.retry.attempts || waitsForConnectivity(failure, now: now)
    {
      let delay = rules.retry.delay(
        exponent: attempts - attemptsBefore - 1, retryAfterSeconds: end.retryAfterSeconds, random: rules.jitter)
      if let resource = rules.resourceLimit, spent(now: now) + delay.milliseconds >= resource.milliseconds {
        failure.message += "; no time left in timeouts.resource (\(resource)) to try again"
        return [.complete(.failure(failure))]
      }
      // Continue from what this attempt wrote when the response allows it; else start over.
      return [.willRetry(after: delay, failure), .retry(at: now + UInt64(delay.milliseconds), resume: end.resumePoint)]
    }
    var actions: [Action] = []
    if var list = sources, FailureClassifier.isSourceFailure(failure) {
      actions.append(.sourceFailed(url: list.url, failure))
      let next = list.setAside(failure)
      sources = list
      if let next {
        let keeping = failure.code == .checksumMismatch || failure.code == .sizeMismatch ? nil : end.resumePoint
        movedOn()
        actions.append(
          .switchSource(next, resume: keeping.flatMap { SourceList.mayContinue($0) ? $0 : nil }, extents: nil))
        return actions
      }
      failure = list.allFailed(attempts: attempts)
    }
    // The task failed for good: what this attempt wrote stays for the next run to continue, unless
    // the failure wants none of it (`too-large`).
    if end.wroteFile, end.resumePoint != nil, !failure.code.discardsPartial { actions.append(.keepPartial) }
    actions.append(.complete(.failure(failure)))
    return actions
  }

  /// Whether a job keeps waiting for the network after `failure` (`waits_for_connectivity`): only
  /// for connect and DNS failures, within the resource budget, or ten minutes without one.
  private func waitsForConnectivity(_ failure: TransferFailure, now: UInt64) -> Bool {
    guard rules.waitsForConnectivity, failure.code == .connect || failure.code == .dns else { return false }
    return spent(now: now) < rules.waitLimit
  }

  private func resourceSpent(_ resource: Interval) -> TransferFailure {
    TransferFailure(
      code: .timeout, message: "timeouts.resource (\(resource)) spent before the task could finish",
      attempts: attempts)
  }

  /// Pieces failed their digests: they are asked again from a source other than the one that sent
  /// them when one is left (that one is set aside), as many times as the download has sources, and
  /// one more.
  private mutating func repairPieces(_ bad: PieceVerdict.BadPieces, total: Int64) -> [Action] {
    var failure = bad.failure
    failure.attempts = attempts
    let blamed = bad.blame.reduce(into: Set<Int>()) { $0.formUnion($1.sources) }
    // Without mirrors, source 0 is the download's one URL, as it was asked (before redirects).
    let urls = blamed.sorted().map { index in sources.map { $0.sources[index].url } ?? firstURL }
    var actions: [Action] = [.piecesFailed(pieces: bad.pieces, urls: urls, message: failure.message)]
    pieceRepairs += 1
    guard pieceRepairs <= (sources?.sources.count ?? 1) + 1 else {
      failure.message += ", still after \(pieceRepairs - 1) repairs"
      return actions + [.complete(.failure(failure))]
    }
    var source: TransferSource?
    if var list = sources {
      // The sources that sent bad pieces are set aside while another one is left to ask.
      for index in blamed.sorted() where list.healthy.contains(where: { !blamed.contains($0) }) {
        actions.append(.sourceFailed(url: list.sources[index].url, failure))
        list.setAside(index, failure)
      }
      sources = list
      source = list.sources[list.current]
    }
    let kept = ByteExtent.gaps(in: ByteExtent(start: 0, end: total), besides: bad.blame.map(\.extent))
    repairing = true
    movedOn()
    actions.append(
      .repair(
        Repair(
          source: source, kept: kept,
          resume: TransferSpec.Resume(
            offset: kept.first.map { $0.start == 0 ? $0.end : 0 } ?? 0, validator: bad.validator, total: total),
          blame: bad.blame)))
    return actions
  }
}
