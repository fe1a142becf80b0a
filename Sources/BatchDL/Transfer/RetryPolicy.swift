public struct RetryPolicy: Hashable, Sendable {
  /// Total tries; 1 means no retry.
  public var attempts: Int
  public var backoff: Interval
  public var maxBackoff: Interval
}
