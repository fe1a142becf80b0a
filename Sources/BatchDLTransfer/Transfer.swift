import BatchDLSupport
import CCurl

#if canImport(Glibc)
  import Glibc
#endif

/// One attempt at one request: its easy handle, response parsing and body sink.
///
/// libcurl's callbacks reach it through an unretained pointer, which is safe because the transfer
/// owns its easy handle and frees it in `deinit`, after the engine has removed it from the multi.
package final class Transfer {
  package let job: Int
  package let spec: TransferSpec
  package let easy: EasyHandle
  package private(set) var parser = ResponseHeadParser()
  package private(set) var sink: BodySink?
  /// The file a body is uploaded from (`TransferConfiguration.swift` opens it); -1 without one.
  /// Internal, not private, for that extension.
  var uploadDescriptor: Int32 = -1
  private var uploadOffset: Int64 = 0
  package private(set) var becameDownload = false
  /// The byte the body continued from, once a 206 was accepted.
  package private(set) var resumedFrom: Int64 = 0
  /// Decides whether the response's body is what was asked for (every body passes through it).
  package let gate: BodyGate
  /// What the gate said of the final response's body, once asked.
  package private(set) var admission: BodyGate.Admission?
  /// A failure found by a callback (disk full, body too large), which aborts the transfer.
  package private(set) var callbackFailure: TransferFailure?
  /// Set by the engine when the response head arrived (for the `response` event).
  package var announced = false
  /// Set by the engine once it has reported `becameDownload`.
  package var announcedDownload = false
  /// Set by the engine once it has seen the protocol of the final response.
  package var versionSeen = false
  /// Bytes received in this attempt and the time of the last change, for progress.
  package private(set) var received: Int64 = 0
  /// Bytes moved either way (header, body, upload), for the idle limit: the engine compares it
  /// with what it saw at `lastMoveTime`.
  package private(set) var moved: Int64 = 0
  private var uploaded: Int64 = 0
  /// Set by the engine: `moved` when it last changed, and when (ms).
  package var lastMoved: Int64 = -1
  package var lastMoveTime: UInt64 = 0
  package private(set) var expected: Int64 = -1

  /// `easy`: a new handle, or a reset one of the session's that `accepts` the receive buffer.
  package init(job: Int, spec: consuming TransferSpec, timeout: Interval?, easy: EasyHandle) throws {
    self.job = job
    self.spec = spec
    gate = BodyGate(
      asked: spec.resume.map { BodyGate.Asked(start: $0.offset, end: spec.rangeEnd, total: $0.total) },
      ifRange: spec.resume?.validator.ifRange,
      conditional: spec.conditional != nil, isHead: spec.method(is: "HEAD"), decodes: spec.decodeContent,
      maxSize: spec.maxSize)
    self.easy = easy
    try configure(timeout: timeout)
  }

  deinit {
    if uploadDescriptor >= 0 { close(uploadDescriptor) }
  }

  /// The session's byte budget, when it has a `rate_limit`.
  package var bucket: RateBucket?
  /// True while the write callback has paused the transfer for want of budget.
  package private(set) var paused = false

  /// Continues a transfer paused by `bucket` (libcurl may deliver the held bytes right away).
  package func resume() {
    paused = false
    curl_easy_pause(easy.raw, Int32(ccurl_pause_cont))
  }

  /// The final response head, once complete.
  package var head: ResponseHead { parser.head }

  /// Set by the engine when the transfer fetches one piece of a segmented download: it writes no
  /// byte at or past `piece.end`, and stops there (`reachedEnd`).
  package var piece: Piece?
  /// The segmented download's file, which a ranged piece writes into at its offsets.
  package var pieceDescriptor: Int32 = -1
  /// The transfer stopped at its piece's end (a finished piece, not a failure).
  package private(set) var reachedEnd = false
  /// A ranged piece was answered with the whole file (`200`): nothing was written.
  package private(set) var answeredWhole = false

  /// Whether the transfer asks for a closed range of a segmented download (not its first stream).
  package var isRangedPiece: Bool { piece != nil && spec.rangeEnd != nil }

  /// The body's sink for an admitted response, made when the first body byte arrives: it keeps the
  /// partial file's bytes before the admitted range.
  private func makeSink(_ admission: BodyGate.Admission) -> BodySink? {
    if isRangedPiece {
      resumedFrom = admission.start
      return RangeSink(descriptor: pieceDescriptor, start: admission.start, path: spec.target.path ?? "")
    }
    switch spec.target {
    case .file(let path):
      do {
        let start = admission.start
        let sink = try FileSink(path: path, keeping: start, holding: true, reserving: reservedEnd(admission))
        resumedFrom = start
        return sink
      } catch {
        callbackFailure = error
        return nil
      }
    case .memory(let limit, let spill):
      let memory = MemorySink(limit: limit, spill: spill) { [weak self] spill in
        do throws(TransferFailure) {
          let file = try FileSink(path: spill.path)
          self?.becameDownload = true
          return file
        } catch {
          self?.callbackFailure = error
          return nil
        }
      }
      if let spill, spill.matches(parser.head) {
        guard memory.spillNow() else { return nil }
      }
      return memory
    }
  }

  /// Where the body of an admitted response will end, when that is known: the `Content-Length` of
  /// a whole body (else the task's expected size), the end of a range. The sink reserves the
  /// blocks up to there before it writes.
  private func reservedEnd(_ admission: BodyGate.Admission) -> Int64? {
    switch admission {
    case .whole(let length): return length ?? spec.expectedSize ?? spec.listedSize
    case .range(_, let end, _): return end + 1
    case .alreadyComplete, .notModified, .error: return nil
    }
  }

  /// Where the next attempt could continue: the bytes this one wrote, when the response can be
  /// resumed (a strong ETag or a Last-Modified, no content encoding). The sink's writes are
  /// waited for first, and a write that failed ends what may be kept (`FileSink.settle`).
  package var resumePoint: TransferSpec.Resume? {
    guard case .file = spec.target, let file = sink as? FileSink, file.isOnDisk, file.count > 0, let validator else {
      return nil
    }
    let written = file.settle()
    guard written > 0 else { return nil }
    return TransferSpec.Resume(offset: written, validator: validator, total: totalLength)
  }

  /// The response's validator for `If-Range`: a strong ETag, else a strong Last-Modified; nil
  /// when the body is encoded or the validators are weak.
  package var validator: ResumeValidator? { ResumeValidator(rangeOf: parser.head) }

  /// The full length of the resource, as the admitted response gives it (or the checkpoint).
  package var totalLength: Int64? {
    admission?.total
  }

  /// The gate's word on the final response, asked once.
  private func admitted() -> Result<BodyGate.Admission, TransferFailure> {
    if let admission { return .success(admission) }
    let result = gate.admit(parser.head)
    if case .success(let admission) = result { self.admission = admission }
    return result
  }

  /// Where a redirect the engine follows itself points (absolute), when this response is one.
  package var redirect: String? {
    guard spec.followsRedirectsItself, [301, 302, 303, 307, 308].contains(parser.head.status) else { return nil }
    return easy.info(string: CURLINFO_REDIRECT_URL)
  }

  /// The file sink, for checkpoints.
  package var fileSink: FileSink? { sink as? FileSink }

  // MARK: - Callbacks

  private func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
    guard parser.head.isSuccess else {
      // Only 2xx bodies are kept; an error page is read and dropped.
      moved += Int64(bytes.count)
      return bytes.count
    }
    if let bucket, !bucket.take(bytes.count) {
      paused = true
      return Int(ccurl_writefunc_pause)
    }
    if sink == nil {
      switch admitted() {
      case .failure(let failure):
        callbackFailure = failure
        return 0
      case .success(.whole) where isRangedPiece:
        answeredWhole = true
        return 0
      case .success(.whole), .success(.range):
        sink = admission.flatMap(makeSink)
        if sink == nil { return 0 }
      case .success:
        return bytes.count
      }
    }
    guard let sink else { return 0 }
    var bytes = bytes
    if let piece {
      let room = piece.end - sink.count
      if room <= 0 {
        reachedEnd = true
        return 0
      }
      if Int64(bytes.count) > room {
        reachedEnd = true
        bytes = UnsafeRawBufferPointer(rebasing: bytes[0..<Int(room)])
      }
    }
    if let failure = gate.overflow(at: sink.count, adding: bytes.count) {
      // Past `max_size`: the transfer stops before these bytes are written.
      callbackFailure = failure
      return 0
    }
    guard sink.write(bytes) else {
      callbackFailure = callbackFailure ?? sink.failure
      return 0
    }
    received = sink.count
    moved += Int64(bytes.count)
    piece?.next = sink.count
    return bytes.count
  }

  /// Bytes of the body this attempt received (not those kept from before).
  package var bodyBytesReceived: Int64 { max(0, received - resumedFrom) }

  /// Ends the attempt with `failure` (the engine's idle limit): `outcome` reports it.
  package func fail(_ failure: TransferFailure) {
    callbackFailure = failure
  }

  private func headerLine(_ bytes: UnsafeRawBufferPointer) -> Int {
    moved += Int64(bytes.count)
    parser.consume(bytes)
    if parser.complete, parser.head.isSuccess {
      expected = parser.head.contentLength ?? spec.expectedSize ?? spec.listedSize ?? -1
    }
    return bytes.count
  }

  private func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
    let count = SystemCalls.preadRetrying(uploadDescriptor, into: buffer, at: uploadOffset)
    if count < 0 { return Int(ccurl_readfunc_abort) }
    uploadOffset += Int64(count)
    return count
  }

  // The callbacks borrow the transfer (`_withUnsafeGuaranteedRef`) rather than retain and release
  // it on every call: libcurl calls them some thirty times for each small file, and the engine
  // holds the transfer until its handle has left the multi. They are internal, not private:
  // `configure` (TransferConfiguration.swift) hands them to libcurl.

  static let writeCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    return Unmanaged<Transfer>.fromOpaque(context)._withUnsafeGuaranteedRef {
      $0.receive(UnsafeRawBufferPointer(start: data, count: size * count))
    }
  }

  static let headerCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    return Unmanaged<Transfer>.fromOpaque(context)._withUnsafeGuaranteedRef {
      $0.headerLine(UnsafeRawBufferPointer(start: data, count: size * count))
    }
  }

  static let readCallback: ccurl_data_callback = { data, size, count, context in
    guard let context, let data else { return Int(ccurl_readfunc_abort) }
    return Unmanaged<Transfer>.fromOpaque(context)._withUnsafeGuaranteedRef {
      $0.read(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
    }
  }

  static let seekCallback: ccurl_seek_callback = { context, offset, origin in
    guard let context, origin == SEEK_SET else { return ccurl_seekfunc_cantseek }
    Unmanaged<Transfer>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.uploadOffset = Int64(offset) }
    return ccurl_seekfunc_ok
  }

  static let progressCallback: ccurl_xferinfo_callback = { context, _, _, _, sent in
    guard let context else { return 0 }
    Unmanaged<Transfer>.fromOpaque(context)._withUnsafeGuaranteedRef { transfer in
      if sent != transfer.uploaded {
        transfer.moved += Int64(sent) - transfer.uploaded
        transfer.uploaded = Int64(sent)
      }
    }
    return 0
  }

  // MARK: - Outcome

  /// The result of the finished attempt, given libcurl's code for it; `transferred`: the body
  /// bytes of every attempt of the job, for a result.
  package func outcome(
    _ code: CURLcode, attempts: Int, transferred: Int64 = 0
  ) -> Result<TransferResult, TransferFailure> {
    if let callbackFailure {
      var failure = callbackFailure
      failure.attempts = attempts
      return .failure(failure)
    }
    if code != CURLE_OK {
      var failure = FailureClassifier.classify(code, message: easy.message(for: code), inHead: !parser.complete)
      nameProxyInTLSFailure(&failure)
      if spec.httpVersion == .http2, !parser.complete, !spec.url.utf8.starts(with: "https:".utf8),
        failure.code == .network || failure.code == .badResponse
      {
        failure.message += FailureClassifier.priorKnowledgeHint
      }
      failure.attempts = attempts
      return .failure(failure)
    }
    let head = parser.head
    let admission: BodyGate.Admission
    switch admitted() {
    case .failure(var failure):
      failure.attempts = attempts
      return .failure(failure)
    case .success(let admitted): admission = admitted
    }
    switch admission {
    case .notModified:
      return .success(
        TransferResult(
          head: head, size: 0, sha256: "", file: nil, body: nil, becameDownload: false, attempts: attempts,
          effectiveURL: easy.info(string: CURLINFO_EFFECTIVE_URL) ?? spec.url, notModified: true,
          transferred: transferred))
    case .error:
      var failure = FailureClassifier.classify(status: head.status, reason: head.reason)
      failure.attempts = attempts
      return .failure(failure)
    case .alreadyComplete(let total):
      guard case .file(let path) = spec.target else {
        return .failure(
          TransferFailure(code: .resumeRestart, message: "nothing to continue (HTTP 416)", attempts: attempts))
      }
      do {
        sink = try FileSink(path: path, keeping: total)
        resumedFrom = total
      } catch {
        return .failure(error)
      }
    case .whole, .range:
      if sink == nil { sink = makeSink(admission) }
    }
    guard let sink else {
      return .failure(
        callbackFailure ?? TransferFailure(code: .write, message: "no place to keep the body", attempts: attempts))
    }
    switch sink.finish() {
    case .failure(var failure):
      failure.attempts = attempts
      return .failure(failure)
    case .success(let (size, sha256)):
      if var failure = gate.verify(admission, received: size - resumedFrom) {
        failure.attempts = attempts
        return .failure(failure)
      }
      var file: String?
      var body: [UInt8]?
      var identity: FileIdentity?
      if let fileSink = sink as? FileSink {
        // A small body stayed in memory: the run writes it into place.
        if let held = fileSink.heldBody {
          body = held
        } else {
          file = fileSink.path
          identity = fileSink.identity
        }
      } else if let memory = sink as? MemorySink {
        if let spilled = memory.spilled {
          file = spilled.path
          identity = spilled.identity
        } else {
          body = memory.body
        }
      }
      var result = TransferResult(
        head: head, size: size, sha256: sha256, file: file, body: body, becameDownload: becameDownload,
        attempts: attempts, effectiveURL: easy.info(string: CURLINFO_EFFECTIVE_URL) ?? spec.url,
        resumedFrom: resumedFrom, transferred: transferred)
      result.fileIdentity = identity
      return .success(result)
    }
  }
}
