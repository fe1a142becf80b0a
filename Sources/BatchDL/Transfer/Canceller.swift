import CCurl

/// Cancels an engine from any thread: sets its flag and wakes its poll (`curl_multi_wakeup` is
/// thread-safe).
public struct Canceller: @unchecked Sendable {
  let flag: Flag
  let multi: UnsafeMutableRawPointer

  public func cancel() {
    flag.set()
    curl_multi_wakeup(multi)
  }
}
