import BatchDLSupport
import CCurl

/// Cancels an engine from any thread: sets its flag and wakes its poll (`curl_multi_wakeup` is
/// thread-safe).
public struct Canceller: @unchecked Sendable {
  package let flag: AtomicFlag
  package let multi: UnsafeMutableRawPointer

  public func cancel() {
    flag.set()
    curl_multi_wakeup(multi)
  }
}
