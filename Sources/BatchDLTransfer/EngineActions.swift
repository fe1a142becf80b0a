import BatchDLSupport
import CCurl
import Dispatch
import Foundation

/// How the engine carries out what a job's life decides (JobLife): each finished transfer becomes an
/// event, each action a change of the job's spec, a timer, a queue or an end.
extension Engine {
  package func finish(handle: UnsafeMutableRawPointer, code: CURLcode) {
    guard let transfer = active[handle] else { return }
    land(transfer)
    defer { recycle(transfer.easy, session: transfer.spec.sessionKey) }
    noteProtocol(transfer)
    let job = transfer.job
    lastSync[job] = nil
    firstSeen[job] = nil
    if let piece = transfer.piece {
      // A piece of a download that ended already (it failed, or went on as one stream) is dropped.
      if let download = segmented[job] {
        finishPiece(job, transfer, piece, download, code: code)
        return
      }
      if transfer.isRangedPiece { return }
    }
    let cancelled = cancelled.isSet
    var end: JobLife.AttemptEnd
    if code == CURLE_OK, !cancelled, let location = transfer.redirect {
      end = JobLife.AttemptEnd(.failure(TransferFailure(code: .tooManyRedirects, message: "")))
      end.redirect = (location, transfer.head.status)
    } else {
      self.built(job).life.received(transfer.bodyBytesReceived)
      let life = self.built(job).life
      end = JobLife.AttemptEnd(transfer.outcome(code, attempts: life.attempts, transferred: life.transferred))
      end.cancelled = cancelled
      end.bodyBytes = transfer.bodyBytesReceived
      end.responseComplete = transfer.parser.complete
      end.multiplexed = transfer.spec.mayMultiplex || admission.multiplexedHosts.contains(transfer.spec.hostKey)
      end.retryAfterSeconds = Int64(transfer.easy.info(offset: CURLINFO_RETRY_AFTER))
      end.resumePoint = transfer.resumePoint
      end.wroteFile = transfer.fileSink != nil
    }
    perform(self.built(job).life.attemptEnded(end, now: Self.now()), job, now: Self.now(), transfer: transfer, end: end)
  }

  /// Carries out what a job's life decided, in order. `transfer` and `end`: the attempt of one
  /// stream the decision came from.
  package func perform(
    _ actions: [JobLife.Action], _ job: Int, now: UInt64, transfer: Transfer? = nil, end: JobLife.AttemptEnd? = nil,
    writers: [PieceWriter] = [], validator: ResumeValidator = .digest
  ) {
    for action in actions {
      switch action {
      case .sourceFailed(let url, let failure):
        observer?.transferSourceFailed(job, url: url, failure: failure)
      case .piecesFailed(let pieces, let urls, let message):
        observer?.transferPiecesFailed(job, pieces: pieces, urls: urls, message: message)
      case .willRetry(let delay, let failure):
        observer?.transferWillRetry(job, after: delay, failure: failure)
      case .send(let budget, let interface):
        send(job, budget: budget, interface: interface, now: now)
      case .resumeSegments:
        let spec = built(job).spec
        guard let resume = spec.resume, let total = resume.total, let path = spec.target.path else { continue }
        continueSegmented(job, path: path, total: total, validator: resume.validator, now: now)
      case .askPolicyAgain(let due):
        timers.push(Timer(due: due, job: job))
      case .follow(let location, let status):
        let built = built(job)
        switch built.spec.following(location, status: status) {
        case .success(let next):
          built.spec = next
          start(job, now: Self.now())
        case .failure(let failure):
          perform(self.built(job).life.redirectRefused(failure), job, now: now)
        }
      case .sendAgain(let fromStart):
        if fromStart { built(job).spec.resume = nil }
        enqueue(job)
      case .restartWhole:
        let built = built(job)
        built.spec.resume = nil
        built.spec.extents = []
        enqueue(job)
      case .check(let result):
        let spec = built(job).spec
        let writers =
          end != nil
          ? [
            PieceWriter(
              extent: ByteExtent(start: 0, end: result.size), source: self.built(job).life.sources?.current ?? 0)
          ]
          : writers
        let pieces =
          cancelled.isSet
          ? PieceVerdict.unchecked
          : PieceVerdict(result, spec: spec, writers: writers, validator: transfer?.validator ?? validator)
        // The whole-file checks decide where the pieces did not.
        var problem: TransferFailure?
        switch pieces {
        case .verified, .unchecked: problem = SourceList.contentProblem(result, spec: spec)
        case .bad, .failed: break
        }
        perform(
          self.built(job).life.contentChecked(result, pieces: pieces, problem: problem, end: end, now: Self.now()), job,
          now: now, transfer: transfer, end: end)
      case .retry(let due, let resume):
        let built = built(job)
        built.spec.resume = resume
        built.spec.conditional = nil
        timers.push(Timer(due: due, job: job))
      case .switchSource(let next, let resume, let extents):
        let built = built(job)
        built.spec.resume = resume
        if let extents {
          built.spec.extents = extents
          built.spec.rangeEnd = nil
        }
        switchSource(job, to: next)
      case .repair(let repair):
        let built = built(job)
        if let next = repair.source {
          built.spec.url = next.url
          built.spec.hostKey = next.hostKey
          built.spec.sourceHeaders = next.headers
        }
        built.spec.extents = repair.kept
        built.spec.rangeEnd = nil
        built.spec.conditional = nil
        built.spec.resume = repair.resume
        built.repairBlame = repair.blame
        requeue(job)
      case .keepPartial:
        if let transfer, let sink = transfer.fileSink, let point = checkpoint(transfer, durable: sink.syncNow()) {
          observer?.transferCheckpoints([point])
        }
      case .complete(let outcome):
        if case .success = outcome, let transfer, end != nil { announce(transfer) }
        complete(job, outcome)
      }
    }
  }

  /// Goes on from the next source: its own retries and the caps of its host (the kept bytes are
  /// the life's to decide: `JobLife`).
  package func switchSource(_ job: Int, to next: TransferSource) {
    let built = built(job)
    built.spec.conditional = nil
    built.spec.url = next.url
    built.spec.hostKey = next.hostKey
    built.spec.sourceHeaders = next.headers
    requeue(job)
  }

  /// Queues a job again on the host of its spec's URL.
  package func requeue(_ job: Int) {
    let built = built(job)
    jobs[job].key = admission.queue(
      TransferQueue(
        session: built.spec.sessionKey, host: built.spec.hostKey, sessionLimit: built.spec.sessionLimit,
        hostLimit: built.spec.hostLimit))
    enqueue(job)
  }

}

extension Engine {
  /// Counts the requests `transfer` sent (`requestsSent`) as it leaves the engine, however it
  /// ends: finished, a segment stopped, or cut by a signal.
  package func countRequests(of transfer: Transfer) {
    let sent = Self.requestsSent(by: transfer.easy)
    requestsSent += sent
    if countsRequestsPerJob, sent > 0 { requestsSentByJob[transfer.job, default: 0] += sent }
  }

  /// Requests a finished transfer sent: none when it never got a request out (no connection),
  /// else one and each redirect libcurl followed itself.
  static func requestsSent(by easy: EasyHandle) -> Int {
    requestsSent(
      requestBytes: easy.info(CURLINFO_REQUEST_SIZE), status: easy.info(CURLINFO_RESPONSE_CODE),
      redirects: easy.info(CURLINFO_REDIRECT_COUNT))
  }

  /// Requests a transfer sent, from what libcurl says of it, finished or cut: none when no byte of
  /// a request went out and no response came (no connection), else one and each redirect libcurl
  /// followed itself. A transfer cut in its body (a signal, a segment stopped) was sent.
  package static func requestsSent(requestBytes: Int, status: Int, redirects: Int) -> Int {
    requestBytes > 0 || status > 0 ? 1 + max(0, redirects) : 0
  }
}
