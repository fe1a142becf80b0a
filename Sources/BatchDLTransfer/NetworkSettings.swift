public struct NetworkSettings: Hashable, Sendable {
  public var allowsCellular: Bool
  public var allowsExpensive: Bool
  public var allowsConstrained: Bool
  public var waitsForConnectivity: Bool
  public var discretionary: Bool
  /// Local-time window (`01:00-05:00`) for discretionary tasks, in minutes after midnight.
  public var window: TimeWindow?
  public var maxConnectionsPerHost: Int
  public var maxConcurrent: Int
  /// Bytes per second for the whole session; nil is unlimited.
  public var rateLimit: Int64?
  public var cellularInterfaces: [String]
  public var expensiveInterfaces: [String]
  public var constrainedInterfaces: [String]
  /// `network.segments`: at most this many connections for one download (a task's `segments:`
  /// overrides it).
  public var segments = 1
  /// `network.min_segment_size`: a download is split only into segments at least this long.
  public var minSegmentSize: Int64 = 16 << 20
  /// `network.http_version`.
  public var httpVersion = HTTPVersion.auto

  package init(
    allowsCellular: Bool, allowsExpensive: Bool, allowsConstrained: Bool, waitsForConnectivity: Bool,
    discretionary: Bool, window: TimeWindow? = nil, maxConnectionsPerHost: Int, maxConcurrent: Int,
    rateLimit: Int64? = nil, cellularInterfaces: [String], expensiveInterfaces: [String],
    constrainedInterfaces: [String], segments: Int = 1, minSegmentSize: Int64 = 16 << 20,
    httpVersion: HTTPVersion = HTTPVersion.auto
  ) {
    self.allowsCellular = allowsCellular
    self.allowsExpensive = allowsExpensive
    self.allowsConstrained = allowsConstrained
    self.waitsForConnectivity = waitsForConnectivity
    self.discretionary = discretionary
    self.window = window
    self.maxConnectionsPerHost = maxConnectionsPerHost
    self.maxConcurrent = maxConcurrent
    self.rateLimit = rateLimit
    self.cellularInterfaces = cellularInterfaces
    self.expensiveInterfaces = expensiveInterfaces
    self.constrainedInterfaces = constrainedInterfaces
    self.segments = segments
    self.minSegmentSize = minSegmentSize
    self.httpVersion = httpVersion
  }
}

/// `network.http_version`: which HTTP the session's requests ask for.
public enum HTTPVersion: String, CaseIterable, Sendable {
  /// HTTP/2 over TLS where the server offers it by ALPN, else HTTP/1.1; HTTP/1.1 on `http://`.
  case auto
  /// HTTP/1.1 only.
  case http1_1 = "1.1"
  /// HTTP/2: by ALPN over TLS (HTTP/1.1 still when the server offers nothing else), and with prior
  /// knowledge (h2c) on `http://`.
  case http2 = "2"
}

/// A daily window of local time; `end` may be before `start` (a window across midnight).
public struct TimeWindow: Hashable, Sendable, CustomStringConvertible {
  public var start: Int
  public var end: Int

  /// Parses `HH:MM-HH:MM`.
  public static func parse(_ text: String) -> TimeWindow? {
    let parts = text.trimmingSpaces.split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count == 2, let start = minutes(parts[0]), let end = minutes(parts[1]), start != end
    else { return nil }
    return TimeWindow(start: start, end: end)
  }

  private static func minutes(_ text: Substring) -> Int? {
    let pieces = String(text).trimmingSpaces.split(separator: ":", omittingEmptySubsequences: false)
    guard pieces.count == 2, pieces[1].count == 2, let hours = Int(pieces[0]), let mins = Int(pieces[1]),
      (0...24).contains(hours), (0..<60).contains(mins), hours * 60 + mins <= 24 * 60
    else { return nil }
    return hours * 60 + mins
  }

  /// Whether `minute` (minutes after local midnight) is inside the window.
  public func contains(minute: Int) -> Bool {
    start < end ? (minute >= start && minute < end) : (minute >= start || minute < end)
  }

  public var description: String {
    func hhmm(_ m: Int) -> String {
      let h = m / 60
      let r = m % 60
      return (h < 10 ? "0\(h)" : "\(h)") + ":" + (r < 10 ? "0\(r)" : "\(r)")
    }
    return "\(hhmm(start))-\(hhmm(end))"
  }
}
