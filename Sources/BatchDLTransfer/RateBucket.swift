/// A session's `rate_limit` as a token bucket shared by its transfers: each takes bytes as they
/// arrive and pauses when the budget is spent; the engine refills it as time passes.
package final class RateBucket {
  private let rate: Double
  private let burst: Double
  private var tokens: Double
  private var last: UInt64

  package init(bytesPerSecond: Int64) {
    rate = Double(bytesPerSecond)
    burst = max(16 * 1024, rate / 10)
    tokens = burst
    last = Engine.now()
  }

  package var hasBudget: Bool { tokens > 0 }

  package func refill(now: UInt64) {
    guard now > last else { return }
    tokens = min(burst, tokens + rate * Double(now - last) / 1000)
    last = now
  }

  /// Takes `count` bytes if any budget is left (it may go below zero, repaid by later refills).
  package func take(_ count: Int) -> Bool {
    refill(now: Engine.now())
    guard tokens > 0 else { return false }
    tokens -= Double(count)
    return true
  }
}
