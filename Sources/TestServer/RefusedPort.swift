import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A port on 127.0.0.1 where nothing listens: a connection to it is refused at once
/// (`ECONNREFUSED`, curl's error 7), for as long as this object lives.
///
/// It holds a socket bound to the port that never listens, without `SO_REUSEADDR`, so no other
/// socket (another server of the test run, a client's ephemeral port) can take the port meanwhile.
/// A stopped server's port gives no such promise: the system may hand it out again.
public final class RefusedPort: @unchecked Sendable {
  private let fd: Int32

  /// The reserved port.
  public let port: UInt16

  /// Reserves a free port on 127.0.0.1.
  public init() throws {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw TestServerError(description: "socket: \(String(cString: strerror(errno)))") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    let bound = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    var actual = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &actual) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard bound == 0, named == 0 else {
      let reason = String(cString: strerror(errno))
      close(fd)
      throw TestServerError(description: "cannot reserve a port on 127.0.0.1: \(reason)")
    }
    self.fd = fd
    port = UInt16(bigEndian: actual.sin_port)
  }

  deinit {
    close(fd)
  }

  /// "http://127.0.0.1:PORT", without a trailing slash.
  public var baseURL: String { "http://127.0.0.1:\(port)" }

  /// The full URL of `path` at the refused port, e.g. `url("/files/a.bin")`.
  public func url(_ path: String) -> String {
    baseURL + (path.hasPrefix("/") ? path : "/" + path)
  }
}
