import Foundation

/// One request as the server received it, kept in the server's request log.
public struct RecordedRequest: Sendable, Equatable {
  /// The request method as sent, e.g. "GET".
  public var method: String
  /// The path of the request target, without the query (not percent-decoded).
  public var path: String
  /// The part of the target after "?", or nil when there was none.
  public var query: String?
  /// The HTTP version from the request line, e.g. "HTTP/1.1".
  public var version: String
  /// The request headers, names lower-cased; repeated headers are joined with ", ".
  public var headers: [String: String]
  /// The request body, decoded from chunked transfer coding when it was chunked.
  public var body: [UInt8]
  /// Which TCP connection carried the request (1 for the server's first connection, and so on).
  public var connectionID: Int
  /// How many header lines each (lower-cased) name had: `headers` joins repeated lines.
  public var headerLines: [String: Int]

  /// Makes a request record (tests of handlers may build their own).
  public init(
    method: String, path: String, query: String? = nil, version: String = "HTTP/1.1",
    headers: [String: String] = [:], body: [UInt8] = [], connectionID: Int = 0, headerLines: [String: Int]? = nil
  ) {
    self.method = method
    self.path = path
    self.query = query
    self.version = version
    self.headers = headers
    self.body = body
    self.connectionID = connectionID
    self.headerLines = headerLines ?? headers.mapValues { _ in 1 }
  }

  /// The value of header `name` (any case), or nil.
  public func header(_ name: String) -> String? {
    headers[name.lowercased()]
  }

  /// How many `name:` lines (any case) the request had.
  public func headerLineCount(_ name: String) -> Int {
    headerLines[name.lowercased()] ?? 0
  }

  /// The body decoded as UTF-8.
  public var bodyText: String {
    String(decoding: body, as: UTF8.self)
  }
}

/// A canned response: status, headers and body. `Content-Length` is added unless the headers set it.
public struct Response: Sendable, Equatable {
  /// The status code, e.g. 200.
  public var status: Int
  /// Header names and values, sent as given.
  public var headers: [String: String]
  /// The body (not sent for HEAD requests, 1xx, 204 and 304).
  public var body: [UInt8]

  /// Makes a response from raw bytes.
  public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
    self.status = status
    self.headers = headers
    self.body = body
  }

  /// Makes a `text/plain; charset=utf-8` response (unless `headers` names another content type).
  public static func text(_ status: Int, _ text: String, headers: [String: String] = [:]) -> Response {
    var all = ["Content-Type": "text/plain; charset=utf-8"]
    for (name, value) in headers { all[name] = value }
    return Response(status: status, headers: all, body: Array(text.utf8))
  }

  /// Makes an `application/json` response whose body is `json` as given.
  public static func json(_ status: Int, _ json: String, headers: [String: String] = [:]) -> Response {
    var all = ["Content-Type": "application/json"]
    for (name, value) in headers { all[name] = value }
    return Response(status: status, headers: all, body: Array(json.utf8))
  }
}

/// An entity tag, strong (`"v1"`) or weak (`W/"v1"`).
public struct ETag: Sendable, Equatable {
  /// The opaque tag without quotes.
  public var tag: String
  /// Whether the tag is weak (`W/` prefix).
  public var isWeak: Bool

  /// Makes a tag from its opaque value.
  public init(_ tag: String, weak: Bool = false) {
    self.tag = tag
    self.isWeak = weak
  }

  /// A strong tag.
  public static func strong(_ tag: String) -> ETag { ETag(tag) }

  /// A weak tag.
  public static func weak(_ tag: String) -> ETag { ETag(tag, weak: true) }

  /// The header form: `"tag"` or `W/"tag"`.
  public var headerValue: String {
    (isWeak ? "W/" : "") + "\"" + tag + "\""
  }

  /// Parses a header form; nil when it is not a quoted tag.
  public init?(headerValue: String) {
    var text = Substring(headerValue.trimmingCharacters(in: .whitespaces))
    var weak = false
    if text.hasPrefix("W/") {
      weak = true
      text = text.dropFirst(2)
    }
    guard text.count >= 2, text.first == "\"", text.last == "\"" else { return nil }
    self.init(String(text.dropFirst().dropLast()), weak: weak)
  }
}

/// A body sent slowly: `chunkBytes` at a time with `interval` seconds between chunks.
public struct Trickle: Sendable, Equatable {
  /// Bytes written per chunk (at least 1).
  public var chunkBytes: Int
  /// Seconds to wait between chunks.
  public var interval: TimeInterval

  /// Makes a trickle setting.
  public init(chunkBytes: Int, interval: TimeInterval) {
    self.chunkBytes = max(1, chunkBytes)
    self.interval = interval
  }
}

/// A static file answered to GET and HEAD, with validators, ranges and fault injection.
public struct FileResource: Sendable {
  /// The file's bytes.
  public var body: [UInt8]
  /// The `Content-Type` header value.
  public var contentType: String
  /// The entity tag sent as `ETag`, if any.
  public var etag: ETag?
  /// The `Last-Modified` date, if any (whole seconds count).
  public var lastModified: Date?
  /// The `Date` header of every answer: the time of the answer when nil, as real servers send it.
  /// Equal to `lastModified`, the date is a weak validator (RFC 9110 8.8.2.2).
  public var date: Date?
  /// Answer a `Range` with `206` whatever `If-Range` says (a server that ignores it): after the file
  /// changed, its bytes are another version's, labelled with the new validators.
  public var ignoreIfRange = false
  /// Always answer 200 with the whole body, ignoring `Range` (and sending no `Accept-Ranges`).
  public var ignoreRange: Bool
  /// Send this many body bytes, then close the socket without finishing the response.
  public var dropAfter: Int?
  /// How many responses are cut by `dropAfter` before the file answers normally.
  public var dropTimes: Int
  /// Seconds to wait between the headers and the body.
  public var stallAfterHeaders: TimeInterval?
  /// How many responses stall before the file answers promptly.
  public var stallTimes: Int
  /// Send the body slowly.
  public var trickle: Trickle?
  /// The `Content-Encoding` header value (the body is sent exactly as given).
  public var contentEncoding: String?
  /// Send the body with `Transfer-Encoding: chunked` instead of `Content-Length`.
  public var chunked: Bool
  /// More headers to send with every answer.
  public var extraHeaders: [String: String]
  /// Send this many body bytes, then wait this many seconds before the rest (a stalled server).
  public var stallInBody: (bytes: Int, seconds: TimeInterval)?
  /// How the file breaks the rules of ranges, if it does.
  public var rangeFault: RangeFault?
  /// The most body bytes per second each response sends (like nginx's `limit_rate`): a response is
  /// written in pieces of `rateLimit / 20` bytes (at most 64 KiB), each one when the response's
  /// bytes so far are due, so B bytes take at least (B − piece) / `rateLimit` seconds. Every
  /// connection gets the whole rate: N ranged requests at once are N times as fast as one.
  public var rateLimit: Int?
  /// Byte ranges of the representation sent wrong (each byte inverted) while length, `ETag` and
  /// headers stay the same: a mirror that lies.
  public var corruptions: [Corruption]

  /// Makes a file; `dropTimes` and `stallTimes` default to every request.
  public init(
    body: [UInt8], contentType: String = "application/octet-stream", etag: ETag? = nil,
    lastModified: Date? = nil, ignoreRange: Bool = false, dropAfter: Int? = nil, dropTimes: Int = .max,
    stallAfterHeaders: TimeInterval? = nil, stallTimes: Int = .max, trickle: Trickle? = nil,
    contentEncoding: String? = nil, chunked: Bool = false, extraHeaders: [String: String] = [:],
    stallInBody: (bytes: Int, seconds: TimeInterval)? = nil, rangeFault: RangeFault? = nil,
    rateLimit: Int? = nil, corruptions: [Corruption] = []
  ) {
    self.body = body
    self.contentType = contentType
    self.etag = etag
    self.lastModified = lastModified
    self.ignoreRange = ignoreRange
    self.dropAfter = dropAfter
    self.dropTimes = dropTimes
    self.stallAfterHeaders = stallAfterHeaders
    self.stallTimes = stallTimes
    self.trickle = trickle
    self.contentEncoding = contentEncoding
    self.chunked = chunked
    self.extraHeaders = extraHeaders
    self.stallInBody = stallInBody
    self.rangeFault = rangeFault
    self.rateLimit = rateLimit.map { max(1, $0) }
    self.corruptions = corruptions
  }

  /// Makes a text file (`text/plain; charset=utf-8` unless told otherwise).
  public init(text: String, contentType: String = "text/plain; charset=utf-8", etag: ETag? = nil) {
    self.init(body: Array(text.utf8), contentType: contentType, etag: etag)
  }
}

extension FileResource {
  /// Version `number` of a file of `length` bytes: deterministic pseudo-random bytes and the strong
  /// `ETag` `"vNUMBER-LENGTH"`, both different for every number and the length the same. Two servers
  /// that route one path to two versions are two mirrors serving two versions of one file.
  public static func version(
    _ number: Int, length: Int, lastModified: Date? = nil, rateLimit: Int? = nil
  ) -> FileResource {
    FileResource(
      body: versionBytes(number, length: length), etag: .strong("v\(number)-\(length)"),
      lastModified: lastModified, rateLimit: rateLimit)
  }

  /// The bytes of `version(number, length:)`.
  public static func versionBytes(_ number: Int, length: Int) -> [UInt8] {
    TestData.pseudoRandomBytes(count: length, seed: 0x7665_7273_696f_6e00 &+ UInt64(truncatingIfNeeded: number))
  }
}

/// Bytes `bytes` (offsets in the representation, inclusive) of a file sent inverted, on the
/// requests chosen: every response whose body overlaps them (the default), only the route's
/// `onRequest`-th request (counting every request to the path since `route` set it, from 1), and
/// at most `times` responses in all. Headers, length and `ETag` stay as they are.
public struct Corruption: Sendable, Equatable {
  /// The offsets to invert, e.g. `1000...1999`.
  public var bytes: ClosedRange<Int>
  /// Only the route's request with this number (1 for the first), or nil for any.
  public var onRequest: Int?
  /// How many responses at most carry the corruption.
  public var times: Int

  /// Makes a corruption; by default every response that sends any of `bytes` carries it.
  public init(bytes: ClosedRange<Int>, onRequest: Int? = nil, times: Int = .max) {
    self.bytes = bytes
    self.onRequest = onRequest
    self.times = times
  }

  /// `body` with the offsets of `bytes` that it has inverted.
  func apply(to body: [UInt8]) -> [UInt8] {
    var out = body
    let lower = max(bytes.lowerBound, 0)
    let upper = min(bytes.upperBound, out.count - 1)
    guard lower <= upper else { return out }
    for index in lower...upper { out[index] = ~out[index] }
    return out
  }
}

/// Ways a file route breaks the rules of `Range` and `206`, as hostile or broken servers do.
public enum RangeFault: Sendable, Equatable {
  /// Answer every GET, with or without `Range`, with `206` and bytes `lower...upper` (and a
  /// truthful `Content-Range` when `contentRange` is true; none otherwise).
  case partial(lower: Int, upper: Int, contentRange: Bool)
  /// Honour `Range`, but end the `206` at byte `upper` (inclusive), with a `Content-Range` that
  /// says so: a short range. A range that starts past `upper` is answered honestly.
  case shortRange(upper: Int)
  /// Honour `Range` with a body from the asked start, but label it `Content-Range` as starting
  /// `shift` bytes later.
  case shiftedLabel(shift: Int)
  /// Honour `Range`, but give the file's total as `total` in `Content-Range`.
  case wrongTotal(total: Int)
  /// Answer a `Range` with `206` whose `Content-Length` is `length` (the body is cut or padded).
  case lyingLength(length: Int)
  /// Send `Accept-Ranges: bytes`, but answer every GET, `Range` or not, with `200` and the whole
  /// body (unlike `ignoreRange`, which does not claim ranges).
  case wholeBody
}

/// What a route answers.
public enum Behavior: Sendable {
  /// A static file with ranges, validators and optional faults.
  case file(FileResource)
  /// Successive requests get successive responses; after the last one the last repeats.
  case sequence([Response])
  /// A redirect with `status` (301, 302, 303, 307 or 308) to `location`, sent as given.
  case redirect(status: Int, location: String)
  /// Records uploads and answers 201 with JSON `{"bytes": N, "sha256": "hex"}`.
  case uploadSink
  /// Answers 200 with the request's headers as a JSON object (lower-cased names).
  case echoHeaders
  /// Answers whatever the closure returns.
  case handler(@Sendable (RecordedRequest) -> Response)

  /// A file from bytes; see `FileResource` for the options.
  public static func file(
    _ body: [UInt8], contentType: String = "application/octet-stream", etag: ETag? = nil,
    lastModified: Date? = nil
  ) -> Behavior {
    .file(FileResource(body: body, contentType: contentType, etag: etag, lastModified: lastModified))
  }

  /// A text file (`text/plain; charset=utf-8`).
  public static func text(_ text: String, etag: ETag? = nil, lastModified: Date? = nil) -> Behavior {
    .file(
      FileResource(
        body: Array(text.utf8), contentType: "text/plain; charset=utf-8", etag: etag, lastModified: lastModified))
  }

  /// The same response to every request.
  public static func fixed(_ response: Response) -> Behavior {
    .sequence([response])
  }

  /// Every request answered with `status` (e.g. 503, 404, 410) and a short text body, whatever its
  /// method or `Range`.
  public static func status(_ status: Int, headers: [String: String] = [:]) -> Behavior {
    .sequence([.text(status, "status \(status)\n", headers: headers)])
  }
}
