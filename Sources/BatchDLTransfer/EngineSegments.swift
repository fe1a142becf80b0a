import BatchDLSupport
import CCurl
import Dispatch
import Foundation

extension Engine {
  /// Splits a download whose first stream has shown that the file is long enough and ranged: the
  /// stream keeps the first piece and stops at its end; the other pieces get connections of their
  /// own as the caps allow (docs/sources.md, "Segments").
  package func considerSegments(_ transfer: Transfer) {
    let job = transfer.job
    guard segmented[job] == nil, !cancelled.isSet, let built = jobs[job].built,
      let path = transfer.spec.target.path, let sink = transfer.fileSink, sink.isOnDisk,
      let admission = transfer.admission
    else { return }
    let head = transfer.head
    let minimum = max(1, transfer.spec.minSegmentSize)
    var plainGet = transfer.spec.method(is: "GET")
    if case .none = transfer.spec.body {} else { plainGet = false }
    // Only a plain GET is asked again in ranges (a POST would be sent again with each).
    guard
      self.built(job).life.mayUseSegments(
        ranged: head.status == 206 || (head["accept-ranges"]?.lowercased().contains("bytes") ?? false),
        plainGet: plainGet, total: admission.total, validated: transfer.validator != nil, onDisk: sink.count,
        minimum: minimum),
      let total = admission.total, let validator = transfer.validator
    else { return }
    let download: SegmentedDownload
    do {
      download = try SegmentedDownload(
        path: path, total: total, validator: validator, etag: head.strongETag, lastModified: head["last-modified"],
        url: transfer.easy.info(string: CURLINFO_EFFECTIVE_URL) ?? transfer.spec.url,
        connections: transfer.spec.segments, minSegmentSize: minimum,
        covered: admission.start > 0 ? [ByteExtent(start: 0, end: admission.start)] : [])
    } catch {
      self.built(job).life.segmentsOff = true
      return
    }
    let position = sink.count
    addSources(download, built, self.built(job).life.sources, hostKey: transfer.spec.hostKey, etag: head.strongETag)
    let first = Piece(
      start: admission.start, end: download.aligned(position + download.chunkSize, limit: total), next: position)
    first.synced = max(admission.start, sink.durable)
    first.transfer = transfer
    first.source = 0
    download.sources[0].running = 1
    transfer.piece = first
    download.add(first)
    download.head = head
    download.started = 1
    segmented[job] = download
    observer?.transferSegmentStarted(job, start: first.start, length: first.end - first.start, url: download.url)
    fillPieces(job, now: Self.now())
  }

  /// The download's sources besides the first: the job's healthy mirrors, when bytes from them may
  /// share the file (docs/sources.md, "When bytes may be combined"). Under a known digest (the
  /// task's `sha256`, or piece digests) they are asked without `If-Range`: each server has
  /// validators of its own, and the digest decides. Without one, only under the first source's
  /// strong ETag, as `If-Range`: a mirror with another version answers `200` and is dropped.
  /// `repair`: the pieces are asked without `If-Range` from every source, the first one included.
  private func addSources(
    _ download: SegmentedDownload, _ built: BuiltJob, _ list: SourceList?, hostKey: String, etag: String?,
    repair: Bool = false
  ) {
    if let pieces = built.spec.pieces, pieces.fits(total: download.total) { download.alignment = pieces.length }
    download.sources[0].hostKey = hostKey
    download.sources[0].headers = built.spec.sourceHeaders
    download.sources[0].listIndex = list?.current
    if repair { download.sources[0].validator = .digest }
    guard let list else { return }
    let guarded = built.spec.expectedDigest != nil || built.spec.pieces != nil
    guard let validator = guarded ? ResumeValidator.digest : etag.map(ResumeValidator.etag) else { return }
    for index in list.healthy where index != list.current {
      let source = list.sources[index]
      download.sources.append(
        PieceSource(
          url: source.url, hostKey: source.hostKey, validator: validator, headers: source.headers, listIndex: index))
    }
  }

  /// Continues a segmented download from its checkpoint's extents: every missing range is a piece.
  package func continueSegmented(_ job: Int, path: String, total: Int64, validator: ResumeValidator, now: UInt64) {
    let built = built(job)
    let download: SegmentedDownload
    do {
      download = try SegmentedDownload(
        path: path, total: total, validator: validator, etag: validator.etag,
        lastModified: validator.lastModified, url: built.spec.url,
        connections: built.spec.segments, minSegmentSize: max(1, built.spec.minSegmentSize),
        covered: built.spec.extents)
    } catch {
      perform(self.built(job).life.couldNotStart(error), job, now: now)
      return
    }
    let repairing = self.built(job).life.repairing
    addSources(
      download, built, self.built(job).life.sources, hostKey: built.spec.hostKey, etag: validator.etag,
      repair: repairing)
    if repairing { download.blame = built.repairBlame }
    download.planGaps()
    segmented[job] = download
    if download.isComplete {
      completeSegmented(job, download)
      return
    }
    fillPieces(job, now: now)
  }

  /// Starts waiting pieces while the download's connections and the caps allow; `steal`: a
  /// connection that finished its piece may take over half of the largest remaining one.
  package func fillPieces(_ job: Int, now: UInt64, steal: Bool = false) {
    guard let download = segmented[job], let built = jobs[job].built else { return }
    var waiting = download.waiting(now: now)
    var stole = false
    let hostLimit = built.spec.hostLimit
    let session = built.spec.sessionKey
    let sessionLimit = built.spec.sessionLimit
    while download.running < download.connections,
      admission.hasRoom(session: session, sessionLimit: sessionLimit, host: "", hostLimit: Int.max),
      let source = download.pickSource(room: { self.admission.hostHasRoom($0, limit: hostLimit) })
    {
      let piece: Piece
      if !waiting.isEmpty {
        piece = waiting.removeFirst()
      } else if let chunk = download.nextChunk() {
        piece = chunk
      } else if steal, !stole, let taken = download.steal() {
        stole = true
        piece = taken
      } else {
        break
      }
      var from = source
      if !download.blame.isEmpty {
        // A bad range goes to a source that did not send it, when one has room.
        let blamed = download.blamed(for: piece)
        if let index = download.sources[source].listIndex, blamed.contains(index),
          let other = download.pickSource(room: { self.admission.hostHasRoom($0, limit: hostLimit) }, avoiding: blamed)
        {
          from = other
        }
      }
      startPiece(job, piece, download, built, source: from, now: now)
      if segmented[job] == nil { return }
    }
  }

  private func startPiece(
    _ job: Int, _ piece: Piece, _ download: SegmentedDownload, _ built: BuiltJob, source: Int, now: UInt64
  ) {
    var spec = built.spec
    let from = download.sources[source]
    spec.url = from.url
    spec.hostKey = from.hostKey
    spec.sourceHeaders = from.headers
    spec.resume = .init(offset: piece.next, validator: from.validator, total: download.total)
    spec.rangeEnd = piece.end - 1
    spec.conditional = nil
    spec.extents = []
    let transfer: Transfer
    do {
      transfer = try makeTransfer(job, spec: spec, timeout: nil)
    } catch {
      piece.failures += 1
      piece.notBefore = now + 1000
      return
    }
    transfer.piece = piece
    transfer.pieceDescriptor = download.descriptor
    launch(transfer, now: now)
    piece.transfer = transfer
    piece.source = source
    if let index = from.listIndex { self.built(job).life.sources?.ask(index) }
    download.sources[source].running += 1
    download.started += 1
    observer?.transferSegmentStarted(job, start: piece.next, length: piece.end - piece.next, url: from.url)
  }

  /// A piece's transfer ended: the piece is done, continues later from where it stopped, or ends
  /// the segmented download (ranges that cannot be trusted, a failure for good), as the job's life
  /// decides (`JobLife.pieceEnded`).
  package func finishPiece(
    _ job: Int, _ transfer: Transfer, _ piece: Piece, _ download: SegmentedDownload, code: CURLcode
  ) {
    piece.transfer = nil
    let source = piece.source ?? 0
    download.sources[source].running -= 1
    received(transfer.bodyBytesReceived, job, download, source)
    var end = JobLife.PieceEnd()
    end.source = source
    end.cancelled = cancelled.isSet
    end.method = transfer.spec.method
    end.progressed = transfer.bodyBytesReceived > 0
    end.failures = piece.failures
    end.hasOtherSource = download.hasOtherSource(than: source)
    end.retryAfterSeconds = Int64(transfer.easy.info(offset: CURLINFO_RETRY_AFTER))
    if code == CURLE_OK, !end.cancelled, let location = transfer.redirect {
      // A source that redirects (followed here when the request carries secret headers): its
      // pieces go where it points, by the rule of every other hop (TransferSpec.following).
      download.sources[source].redirects += 1
      end.redirects = download.sources[source].redirects
      end.redirect = transfer.spec.following(location, status: transfer.head.status)
    } else if transfer.answeredWhole {
      end.answeredWhole = true
    } else if transfer.reachedEnd {
      if let sink = transfer.fileSink, case .failure(let problem) = sink.finish() { end.failure = problem }
    } else {
      switch transfer.outcome(code, attempts: self.built(job).life.attempts) {
      case .success:
        if !piece.isDone {
          end.failure = TransferFailure(
            code: .incomplete, message: "the server stopped at byte \(piece.next) of the range up to \(piece.end)")
        }
      case .failure(let problem):
        end.failure = problem
      }
    }
    if let sink = transfer.fileSink, end.redirect == nil, !end.answeredWhole {
      piece.next = max(piece.next, min(sink.count, piece.end))
    }
    let now = Self.now()
    switch self.built(job).life.pieceEnded(end, now: now) {
    case .follow(let url, let headers):
      download.sources[source].url = url
      download.sources[source].headers = headers
      fillPieces(job, now: now)
    case .oneStream:
      fallBackToOneStream(job, download)
    case .dropSource(let failure):
      dropSource(job, download, source, failure: failure, now: now)
    case .fail(let failure):
      failDownload(job, download, failure, source: download.sources[source].listIndex)
    case .again(let failures, let notBefore):
      piece.failures = failures
      piece.notBefore = notBefore
      if download.isComplete {
        completeSegmented(job, download)
      } else {
        fillPieces(job, now: now)
      }
    case .goOn:
      if download.isComplete {
        completeSegmented(job, download)
      } else {
        fillPieces(job, now: now, steal: true)
      }
    }
  }

  /// Counts a piece's bytes for its source (the report's `sources`).
  private func received(_ count: Int64, _ job: Int, _ download: SegmentedDownload, _ source: Int) {
    self.built(job).life.received(count, from: download.sources[source].listIndex)
  }

  /// Takes a source out of a segmented download: it failed (`failure`: it is also set aside for
  /// the task), or it answered a range with the whole file or other bytes (nil). Its pieces go to
  /// the other sources.
  private func dropSource(
    _ job: Int, _ download: SegmentedDownload, _ source: Int, failure: TransferFailure?, now: UInt64
  ) {
    download.sources[source].dropped = true
    if let failure, let list = self.built(job).life.sources, let index = download.sources[source].listIndex,
      !list.aside[index]
    {
      observer?.transferSourceFailed(job, url: list.sources[index].url, failure: failure)
      self.built(job).life.sources?.setAside(index, failure)
    }
    for piece in download.pieces where piece.transfer == nil && !piece.isDone {
      piece.notBefore = min(piece.notBefore, now)
    }
    guard download.sources.contains(where: { !$0.dropped }) else {
      fallBackToOneStream(job, download)
      return
    }
    fillPieces(job, now: now)
  }

  /// Stops every transfer of a segmented download but `keep`; returns the download's first stream
  /// when it was still running (it goes on alone).
  private func stopPieces(_ job: Int, _ download: SegmentedDownload) -> Transfer? {
    segmented[job] = nil
    var stream: Transfer?
    for piece in download.pieces {
      guard let transfer = piece.transfer else { continue }
      piece.transfer = nil
      if !transfer.isRangedPiece {
        stream = transfer
        continue
      }
      land(transfer)
      received(transfer.bodyBytesReceived, job, download, piece.source ?? 0)
      download.sources[piece.source ?? 0].running -= 1
    }
    return stream
  }

  /// The source answered a range with the whole file or with other bytes: the download goes on as
  /// one stream, the first one when it still runs, else from the bytes on disk from byte 0.
  private func fallBackToOneStream(_ job: Int, _ download: SegmentedDownload) {
    let built = built(job)
    self.built(job).life.segmentsOff = true
    self.built(job).life.repairing = false
    download.hasher?.stop()
    if let stream = stopPieces(job, download) {
      stream.piece = nil
      return
    }
    let written = ByteExtent.merged(download.pieces.map { ByteExtent(start: $0.start, end: $0.next) })
    let prefix = written.first.map { $0.start == 0 ? $0.end : 0 } ?? 0
    built.spec.extents = []
    built.spec.rangeEnd = nil
    built.spec.resume = prefix > 0 ? .init(offset: prefix, validator: download.validator, total: download.total) : nil
    enqueue(job)
  }

  /// A piece failed for good: what is on disk stays as a checkpoint; the download goes on from the
  /// next source when there is one (keeping the extents only under a strong ETag), else fails.
  private func failDownload(_ job: Int, _ download: SegmentedDownload, _ failure: TransferFailure, source: Int?) {
    download.hasher?.stop()
    if let stream = stopPieces(job, download) {
      land(stream)
      if let sink = stream.fileSink, let piece = stream.piece {
        _ = sink.syncNow()
        piece.next = max(piece.next, min(sink.count, piece.end))
      }
    }
    download.syncNow()
    let extents = download.syncedExtents
    // A file past `max_size` keeps no checkpoint: the run removes its partial file.
    if !failure.code.discardsPartial { observer?.transferCheckpoints([checkpoint(job, download, extents: extents)]) }
    let kept = TransferSpec.Resume(offset: download.syncedPrefix, validator: download.validator, total: download.total)
    perform(
      self.built(job).life.segmentsFailed(
        failure, source: source, kept: kept, extents: extents, cancelled: cancelled.isSet),
      job, now: Self.now())
  }

  /// Every piece is on disk: the file is hashed, checked against what the task expects, and handed
  /// to the run like a single stream's.
  private func completeSegmented(_ job: Int, _ download: SegmentedDownload) {
    segmented[job] = nil
    let life = self.built(job).life
    guard let sha256 = download.digest() else {
      complete(
        job,
        .failure(TransferFailure(code: .write, message: "cannot read back \(download.path)", attempts: life.attempts)))
      return
    }
    var result = TransferResult(
      head: download.head ?? ResponseHead(), size: download.total, sha256: sha256, file: download.path, body: nil,
      becameDownload: false, attempts: life.attempts, effectiveURL: download.url,
      resumedFrom: download.keptPrefix)
    result.fileIdentity = FileIdentity(descriptor: download.descriptor)
    result.transferred = life.transferred
    if let list = life.sources {
      result.sources = list.used(all: download.started > 1)
    } else if download.started > 1 {
      result.sources = [SourceBytes(url: download.url, bytes: life.transferred)]
    }
    let writers = download.pieces.map { piece in
      PieceWriter(
        extent: ByteExtent(start: piece.start, end: piece.next),
        // Without mirrors, the download's one source is 0.
        source: piece.source.map { download.sources[$0].listIndex ?? 0 })
    }
    perform([.check(result)], job, now: Self.now(), writers: writers, validator: download.validator)
  }

  package func checkpoint(_ job: Int, _ download: SegmentedDownload, extents: [ByteExtent]) -> TransferCheckpoint {
    TransferCheckpoint(
      job: job, path: download.path, durable: download.syncedPrefix, validator: download.validator,
      etag: download.etag, lastModified: download.lastModified, total: download.total, effectiveURL: download.url,
      extents: extents)
  }
}
