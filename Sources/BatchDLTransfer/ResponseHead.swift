/// The status line and headers of one HTTP response.
public struct ResponseHead: Sendable, Equatable {
  public var status: Int = 0
  public var reason: String = ""
  /// The protocol of the status line as libcurl gives it: `HTTP/2`, `HTTP/1.1`.
  public var version: String = ""
  /// Header names lower-cased, in the order received.
  public var fields: [(name: String, value: String)] = []

  public init() {}

  public static func == (lhs: ResponseHead, rhs: ResponseHead) -> Bool {
    lhs.status == rhs.status && lhs.reason == rhs.reason && lhs.version == rhs.version
      && lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
  }

  /// The last value of header `name` (lower-case).
  public subscript(name: String) -> String? {
    fields.last { $0.name == name }?.value
  }

  public var isSuccess: Bool { (200..<300).contains(status) }

  /// The media type without parameters, lower-cased (`application/json`).
  public var mediaType: String? {
    self["content-type"].map { value in
      String(value.split(separator: ";", maxSplits: 1).first ?? "").trimmingSpaces.lowercased()
    }
  }

  public var contentLength: Int64? {
    // The parser trims values already; a head made elsewhere may not be.
    self["content-length"].flatMap { Int64($0) ?? Int64($0.trimmingSpaces) }
  }

  /// A strong `ETag`, or nil when there is none or it is weak (`W/"..."`), which cannot validate a range.
  public var strongETag: String? {
    guard let tag = self["etag"], !tag.hasPrefix("W/") else { return nil }
    return tag
  }

  /// A `Content-Encoding` other than `identity`.
  public var encoding: String? {
    guard let value = self["content-encoding"]?.trimmingSpaces.lowercased(), !value.isEmpty, value != "identity"
    else { return nil }
    return value
  }
}

/// Builds the `ResponseHead` of the final response from libcurl's header callback, which delivers
/// every line of every response (redirects and `100 Continue` included).
package struct ResponseHeadParser {
  package private(set) var head = ResponseHead()
  /// True once the blank line after a final (non-1xx) response's headers has been seen.
  package private(set) var complete = false

  /// Takes one line as libcurl delivers it (with its line ending). Header lines are split on the
  /// bytes, without building a string of the whole line: a run of many small files parses a few
  /// lines per file.
  package mutating func consume(_ line: UnsafeRawBufferPointer) {
    var end = line.count
    while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
    if end == 0 {
      if head.status >= 200 { complete = true }
      return
    }
    if end >= 5, line[0] == 0x48, line[1] == 0x54, line[2] == 0x54, line[3] == 0x50, line[4] == 0x2F {  // HTTP/
      head = ResponseHead()
      // Room for a typical response's headers at once, rather than growing the array 4 times.
      head.fields.reserveCapacity(16)
      complete = false
      // `HTTP/1.1 200 OK`: the version, the status code, then the reason (which may hold spaces).
      func isSpace(_ index: Int) -> Bool { line[index] == 0x20 }
      var index = 5
      while index < end, !isSpace(index) { index += 1 }
      head.version = String(decoding: UnsafeRawBufferPointer(rebasing: line[0..<index]), as: UTF8.self)
      while index < end, isSpace(index) { index += 1 }
      let codeStart = index
      while index < end, !isSpace(index) { index += 1 }
      let code = String(decoding: UnsafeRawBufferPointer(rebasing: line[codeStart..<index]), as: UTF8.self)
      head.status = Int(code) ?? 0
      while index < end, isSpace(index) { index += 1 }
      if index < end {
        head.reason = String(decoding: UnsafeRawBufferPointer(rebasing: line[index..<end]), as: UTF8.self)
      }
      return
    }
    var colon = 0
    while colon < end, line[colon] != 0x3A { colon += 1 }
    guard colon < end else { return }
    let name = String(unsafeUninitializedCapacity: colon) { name in
      for index in 0..<colon {
        let byte = line[index]
        name[index] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
      }
      return colon
    }
    var start = colon + 1
    while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
    var stop = end
    while stop > start, line[stop - 1] == 0x20 || line[stop - 1] == 0x09 { stop -= 1 }
    head.fields.append((name, String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<stop]), as: UTF8.self)))
  }
}

/// `Content-Range: bytes START-END/TOTAL` (TOTAL may be `*`).
package struct ContentRange: Equatable {
  package var start: Int64
  package var end: Int64
  package var total: Int64?

  package init?(_ text: String) {
    let trimmed = text.trimmingSpaces
    guard trimmed.hasPrefix("bytes ") else { return nil }
    let spec = trimmed.dropFirst(6)
    let parts = spec.split(separator: "/", maxSplits: 1)
    guard parts.count == 2 else { return nil }
    let bounds = parts[0].split(separator: "-", maxSplits: 1)
    guard bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]) else { return nil }
    self.start = start
    self.end = end
    total = parts[1] == "*" ? nil : Int64(parts[1])
  }
}
