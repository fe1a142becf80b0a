#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `read`, `pread`, `write` and `pwrite` retried when a signal interrupts them (`EINTR`).
package enum SystemCalls {
  /// Up to `buffer.count` bytes from `fd`: the count read, 0 at the end, or -1 with `errno` set.
  package static func readRetrying(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
    while true {
      let count = read(fd, buffer.baseAddress, buffer.count)
      if count < 0 && errno == EINTR { continue }
      return count
    }
  }

  /// `read` at `offset`, without moving the file position.
  package static func preadRetrying(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
    while true {
      let count = pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
      if count < 0 && errno == EINTR { continue }
      return count
    }
  }

  /// Writes all of `bytes`; false with `errno` set when a write fails.
  package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
      let written = write(fd, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
      if written < 0 {
        if errno == EINTR { continue }
        return false
      }
      offset += written
    }
    return true
  }

  /// Writes all of `bytes` at `offset`, telling `wrote` the count of each write that succeeded;
  /// false with `errno` set when a write fails.
  package static func pwriteAll(
    _ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, wrote: (Int) -> Void = { _ in }
  ) -> Bool {
    var done = 0
    while done < bytes.count {
      let written = pwrite(fd, bytes.baseAddress.map { $0 + done }, bytes.count - done, off_t(offset) + off_t(done))
      if written < 0 {
        if errno == EINTR { continue }
        return false
      }
      done += written
      wrote(written)
    }
    return true
  }
}
