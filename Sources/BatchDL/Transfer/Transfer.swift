import CCurl

#if canImport(Glibc)
  import Glibc
#endif

/// One attempt at one request: its easy handle, response parsing and body sink.
///
/// libcurl's callbacks reach it through an unretained pointer, which is safe because the transfer
/// owns its easy handle and frees it in `deinit`, after the engine has removed it from the multi.
final class Transfer {
  let job: Int
  let spec: TransferSpec
  let easy: EasyHandle
  private(set) var parser = ResponseHeadParser()
  private(set) var sink: BodySink?
  private var uploadDescriptor: Int32 = -1
  private var uploadOffset: Int64 = 0
  private(set) var becameDownload = false
  /// The byte the body continued from, once a 206 was accepted.
  private(set) var resumedFrom: Int64 = 0
  /// A failure found by a callback (disk full, body too large), which aborts the transfer.
  private(set) var callbackFailure: TransferFailure?
  /// Set by the engine when the response head arrived (for the `response` event).
  var announced = false
  /// Set by the engine once it has reported `becameDownload`.
  var announcedDownload = false
  /// Bytes received in this attempt and the time of the last change, for progress.
  private(set) var received: Int64 = 0
  private(set) var expected: Int64 = -1

  /// `easy`: a handle of an earlier transfer of the same session, reset; nil for a new one.
  init(job: Int, spec: TransferSpec, timeout: Interval?, easy: EasyHandle? = nil) throws {
    self.job = job
    self.spec = spec
    self.easy = try easy ?? EasyHandle()
    try configure(timeout: timeout)
  }

  deinit {
    if uploadDescriptor >= 0 { close(uploadDescriptor) }
  }

  private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

  private func configure(timeout: Interval?) throws {
    try easy.set(CURLOPT_URL, spec.url)
    try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
    try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
    try easy.set(CURLOPT_FOLLOWLOCATION, 1)
    try easy.set(CURLOPT_MAXREDIRS, 10)
    try easy.set(CURLOPT_NOSIGNAL, 1)
    try easy.set(CURLOPT_HTTP_VERSION, ccurl_http_version_2tls)
    // A rate-limited session reads in small steps, so that the limit holds for small files too.
    let buffer = spec.rateLimit.map { min(256 << 10, max(1 << 10, Int($0 / 16))) } ?? (256 << 10)
    try easy.set(CURLOPT_BUFFERSIZE, buffer)
    try easy.set(CURLOPT_NETRC, ccurl_netrc_ignored)
    if let interface = spec.interface { try easy.set(CURLOPT_INTERFACE, "if!\(interface)") }
    if spec.insecure {
      try easy.set(CURLOPT_SSL_VERIFYPEER, 0)
      try easy.set(CURLOPT_SSL_VERIFYHOST, 0)
    }
    // Idle timeout: fewer than 1 byte a second for `request` seconds fails the attempt.
    let idleSeconds = max(1, Int((spec.requestTimeout.milliseconds + 999) / 1000))
    try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
    try easy.set(CURLOPT_LOW_SPEED_TIME, idleSeconds)
    try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(spec.requestTimeout.milliseconds))
    if let timeout { try easy.set(CURLOPT_TIMEOUT_MS, max(1, Int(timeout.milliseconds))) }

    try easy.set(CURLOPT_PRIVATE, pointer: context)
    try easy.set(CURLOPT_WRITEDATA, pointer: context)
    try easy.setCallback(CURLOPT_WRITEFUNCTION, Transfer.writeCallback)
    try easy.set(CURLOPT_HEADERDATA, pointer: context)
    try easy.setCallback(CURLOPT_HEADERFUNCTION, Transfer.headerCallback)
    // The callback does nothing, but keep it: without one, libcurl 7.88 took the 1 GiB benchmark
    // in 1.6 s instead of 1.0 s (its system time nearly doubled).
    try easy.set(CURLOPT_NOPROGRESS, 0)
    try easy.set(CURLOPT_XFERINFODATA, pointer: context)
    try easy.setProgressCallback(Transfer.progressCallback)

    var headers = spec.headers
    try moveCookies(from: &headers)
    if let resume = spec.resume {
      headers.append("Range: bytes=\(resume.offset)-")
      headers.append("If-Range: \(resume.validator)")
    }
    if let conditional = spec.conditional {
      if let etag = conditional.etag { headers.append("If-None-Match: \(etag)") }
      if let date = conditional.lastModified { headers.append("If-Modified-Since: \(date)") }
    }
    if spec.decodeContent {
      try easy.set(CURLOPT_ACCEPT_ENCODING, "")
    } else {
      headers.append("Accept-Encoding: identity")
    }
    try configureBody(&headers)
    try easy.set(CURLOPT_HTTPHEADER, list: headers)
  }

  /// The origin (`scheme://host[:port]`) the manifest's cookies may go to, while `CURLOPT_COOKIE`
  /// holds them; nil when there are none, or once a redirect left that origin.
  private var cookieOrigin: String?

  /// The manifest's `Cookie` headers go out through `CURLOPT_COOKIE`: libcurl appends them to the
  /// session jar's cookies for the URL on one `Cookie:` line (a `Cookie` header of its own would be
  /// a second line). libcurl would send that option to any host a redirect leads to, so
  /// `headerLine` clears it when a `Location` leaves the request's origin.
  private func moveCookies(from headers: inout [String]) throws {
    var pairs: [String] = []
    headers.removeAll { line in
      guard let colon = line.firstIndex(of: ":"), Self.trimmed(line[..<colon]).lowercased() == "cookie" else {
        return false
      }
      let value = Self.trimmed(line[line.index(after: colon)...])
      if !value.isEmpty { pairs.append(value) }
      return true
    }
    guard !pairs.isEmpty else { return }
    try easy.set(CURLOPT_COOKIE, pairs.joined(separator: "; "))
    cookieOrigin = Self.origin(of: spec.url) ?? ""
  }

  /// `scheme://host[:port]` of an absolute URL, nil when it is not one.
  private static func origin(of url: String) -> String? {
    guard case .success(let normalized) = URLNormalizer().normalize(url) else { return nil }
    return normalized.scheme + "://" + normalized.authority
  }

  private static func trimmed(_ text: Substring) -> String {
    guard let first = text.firstIndex(where: { !$0.isWhitespace }),
      let last = text.lastIndex(where: { !$0.isWhitespace })
    else { return "" }
    return String(text[first...last])
  }

  /// Clears `CURLOPT_COOKIE` when `line` is a `Location` that leads to another origin (a relative
  /// reference stays at the origin).
  private func dropCookiesOnCrossOriginLocation(_ bytes: UnsafeRawBufferPointer) {
    guard let origin = cookieOrigin, bytes.count > 9 else { return }
    let line = String(decoding: bytes, as: UTF8.self)
    guard line.prefix(9).lowercased() == "location:" else { return }
    var target = Self.trimmed(line.dropFirst(9))
    if target.hasPrefix("//") {
      target = String(origin.prefix { $0 != ":" }) + ":" + target
    } else {
      // A scheme is letters, digits, `+`, `-` and `.` before the first `:`; without one the
      // reference is relative.
      let head = target.prefix { $0 != ":" && $0 != "/" && $0 != "?" && $0 != "#" }
      guard head.count < target.count, target[head.endIndex] == ":" else { return }
    }
    if Self.origin(of: target) != origin {
      try? easy.set(CURLOPT_COOKIE, pointer: nil)
      cookieOrigin = nil
    }
  }

  private func configureBody(_ headers: inout [String]) throws {
    let method = spec.method.uppercased()
    switch spec.body {
    case .none:
      switch method {
      case "GET": break
      case "HEAD": try easy.set(CURLOPT_NOBODY, 1)
      default: try easy.set(CURLOPT_CUSTOMREQUEST, spec.method)
      }
    case .bytes(let bytes):
      try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(bytes.count))
      try bytes.withUnsafeBytes { raw throws in
        try easy.set(
          CURLOPT_COPYPOSTFIELDS,
          pointer: UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)))
      }
      if method != "POST" { try easy.set(CURLOPT_CUSTOMREQUEST, spec.method) }
    case .file(let path):
      let fd = open(path, O_RDONLY | O_CLOEXEC)
      guard fd >= 0 else {
        throw TransferFailure(code: "read", message: "cannot read \(path): \(String(cString: strerror(errno)))")
      }
      uploadDescriptor = fd
      var info = stat()
      fstat(fd, &info)
      let size = Int64(info.st_size)
      try easy.set(CURLOPT_READDATA, pointer: context)
      try easy.setCallback(CURLOPT_READFUNCTION, Transfer.readCallback)
      try easy.set(CURLOPT_SEEKDATA, pointer: context)
      try easy.setSeekCallback(Transfer.seekCallback)
      if method == "PUT" {
        try easy.set(CURLOPT_UPLOAD, 1)
        try easy.set(CURLOPT_INFILESIZE_LARGE, offset: size)
      } else {
        try easy.set(CURLOPT_POST, 1)
        try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: size)
        if method != "POST" { try easy.set(CURLOPT_CUSTOMREQUEST, spec.method) }
      }
      // No `Expect: 100-continue` round trip: the servers batchdl talks to accept bodies directly.
      headers.append("Expect:")
    case .form(let parts):
      try easy.setForm(parts.map { ($0.name, $0.value, $0.file) })
      if method != "POST" { try easy.set(CURLOPT_CUSTOMREQUEST, spec.method) }
    }
  }

  /// The session's byte budget, when it has a `rate_limit`.
  var bucket: RateBucket?
  /// True while the write callback has paused the transfer for want of budget.
  private(set) var paused = false

  /// Continues a transfer paused by `bucket` (libcurl may deliver the held bytes right away).
  func resume() {
    paused = false
    curl_easy_pause(easy.raw, Int32(ccurl_pause_cont))
  }

  /// The final response head, once complete.
  var head: ResponseHead { parser.head }

  /// The body's sink for a 2xx response, made when the first body byte arrives.
  private func makeSink() -> BodySink? {
    switch spec.target {
    case .file(let path):
      do {
        return try FileSink(path: path, keeping: try keptBytes(), holding: true)
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
      if let spill, Self.matches(spill, head: parser.head) {
        guard memory.spillNow() else { return nil }
      }
      return memory
    }
  }

  /// The byte a 206 continues from, after checking that it answers the range asked for: it starts
  /// at the offset and its total is the recorded one. A 200 starts over (0).
  private func keptBytes() throws(TransferFailure) -> Int64 {
    guard let resume = spec.resume, parser.head.status == 206 else { return 0 }
    guard let range = ContentRange(parser.head["content-range"] ?? ""), range.start == resume.offset,
      resume.total == nil || range.total == nil || range.total == resume.total
    else {
      throw TransferFailure(
        code: "resume-restart",
        message: "the server answered the range request with another range (\(parser.head["content-range"] ?? "none"))")
    }
    resumedFrom = resume.offset
    return resume.offset
  }

  static func matches(_ spill: TransferSpec.Spill, head: ResponseHead) -> Bool {
    if let type = head.mediaType, spill.contentTypes.contains(where: { $0.lowercased() == type }) { return true }
    if let limit = spill.largerThan, let length = head.contentLength, length > limit { return true }
    return false
  }

  /// Where the next attempt could continue: the bytes this one wrote, when the response can be
  /// resumed (a strong ETag or a Last-Modified, no content encoding).
  var resumePoint: TransferSpec.Resume? {
    guard case .file = spec.target, let file = sink as? FileSink, file.isOnDisk, file.count > 0, let validator else {
      return nil
    }
    return TransferSpec.Resume(offset: file.count, validator: validator, total: totalLength)
  }

  /// The response's validator for `If-Range`: a strong ETag, else Last-Modified; nil when the body
  /// is encoded or the tag weak.
  var validator: String? {
    let head = parser.head
    guard head.isSuccess, head.encoding == nil else { return nil }
    if let tag = head.strongETag { return tag }
    if head["etag"] != nil { return nil }
    return head["last-modified"]
  }

  /// The full length of the resource: from `Content-Range` on a 206, else `Content-Length`.
  var totalLength: Int64? {
    let head = parser.head
    if head.status == 206 { return ContentRange(head["content-range"] ?? "")?.total }
    return head.contentLength
  }

  /// The file sink, for checkpoints.
  var fileSink: FileSink? { sink as? FileSink }

  // MARK: - Callbacks

  private func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
    guard parser.head.isSuccess else {
      // Only 2xx bodies are kept; an error page is read and dropped.
      return bytes.count
    }
    if let bucket, !bucket.take(bytes.count) {
      paused = true
      return Int(ccurl_writefunc_pause)
    }
    if sink == nil {
      sink = makeSink()
      if sink == nil { return 0 }
    }
    guard let sink, sink.write(bytes) else {
      callbackFailure = callbackFailure ?? self.sink?.failure
      return 0
    }
    received = sink.count
    return bytes.count
  }

  private func headerLine(_ bytes: UnsafeRawBufferPointer) -> Int {
    if cookieOrigin != nil { dropCookiesOnCrossOriginLocation(bytes) }
    parser.consume(bytes)
    if parser.complete, parser.head.isSuccess {
      expected = parser.head.contentLength ?? -1
    }
    return bytes.count
  }

  private func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
    while true {
      let count = pread(uploadDescriptor, buffer.baseAddress, buffer.count, off_t(uploadOffset))
      if count < 0 {
        if errno == EINTR { continue }
        return Int(ccurl_readfunc_abort)
      }
      uploadOffset += Int64(count)
      return count
    }
  }

  private static let writeCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receive(UnsafeRawBufferPointer(start: data, count: size * count))
  }

  private static let headerCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.headerLine(UnsafeRawBufferPointer(start: data, count: size * count))
  }

  private static let readCallback: ccurl_data_callback = { data, size, count, context in
    guard let context, let data else { return Int(ccurl_readfunc_abort) }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.read(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
  }

  private static let seekCallback: ccurl_seek_callback = { context, offset, origin in
    guard let context, origin == SEEK_SET else { return ccurl_seekfunc_cantseek }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    transfer.uploadOffset = Int64(offset)
    return ccurl_seekfunc_ok
  }

  private static let progressCallback: ccurl_xferinfo_callback = { _, _, _, _, _ in 0 }

  // MARK: - Outcome

  /// The result of the finished attempt, given libcurl's code for it.
  func outcome(_ code: CURLcode, attempts: Int) -> Result<TransferResult, TransferFailure> {
    if let callbackFailure {
      var failure = callbackFailure
      failure.attempts = attempts
      return .failure(failure)
    }
    if code != CURLE_OK {
      var failure = FailureClassifier.classify(code, message: easy.message(for: code))
      failure.attempts = attempts
      return .failure(failure)
    }
    let head = parser.head
    if head.status == 304, spec.conditional != nil {
      return .success(
        TransferResult(
          head: head, size: 0, sha256: "", file: nil, body: nil, becameDownload: false, attempts: attempts,
          effectiveURL: easy.info(string: CURLINFO_EFFECTIVE_URL) ?? spec.url, notModified: true))
    }
    if head.status == 416, let resume = spec.resume {
      // The partial file may already hold everything: verify it against the recorded total.
      guard resume.total == resume.offset, case .file(let path) = spec.target else {
        return .failure(
          TransferFailure(
            code: "resume-restart", message: "the server cannot continue from byte \(resume.offset) (HTTP 416)",
            attempts: attempts))
      }
      do {
        sink = try FileSink(path: path, keeping: resume.offset)
        resumedFrom = resume.offset
      } catch {
        return .failure(error)
      }
    } else if !head.isSuccess {
      var failure = FailureClassifier.classify(status: head.status, reason: head.reason)
      failure.attempts = attempts
      return .failure(failure)
    }
    if sink == nil { sink = makeSink() }
    guard let sink else {
      return .failure(
        callbackFailure ?? TransferFailure(code: "write", message: "no place to keep the body", attempts: attempts))
    }
    switch sink.finish() {
    case .failure(var failure):
      failure.attempts = attempts
      return .failure(failure)
    case .success(let (size, sha256)):
      if head.status != 416, let length = head.contentLength, head.encoding == nil, spec.method.uppercased() != "HEAD",
        length != size - resumedFrom
      {
        return .failure(
          TransferFailure(
            code: "network", message: "the connection ended after \(size) of \(length) bytes", attempts: attempts))
      }
      var file: String?
      var body: [UInt8]?
      if let fileSink = sink as? FileSink {
        // A small body stayed in memory: the run writes it into place.
        if let held = fileSink.heldBody { body = held } else { file = fileSink.path }
      } else if let memory = sink as? MemorySink {
        if let spilled = memory.spilled { file = spilled.path } else { body = memory.body }
      }
      return .success(
        TransferResult(
          head: head, size: size, sha256: sha256, file: file, body: body, becameDownload: becameDownload,
          attempts: attempts, effectiveURL: easy.info(string: CURLINFO_EFFECTIVE_URL) ?? spec.url,
          resumedFrom: resumedFrom))
    }
  }
}
