import Foundation

/// A response ready for the wire, with the faults to inject while sending it.
struct Outgoing {
  var status: Int
  var headers: [(String, String)]
  /// The whole body this response stands for (also for HEAD, where it is not sent).
  var body: ArraySlice<UInt8>
  /// Whether the body goes on the wire (false for HEAD, 1xx, 204 and 304).
  var sendBody = true
  /// Whether to add `Content-Length: body.count` (false when the headers already frame the body).
  var addLength = true
  var chunked = false
  var dropAfter: Int?
  var stall: TimeInterval?
  /// After this many body bytes, wait this long.
  var stallInBody: (bytes: Int, seconds: TimeInterval)?
  var trickle: Trickle?
  /// The most body bytes per second.
  var rateLimit: Int?
  /// Close the connection after this response.
  var close = false

  init(status: Int, headers: [(String, String)], body: ArraySlice<UInt8>) {
    self.status = status
    self.headers = headers
    self.body = body
  }

  /// Builds the wire form of a canned response.
  init(_ response: Response, method: String) {
    self.init(
      status: response.status, headers: response.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
      body: response.body[...])
    let names = Set(response.headers.keys.map { $0.lowercased() })
    let bodiless = response.status < 200 || response.status == 204 || response.status == 304
    sendBody = method != "HEAD" && !bodiless
    if names.contains("content-length") {
      addLength = false
      let declared = response.headers.first { $0.key.lowercased() == "content-length" }.flatMap { Int($0.value) }
      if declared != response.body.count && sendBody { close = true }
    }
    if names.contains("transfer-encoding") || bodiless { addLength = false }
    if let value = response.headers.first(where: { $0.key.lowercased() == "connection" })?.value,
      value.lowercased().contains("close")
    {
      close = true
      headers.removeAll { $0.0.lowercased() == "connection" }
    }
  }
}

/// Turns behaviors into responses; pure functions of the behavior and the request.
enum Responder {
  /// The small text answer for paths without a route.
  static func notFound(_ request: RecordedRequest) -> Response {
    .text(404, "not found: \(request.path)\n")
  }

  /// The answer of a redirect route.
  static func redirect(status: Int, location: String) -> Response {
    .text(status, "redirecting to \(location)\n", headers: ["Location": location])
  }

  /// The answer of an upload sink: the body's size and SHA-256.
  static func uploadReceipt(_ request: RecordedRequest) -> Response {
    .json(201, "{\"bytes\": \(request.body.count), \"sha256\": \"\(SHA256Digest.hex(request.body))\"}")
  }

  /// The request's headers as a JSON object.
  static func echoHeaders(_ request: RecordedRequest) -> Response {
    .json(200, Formatting.jsonObject(request.headers))
  }

  /// The answer of a file route, before faults are decided.
  static func file(_ file: FileResource, _ request: RecordedRequest) -> Outgoing {
    guard request.method == "GET" || request.method == "HEAD" else {
      var out = Outgoing(Response.text(405, "method not allowed\n"), method: request.method)
      out.headers.append(("Allow", "GET, HEAD"))
      return out
    }
    var headers: [(String, String)] = [("Content-Type", file.contentType)]
    if !file.ignoreRange { headers.append(("Accept-Ranges", "bytes")) }
    if let etag = file.etag { headers.append(("ETag", etag.headerValue)) }
    if let date = file.lastModified { headers.append(("Last-Modified", Formatting.httpDate(date))) }
    headers.append(("Date", Formatting.httpDate(file.date ?? Date())))
    if let encoding = file.contentEncoding { headers.append(("Content-Encoding", encoding)) }
    for (name, value) in file.extraHeaders.sorted(by: { $0.key < $1.key }) { headers.append((name, value)) }
    let total = file.body.count

    if notModified(file, request) {
      var out = Outgoing(status: 304, headers: headers.filter { $0.0 != "Content-Type" }, body: [])
      out.sendBody = false
      out.addLength = false
      return out
    }

    if let fault = file.rangeFault, let out = faulty(fault, file, headers: headers, request) { return out }
    var status = 200
    var slice = file.body[...]
    if !file.ignoreRange, let rangeHeader = request.header("range"), rangeApplies(file, request) {
      switch parseRange(rangeHeader, total: total) {
      case .ignore:
        break
      case .unsatisfiable:
        var out = Outgoing(
          status: 416, headers: [("Content-Range", "bytes */\(total)"), ("Content-Type", "text/plain")],
          body: Array("range not satisfiable\n".utf8)[...])
        out.sendBody = request.method != "HEAD"
        return out
      case .range(let lower, let upper):
        status = 206
        slice = file.body[lower...upper]
        headers.append(("Content-Range", "bytes \(lower)-\(upper)/\(total)"))
      }
    }
    var out = Outgoing(status: status, headers: headers, body: slice)
    out.sendBody = request.method != "HEAD"
    out.chunked = file.chunked
    if out.chunked { out.addLength = false }
    return out
  }

  /// The answer of a file with a range fault, or nil where the fault does not apply.
  static func faulty(
    _ fault: RangeFault, _ file: FileResource, headers: [(String, String)], _ request: RecordedRequest
  )
    -> Outgoing?
  {
    let total = file.body.count
    var headers = headers
    func partial(_ lower: Int, _ upper: Int, label: String?) -> Outgoing {
      if let label { headers.append(("Content-Range", label)) }
      var out = Outgoing(status: 206, headers: headers, body: file.body[lower...upper])
      out.sendBody = request.method != "HEAD"
      return out
    }
    if case .partial(let lower, let upper, let withLabel) = fault {
      return partial(lower, upper, label: withLabel ? "bytes \(lower)-\(upper)/\(total)" : nil)
    }
    if case .wholeBody = fault {
      var out = Outgoing(status: 200, headers: headers, body: file.body[...])
      out.sendBody = request.method != "HEAD"
      return out
    }
    guard let header = request.header("range"), case .range(let lower, let upper) = parseRange(header, total: total)
    else { return nil }
    switch fault {
    case .partial, .wholeBody:
      return nil
    case .shortRange(let end):
      // A range that starts past the cut is answered honestly.
      guard end >= lower, end < upper else { return nil }
      return partial(lower, end, label: "bytes \(lower)-\(end)/\(total)")
    case .shiftedLabel(let shift):
      return partial(lower, upper, label: "bytes \(lower + shift)-\(upper + shift)/\(total + shift)")
    case .wrongTotal(let wrong):
      return partial(lower, upper, label: "bytes \(lower)-\(upper)/\(wrong)")
    case .lyingLength(let length):
      headers.append(("Content-Range", "bytes \(lower)-\(upper)/\(total)"))
      headers.append(("Content-Length", String(length)))
      var body = Array(file.body[lower...upper])
      body = Array(body.prefix(length)) + [UInt8](repeating: 0x2A, count: max(0, length - body.count))
      var out = Outgoing(status: 206, headers: headers, body: body[...])
      out.addLength = false
      out.sendBody = request.method != "HEAD"
      return out
    }
  }

  /// Whether `If-None-Match` or `If-Modified-Since` lets the client keep its copy.
  static func notModified(_ file: FileResource, _ request: RecordedRequest) -> Bool {
    if let candidates = request.header("if-none-match") {
      guard let etag = file.etag else { return false }
      for candidate in candidates.split(separator: ",") {
        let text = candidate.trimmingCharacters(in: .whitespaces)
        if text == "*" { return true }
        if let tag = ETag(headerValue: text), tag.tag == etag.tag { return true }
      }
      return false
    }
    if let since = request.header("if-modified-since"), let lastModified = file.lastModified,
      let date = Formatting.parseHTTPDate(since)
    {
      return lastModified.timeIntervalSince1970.rounded(.down) <= date.timeIntervalSince1970
    }
    return false
  }

  /// Whether `If-Range` (if any) still names the current representation.
  static func rangeApplies(_ file: FileResource, _ request: RecordedRequest) -> Bool {
    guard !file.ignoreIfRange, let condition = request.header("if-range")?.trimmingCharacters(in: .whitespaces)
    else { return true }
    if condition.hasPrefix("\"") || condition.hasPrefix("W/") {
      guard let tag = ETag(headerValue: condition), let etag = file.etag else { return false }
      return !tag.isWeak && !etag.isWeak && tag.tag == etag.tag
    }
    guard let date = Formatting.parseHTTPDate(condition), let lastModified = file.lastModified else { return false }
    return lastModified.timeIntervalSince1970.rounded(.down) == date.timeIntervalSince1970
  }

  enum RangeRequest: Equatable {
    case ignore
    case unsatisfiable
    case range(Int, Int)
  }

  /// Parses a single `bytes=` range against a body of `total` bytes (several ranges are ignored).
  static func parseRange(_ header: String, total: Int) -> RangeRequest {
    let text = header.trimmingCharacters(in: .whitespaces)
    guard text.lowercased().hasPrefix("bytes=") else { return .ignore }
    let spec = text.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
    guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .ignore }
    let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
    let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
    if first.isEmpty {
      guard let suffix = Int(last) else { return .ignore }
      if suffix <= 0 || total == 0 { return .unsatisfiable }
      return .range(max(0, total - suffix), total - 1)
    }
    guard let lower = Int(first), lower >= 0 else { return .ignore }
    var upper = total - 1
    if !last.isEmpty {
      guard let value = Int(last), value >= lower else { return .ignore }
      upper = min(value, total - 1)
    }
    if lower >= total { return .unsatisfiable }
    return .range(lower, upper)
  }
}
