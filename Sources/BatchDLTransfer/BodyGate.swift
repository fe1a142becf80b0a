import BatchDLSupport

/// The one place that decides whether a response body is the representation that was asked for.
///
/// Every transfer asks it twice: when the response head is complete, whether the body may be
/// written and where (`admit`), and when the body has ended, whether it is complete (`verify`).
/// It weighs the range that was sent (or none), the status, `Content-Range` (start, end, total),
/// `Content-Length`, the bytes received and the total that a checkpoint recorded. A `206` is only
/// taken as the answer to the range that was sent, or when it covers the whole representation
/// (`bytes 0-(N-1)/N`); a file is only complete when its length is the representation's total.
///
/// It also holds the task's `max_size`: a representation declared longer (`Content-Length`, a
/// `Content-Range` total or end, a recorded total) is refused at its head, and a body that streams
/// past it (chunked, no length, or a server that sends more than it said) is stopped at the byte
/// that would cross it (`overflow`). Both fail with `too-large`, which keeps nothing.
package struct BodyGate: Sendable, Equatable {
  /// The range a request sent: `Range: bytes=start-` or `bytes=start-end` (`end` inclusive).
  package struct Asked: Sendable, Equatable {
    package var start: Int64
    package var end: Int64?
    /// The representation's length as recorded (a checkpoint's total), when known.
    package var total: Int64?
  }

  /// What the body of an admitted response is.
  package enum Admission: Sendable, Equatable {
    /// The whole representation from byte 0; `length` bytes when known.
    case whole(length: Int64?)
    /// Bytes `start...end` of a representation of `total` bytes, written at `start`.
    case range(start: Int64, end: Int64, total: Int64?)
    /// A `416` to a range that began at the recorded total: the kept bytes already are the whole
    /// representation, to be checked and placed.
    case alreadyComplete(total: Int64)
    /// A `304` to a conditional request: nothing to write.
    case notModified
    /// Not a success: the body (an error page) is read and dropped.
    case error

    /// The representation's total length the body is part of, when known.
    package var total: Int64? {
      switch self {
      case .whole(let length): return length
      case .range(_, _, let total): return total
      case .alreadyComplete(let total): return total
      case .notModified, .error: return nil
      }
    }

    /// The byte the body is written from.
    package var start: Int64 {
      switch self {
      case .range(let start, _, _): return start
      case .alreadyComplete(let total): return total
      case .whole, .notModified, .error: return 0
      }
    }
  }

  /// The range sent, or nil for a request without `Range`.
  package var asked: Asked?
  /// The `If-Range` sent with it (a strong `ETag` or a `Last-Modified` date), or nil when the
  /// bytes are guarded by a digest instead. A `206` must carry that same validator: a server that
  /// ignores `If-Range` would otherwise join another version's bytes to the kept ones.
  package var ifRange: String?
  /// Whether the request was conditional (`If-None-Match`/`If-Modified-Since`).
  package var conditional = false
  /// Whether the request was `HEAD` (no body).
  package var isHead = false
  /// Whether libcurl decodes a `Content-Encoding`, so that `Content-Length` counts other bytes.
  package var decodes = false
  /// `max_size`: the longest representation the task takes, in bytes; nil for no limit.
  package var maxSize: Int64?

  /// Whether a body at `position` (its bytes so far, from byte 0 of the representation, kept ones
  /// included) may take `count` more: nil when it may, else the `too-large` failure.
  package func overflow(at position: Int64, adding count: Int) -> TransferFailure? {
    guard let maxSize, position + Int64(count) > maxSize else { return nil }
    return tooLarge("the response passed \(position + Int64(count)) bytes as it streamed")
  }

  /// The `too-large` failure: `what` the response said or did, against `max_size`.
  package func tooLarge(_ what: String) -> TransferFailure {
    TransferFailure(
      code: .tooLarge,
      message:
        "\(what), more than max_size (\(ByteSize.format(maxSize ?? 0)), \(maxSize ?? 0) bytes); nothing was kept")
  }

  /// The admission, unless the representation it describes is longer than `maxSize`.
  private func limited(_ admission: Admission) -> Result<Admission, TransferFailure> {
    // A HEAD's length is the representation's, but no body of it comes.
    guard let maxSize, !isHead else { return .success(admission) }
    switch admission {
    case .whole(let length?) where length > maxSize:
      return .failure(tooLarge("the response declares \(length) bytes (Content-Length)"))
    case .range(_, let end, let total):
      if let total, total > maxSize {
        return .failure(tooLarge("the file is \(total) bytes (Content-Range)"))
      }
      if end >= maxSize { return .failure(tooLarge("the response's range ends at byte \(end) (Content-Range)")) }
    case .alreadyComplete(let total) where total > maxSize:
      return .failure(tooLarge("the file is \(total) bytes (as recorded)"))
    default:
      break
    }
    return .success(admission)
  }

  /// Whether the response head allows its body to be written, and as what. A failure with code
  /// `resume-restart` means the range cannot continue the partial file (start over without
  /// `Range`); `range-mismatch` means the server answered with bytes the request did not ask for.
  package func admit(_ head: ResponseHead) -> Result<Admission, TransferFailure> {
    admitHead(head).flatMap(limited)
  }

  private func admitHead(_ head: ResponseHead) -> Result<Admission, TransferFailure> {
    switch head.status {
    case 304 where conditional:
      return .success(.notModified)
    case 416:
      return admitUnsatisfiable(head)
    case 206:
      return admitPartial(head)
    case 200..<300:
      let length = decodes && head.encoding != nil ? nil : head.contentLength
      return .success(.whole(length: length))
    default:
      return .success(.error)
    }
  }

  private func admitUnsatisfiable(_ head: ResponseHead) -> Result<Admission, TransferFailure> {
    guard let asked else { return .success(.error) }
    // The partial file may already hold everything: only when the range began at the recorded
    // total, and the server's total (`bytes */N`), when it gives one, agrees.
    let serverTotal = head["content-range"].flatMap(UnsatisfiedRange.init)?.total
    guard let total = asked.total, asked.start == total, asked.end == nil, serverTotal == nil || serverTotal == total
    else {
      return .failure(
        TransferFailure(
          code: .resumeRestart, message: "the server cannot continue from byte \(asked.start) (HTTP 416)"))
    }
    return .success(.alreadyComplete(total: total))
  }

  private func admitPartial(_ head: ResponseHead) -> Result<Admission, TransferFailure> {
    let header = head["content-range"]
    guard let header, let range = ContentRange(header), range.start >= 0, range.end >= range.start,
      range.total.map({ range.end < $0 }) ?? true
    else {
      return .failure(mismatch("HTTP 206 with \(describe(header))"))
    }
    if head.encoding != nil {
      return .failure(mismatch("HTTP 206 with Content-Encoding \(head.encoding ?? ""): the bytes are not the file's"))
    }
    let span = range.end - range.start + 1
    if let length = head.contentLength, length != span {
      return .failure(mismatch("HTTP 206 whose Content-Length \(length) differs from \(describe(header))"))
    }
    guard let asked else {
      // No range was sent: a 206 is only the whole file when it says so.
      guard range.start == 0, let total = range.total, range.end == total - 1 else {
        return .failure(mismatch("HTTP 206 (\(describe(header))) to a request for the whole file"))
      }
      return .success(.whole(length: total))
    }
    if let sent = ifRange {
      let strong = sent.hasPrefix("\"")
      let carried = strong ? head.strongETag : head["last-modified"]
      guard carried == sent else {
        let what = strong ? "ETag" : "Last-Modified"
        return .failure(
          TransferFailure(
            code: .resumeRestart,
            message:
              "the server answered If-Range: \(sent) with a 206 whose \(what) is \(carried.map { "\($0)" } ?? "missing"): its bytes may be another version's, so the file starts over"
          ))
      }
    }
    guard range.start == asked.start else {
      return .failure(
        TransferFailure(
          code: .resumeRestart,
          message: "the server answered the range from byte \(asked.start) with another range (\(describe(header)))"))
    }
    if let recorded = asked.total, let total = range.total, recorded != total {
      return .failure(
        TransferFailure(
          code: .resumeRestart,
          message: "the file's length changed from \(recorded) to \(total) bytes (\(describe(header)))"))
    }
    let total = range.total ?? asked.total
    if let end = asked.end, range.end > end {
      return .failure(mismatch("HTTP 206 (\(describe(header))) past the range asked for, bytes \(asked.start)-\(end)"))
    }
    if let total, range.end >= total {
      return .failure(mismatch("HTTP 206 (\(describe(header))) past the file's length, \(total) bytes"))
    }
    return .success(.range(start: range.start, end: range.end, total: total))
  }

  /// Whether a body that ended after `received` bytes (of this response) is complete. A short
  /// body fails with code `network`; a range that stops before the representation's end fails
  /// with code `incomplete`: its bytes are kept, and the next attempt continues after them.
  package func verify(_ admission: Admission, received: Int64) -> TransferFailure? {
    switch admission {
    case .whole(let length):
      guard !isHead, let length, length != received else { return nil }
      return TransferFailure(code: .network, message: "the connection ended after \(received) of \(length) bytes")
    case .range(let start, let end, let total):
      let span = end - start + 1
      if received != span {
        return TransferFailure(
          code: .network, message: "the connection ended after \(received) of the \(span) bytes from byte \(start)")
      }
      if let askedEnd = asked?.end, end < askedEnd {
        return TransferFailure(
          code: .incomplete,
          message: "the server sent bytes \(start)-\(end) of the range \(start)-\(askedEnd) and stopped before its end")
      }
      if asked?.end == nil, let total, end + 1 < total {
        return TransferFailure(
          code: .incomplete,
          message: "the server sent bytes \(start)-\(end) of \(total) and stopped before the end of the file")
      }
      if asked?.end == nil, total == nil {
        return TransferFailure(
          code: .incomplete, message: "the server sent bytes \(start)-\(end) without saying the file's length")
      }
      return nil
    case .alreadyComplete, .notModified, .error:
      return nil
    }
  }

  private func mismatch(_ what: String) -> TransferFailure {
    let sent = asked.map { "bytes=\($0.start)-\($0.end.map(String.init) ?? "")" } ?? "no Range"
    return TransferFailure(
      code: .rangeMismatch, message: "the server answered a request with \(sent) with \(what); nothing was kept")
  }

  private func describe(_ header: String?) -> String {
    header.map { "Content-Range: \(String($0.prefix(80)))" } ?? "no Content-Range"
  }
}

/// `Content-Range: bytes */TOTAL`, as a `416` carries it.
package struct UnsatisfiedRange {
  package var total: Int64

  package init?(_ text: String) {
    let trimmed = text.trimmingSpaces
    guard trimmed.hasPrefix("bytes */"), let total = Int64(trimmed.dropFirst(8)), total >= 0 else { return nil }
    self.total = total
  }
}
