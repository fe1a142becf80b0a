#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Buffered writes to a file descriptor (stdout by default), for output of a million lines.
public final class BufferedOutput: TextOutputStream {
  private let descriptor: Int32
  private var buffer: [UInt8] = []
  private let limit = 1 << 16

  public init(descriptor: Int32 = 1) {
    self.descriptor = descriptor
    buffer.reserveCapacity(limit + 4096)
  }

  deinit {
    flush()
  }

  public func write(_ string: String) {
    buffer.append(contentsOf: string.utf8)
    if buffer.count >= limit { flush() }
  }

  /// Writes out what is buffered; a closed pipe (`batchdl plan | head`) ends quietly.
  public func flush() {
    _ = buffer.withUnsafeBytes { SystemCalls.writeAll(descriptor, $0) }
    buffer.removeAll(keepingCapacity: true)
  }
}

/// Standard error, unbuffered, for diagnostics.
public struct StandardError: TextOutputStream {
  public init() {}

  public mutating func write(_ string: String) {
    var bytes = Array(string.utf8)
    _ = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
  }
}
