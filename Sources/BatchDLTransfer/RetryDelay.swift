import BatchDLSupport

/// How long to wait before the next try: the one backoff of every retry (a request, a segment's
/// range; descriptors are requests of the engine too).
extension RetryPolicy {
  /// Exponential backoff from `backoff`, doubled `exponent` times and capped at `maxBackoff`, with
  /// equal jitter (half of it fixed, half random, so that many transfers failing at once do not
  /// come back at once); at least the server's `Retry-After` (capped at an hour). `random` draws
  /// the jitter from `0...bound` (tests pass a fixed one).
  public func delay(
    exponent: Int, retryAfterSeconds: Int64 = 0, random: (Int64) -> Int64 = { Int64.random(in: 0...$0) }
  ) -> Interval {
    let exponent = max(0, min(exponent, 30))
    // Doubling stops at the cap rather than wrapping around (a long backoff doubled 30 times).
    let doubled = backoff.milliseconds > Int64.max >> exponent ? Int64.max : backoff.milliseconds << exponent
    let base = max(0, min(maxBackoff.milliseconds, doubled))
    let jittered = base / 2 + (base > 1 ? random(base / 2) : 0)
    let server = max(0, min(retryAfterSeconds, 3600)) * 1000
    return Interval(milliseconds: max(jittered, server))
  }
}
