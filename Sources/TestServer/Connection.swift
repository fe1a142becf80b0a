import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// One TCP connection, read and written only by its own thread.
final class Connection: @unchecked Sendable {
  static let maxHeaderBytes = 64 * 1024
  static let maxBodyBytes = 1 << 30
  static let maxChunkLineBytes = 4096

  let fd: Int32
  let id: Int
  let core: ServerCore
  private var buffer: [UInt8] = []
  private var start = 0

  init(fd: Int32, id: Int, core: ServerCore) {
    self.fd = fd
    self.id = id
    self.core = core
  }

  /// Answers requests until the peer closes, a timeout, an error, `Connection: close` or a fault.
  func serve() {
    defer { core.connectionEnded(id) }
    while true {
      let parsed: ParsedRequest
      switch readRequest() {
      case .closed:
        return
      case .bad(let status, let message):
        var out = Outgoing(Response.text(status, message + "\n"), method: "GET")
        out.close = true
        _ = send(out, ticket: nil) {}
        finish()
        return
      case .request(let request):
        parsed = request
      }
      var (out, ticket) = core.begin(parsed.request)
      if parsed.wantsClose { out.close = true }
      // The request counts as answered just before its last bytes go out: a client that has the
      // whole response never finds it still active (the counters tests read would race).
      var ended = false
      let keepOpen = send(out, ticket: ticket) {
        ended = true
        core.end(ticket)
      }
      if !ended { core.end(ticket) }
      guard keepOpen else {
        if out.dropAfter == nil { finish() }
        return
      }
    }
  }

  // MARK: Reading

  struct ParsedRequest {
    var request: RecordedRequest
    var wantsClose: Bool
  }

  enum ReadResult {
    case request(ParsedRequest)
    case bad(Int, String)
    case closed
  }

  private var available: Int { buffer.count - start }

  /// Reads more bytes into the buffer; false on end of stream, timeout or error.
  private func fill() -> Bool {
    if start > 0 && start * 2 >= buffer.count {
      buffer.removeFirst(start)
      start = 0
    }
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if count > 0 {
        buffer.append(contentsOf: chunk[0..<count])
        return true
      }
      if count < 0 && errno == EINTR { continue }
      return false
    }
  }

  private func consume(_ count: Int) -> [UInt8] {
    let bytes = Array(buffer[start..<(start + count)])
    start += count
    return bytes
  }

  /// The offset (from `start`) of the first CRLF at or after `from`, if buffered.
  private func findCRLF(from offset: Int) -> Int? {
    var index = start + offset
    while index + 1 < buffer.count {
      if buffer[index] == 13 && buffer[index + 1] == 10 { return index - start }
      index += 1
    }
    return nil
  }

  /// Reads one line ending in CRLF (without it); nil when the stream ends or the line is too long.
  private func readLine(limit: Int) -> [UInt8]? {
    var searched = 0
    while true {
      if let end = findCRLF(from: max(0, searched - 1)) {
        let line = consume(end)
        start += 2
        return line
      }
      searched = available
      if searched > limit || !fill() { return nil }
    }
  }

  private func readExactly(_ count: Int) -> [UInt8]? {
    while available < count {
      if !fill() { return nil }
    }
    return consume(count)
  }

  private func readRequest() -> ReadResult {
    var lines: [String] = []
    var headerBytes = 0
    while true {
      guard let line = readLine(limit: Self.maxHeaderBytes) else {
        return lines.isEmpty ? .closed : .bad(400, "incomplete request")
      }
      headerBytes += line.count + 2
      if headerBytes > Self.maxHeaderBytes { return .bad(431, "request header too large") }
      if line.isEmpty {
        if lines.isEmpty { continue }
        break
      }
      lines.append(String(decoding: line, as: UTF8.self))
    }
    let requestLine = lines[0].split(separator: " ", omittingEmptySubsequences: true)
    guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/") else { return .bad(400, "bad request line") }
    let method = String(requestLine[0])
    let version = String(requestLine[2])
    var headers: [String: String] = [:]
    var headerLines: [String: Int] = [:]
    for line in lines.dropFirst() {
      guard let colon = line.firstIndex(of: ":") else { return .bad(400, "bad header line") }
      let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
      let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
      headerLines[name, default: 0] += 1
      if let earlier = headers[name] {
        headers[name] = earlier + ", " + value
      } else {
        headers[name] = value
      }
    }
    let (path, query) = Self.splitTarget(String(requestLine[1]))

    let chunked = headers["transfer-encoding"]?.lowercased().contains("chunked") ?? false
    var length = 0
    if !chunked, let text = headers["content-length"] {
      guard let value = Int(text.trimmingCharacters(in: .whitespaces)), value >= 0 else {
        return .bad(400, "bad content-length")
      }
      guard value <= Self.maxBodyBytes else { return .bad(413, "body too large") }
      length = value
    }
    if (chunked || length > 0) && headers["expect"]?.lowercased() == "100-continue" && version != "HTTP/1.0" {
      guard write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return .closed }
    }
    var body: [UInt8] = []
    if chunked {
      guard let decoded = readChunkedBody() else { return .bad(400, "bad chunked body") }
      body = decoded
    } else if length > 0 {
      guard let bytes = readExactly(length) else { return .closed }
      body = bytes
    }

    let connectionHeader = headers["connection"]?.lowercased() ?? ""
    let wantsClose =
      connectionHeader.contains("close") || (version == "HTTP/1.0" && !connectionHeader.contains("keep-alive"))
    let request = RecordedRequest(
      method: method, path: path, query: query, version: version, headers: headers, body: body, connectionID: id,
      headerLines: headerLines)
    return .request(ParsedRequest(request: request, wantsClose: wantsClose))
  }

  private func readChunkedBody() -> [UInt8]? {
    var body: [UInt8] = []
    while true {
      guard let line = readLine(limit: Self.maxChunkLineBytes) else { return nil }
      let text = String(decoding: line, as: UTF8.self)
      let sizeText = text.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
      guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else { return nil }
      if size == 0 {
        while true {
          guard let trailer = readLine(limit: Self.maxHeaderBytes) else { return nil }
          if trailer.isEmpty { return body }
        }
      }
      guard body.count + size <= Self.maxBodyBytes, let data = readExactly(size) else { return nil }
      body.append(contentsOf: data)
      guard let end = readLine(limit: 2), end.isEmpty else { return nil }
    }
  }

  /// Splits a request target into path and query, accepting the absolute form too.
  static func splitTarget(_ target: String) -> (String, String?) {
    var rest = Substring(target)
    if let scheme = rest.range(of: "://"), !rest[..<scheme.lowerBound].contains("/") {
      rest = rest[scheme.upperBound...]
      if let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) {
        rest = rest[slash...]
      } else {
        rest = "/"
      }
      if rest.hasPrefix("?") { rest = "/" + rest }
    }
    if let mark = rest.firstIndex(of: "?") {
      return (String(rest[..<mark]), String(rest[rest.index(after: mark)...]))
    }
    return (String(rest), nil)
  }

  // MARK: Writing

  /// Writes all of `bytes`; false when the peer is gone or the write timed out.
  private func write(_ bytes: some Collection<UInt8>) -> Bool {
    let data = Array(bytes)
    var offset = 0
    while offset < data.count {
      let count = data.withUnsafeBytes { raw in
        Glibc.send(fd, raw.baseAddress.map { $0 + offset }, data.count - offset, Int32(MSG_NOSIGNAL))
      }
      if count > 0 {
        offset += count
      } else if count < 0 && errno == EINTR {
        continue
      } else {
        return false
      }
    }
    return true
  }

  /// Sends `out` with its faults; false when the connection must end.
  /// `ending` runs once, right before the response's last write. Body bytes count as sent for
  /// `ticket` right before they are written (and are taken back when the write fails).
  private func send(_ out: Outgoing, ticket: ServerCore.Ticket?, ending: () -> Void) -> Bool {
    var head = "HTTP/1.1 \(out.status) \(Formatting.reason(out.status))\r\n"
    head += "Server: batchdl-testserver\r\n"
    for (name, value) in out.headers { head += "\(name): \(value)\r\n" }
    if out.chunked {
      head += "Transfer-Encoding: chunked\r\n"
    } else if out.addLength {
      head += "Content-Length: \(out.body.count)\r\n"
    }
    if out.close { head += "Connection: close\r\n" }
    head += "\r\n"
    guard out.sendBody else {
      ending()
      return write(Array(head.utf8)) && !out.close
    }
    let limit = min(out.dropAfter ?? out.body.count, out.body.count)
    if limit == 0 && !out.chunked && out.dropAfter == nil { ending() }
    guard write(Array(head.utf8)) else { return false }
    if let stall = out.stall, !core.pause(seconds: stall) { return false }

    var piece = out.trickle?.chunkBytes ?? 64 * 1024
    if let rate = out.rateLimit { piece = max(1, min(piece, rate / 20)) }
    let paced = Date()
    var offset = 0
    var stalled = false
    while offset < limit {
      if offset > 0, let trickle = out.trickle, !core.pause(seconds: trickle.interval) { return false }
      // The bytes so far are due at offset / rate seconds after the first.
      if offset > 0, let rate = out.rateLimit {
        let wait = paced.addingTimeInterval(Double(offset) / Double(rate)).timeIntervalSinceNow
        if wait > 0, !core.pause(seconds: wait) { return false }
      }
      var end = min(offset + piece, limit)
      if let stall = out.stallInBody, !stalled {
        if offset >= stall.bytes {
          stalled = true
          guard core.pause(seconds: stall.seconds) else { return false }
        } else {
          end = min(end, stall.bytes)
        }
      }
      let slice = out.body[(out.body.startIndex + offset)..<(out.body.startIndex + end)]
      let framed =
        out.chunked ? Array((String(end - offset, radix: 16) + "\r\n").utf8) + slice + [13, 10] : Array(slice)
      if end == limit && !out.chunked && out.dropAfter == nil { ending() }
      if let ticket { core.sent(ticket.number, bytes: end - offset) }
      guard write(framed) else {
        if let ticket { core.sent(ticket.number, bytes: offset - end) }
        return false
      }
      offset = end
    }
    if out.dropAfter != nil {
      shutdown(fd, Int32(SHUT_RDWR))
      return false
    }
    if out.chunked {
      ending()
      guard write(Array("0\r\n\r\n".utf8)) else { return false }
    }
    return !out.close
  }

  /// Ends the connection gently: stops sending, then reads until the peer closes (bounded by the timeout).
  private func finish() {
    shutdown(fd, Int32(SHUT_WR))
    var scratch = [UInt8](repeating: 0, count: 4096)
    var drained = 0
    while drained < 1 << 20 {
      let count = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if count <= 0 { return }
      drained += count
    }
  }
}
