import Foundation

/// One request and what the server answered, in the server's exchange log (`TestHTTPServer.exchanges`).
///
/// The record is made when the answer starts; `bytesSent` grows as the body goes out, and counts a
/// piece of the body before it is written, so that a client that has read N bytes always finds at
/// least N here.
public struct Exchange: Sendable, Equatable {
  /// The request method, e.g. "GET".
  public var method: String
  /// The request path, without the query.
  public var path: String
  /// The request's `Range` header, or nil.
  public var range: String?
  /// The request's `If-Range` header, or nil.
  public var ifRange: String?
  /// The status code answered.
  public var status: Int
  /// The length of the body the answer stands for (0 for HEAD, 304 and other bodiless answers).
  public var bodyBytes: Int
  /// The body bytes written to the socket so far (framing of chunked answers not counted).
  public var bytesSent: Int
  /// Whether a `Corruption` of the file changed this answer's bytes.
  public var corrupted: Bool
  /// Which TCP connection carried the request (as `RecordedRequest.connectionID`).
  public var connectionID: Int

  /// Whether the whole body went out.
  public var isComplete: Bool { bytesSent == bodyBytes }

  /// Makes an exchange record (tests may build their own to compare).
  public init(
    method: String, path: String, range: String? = nil, ifRange: String? = nil, status: Int, bodyBytes: Int,
    bytesSent: Int, corrupted: Bool = false, connectionID: Int = 0
  ) {
    self.method = method
    self.path = path
    self.range = range
    self.ifRange = ifRange
    self.status = status
    self.bodyBytes = bodyBytes
    self.bytesSent = bytesSent
    self.corrupted = corrupted
    self.connectionID = connectionID
  }
}

/// Counters of the requests for one path (`TestHTTPServer.stats(for:)`), kept since the server
/// started or `resetStats()`, whatever answers the path (a route or the 404 of no route).
///
/// They let a test say "at least 4 ranges were served at once" without timing anything.
public struct PathStats: Sendable, Equatable {
  /// Requests received.
  public var requests = 0
  /// Requests that carried a `Range` header.
  public var rangeRequests = 0
  /// Distinct TCP connections that carried requests for the path.
  public var connections = 0
  /// The most requests for the path being answered at once (each on its own connection).
  public var maxConcurrent = 0
  /// The most requests with a `Range` header for the path being answered at once.
  public var maxConcurrentRanges = 0
  /// Body bytes written for the path, over all its requests.
  public var bytesSent = 0

  /// Zero counters.
  public init() {}
}

/// The live counters behind `PathStats`.
final class PathCounters {
  var stats = PathStats()
  var active = 0
  var activeRanges = 0
  var connectionIDs: Set<Int> = []

  /// Starts afresh; the peaks start from what is being answered now.
  func reset() {
    stats = PathStats()
    stats.maxConcurrent = active
    stats.maxConcurrentRanges = activeRanges
    connectionIDs.removeAll()
  }
}
