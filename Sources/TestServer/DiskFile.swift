import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension FileResource {
  /// The file at `path` as a file route, for benchmarks that need the test server's pacing: its
  /// bytes read once into memory, a strong `ETag` made from its modification time and size as
  /// nginx makes it (`"MTIME-SIZE"` in hexadecimal), its `Last-Modified` date, ranges and
  /// `If-Range` as for any file, and `rateLimit` bytes per second for each response (no burst).
  public static func onDisk(_ path: String, rateLimit: Int? = nil) throws -> FileResource {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      throw TestServerError(description: "cannot open \(path): \(String(cString: strerror(errno)))")
    }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else {
      throw TestServerError(description: "cannot stat \(path): \(String(cString: strerror(errno)))")
    }
    guard (info.st_mode & S_IFMT) == S_IFREG else {
      throw TestServerError(description: "\(path) is not a regular file")
    }
    let size = Int(info.st_size)
    var failure: Int32 = 0
    // Read straight into the array: a copy through `Data` would hold the file twice for a moment.
    let body = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
      count = 0
      while count < size {
        let got = read(fd, buffer.baseAddress.map { $0 + count }, size - count)
        if got > 0 {
          count += got
        } else if got < 0 && errno == EINTR {
          continue
        } else {
          failure = got < 0 ? errno : EIO
          return
        }
      }
    }
    guard failure == 0, body.count == size else {
      let reason = failure == EIO ? "the file got shorter while it was read" : String(cString: strerror(failure))
      throw TestServerError(description: "cannot read \(path): \(reason)")
    }
    let modified = Int(info.st_mtim.tv_sec)
    return FileResource(
      body: body, etag: .strong(String(modified, radix: 16) + "-" + String(size, radix: 16)),
      lastModified: Date(timeIntervalSince1970: TimeInterval(modified)), rateLimit: rateLimit)
  }
}
