import Testing

@testable import BatchDL
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// The one backoff of every retry: doubled per try, capped, with equal jitter, and never shorter
/// than the server's `Retry-After`.
@Suite struct RetryDelayTests {
  static let policy = RetryPolicy(attempts: 5, backoff: .seconds(1), maxBackoff: .seconds(10))

  @Test(
    arguments: [
      // exponent, Retry-After (s), jitter drawn → milliseconds
      (0, 0, 0, 500), (0, 0, 500, 1000), (1, 0, 0, 1000), (3, 0, 4000, 8000),
      // Capped at maxBackoff, and a huge exponent does not wrap around.
      (4, 0, 5000, 10_000), (200, 0, 0, 5000), (-3, 0, 0, 500),
      // The server's Retry-After wins when longer; capped at an hour.
      (0, 30, 0, 30_000), (3, 2, 0, 4000), (0, 90_000, 0, 3_600_000), (0, -5, 0, 500),
    ] as [(Int, Int64, Int64, Int64)])
  func delay(exponent: Int, retryAfter: Int64, drawn: Int64, milliseconds: Int64) {
    var bound: Int64 = -1
    let delay = Self.policy.delay(exponent: exponent, retryAfterSeconds: retryAfter) { limit in
      bound = limit
      return min(drawn, limit)
    }
    #expect(delay.milliseconds == milliseconds)
    if bound >= 0 { #expect(drawn <= bound, "the jitter is drawn from up to half the backoff") }
  }

  @Test func aBackoffOfZeroOrOneHasNoJitter() {
    let none = RetryPolicy(attempts: 2, backoff: Interval(milliseconds: 0), maxBackoff: .seconds(1))
    #expect(none.delay(exponent: 3) { _ in 99 }.milliseconds == 0)
  }
}
