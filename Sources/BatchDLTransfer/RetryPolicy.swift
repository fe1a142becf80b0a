import BatchDLSupport

public struct RetryPolicy: Hashable, Sendable {
  /// Total tries; 1 means no retry.
  public var attempts: Int
  public var backoff: Interval
  public var maxBackoff: Interval

  package init(attempts: Int, backoff: Interval, maxBackoff: Interval) {
    self.attempts = attempts
    self.backoff = backoff
    self.maxBackoff = maxBackoff
  }
}
