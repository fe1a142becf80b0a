import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// What one run of `/usr/bin/curl` produced.
struct CurlResult {
  var status: Int32
  var output: [UInt8]
  var errorText: String
  var seconds: TimeInterval

  var text: String { String(decoding: output, as: UTF8.self) }

  /// The final response of an `-i` run (1xx interim blocks skipped).
  var reply: HTTPReply { HTTPReply(output) }
}

/// A response as printed by `curl -i`.
struct HTTPReply {
  var status = 0
  var headers: [String: String] = [:]
  var body: [UInt8] = []

  var bodyText: String { String(decoding: body, as: UTF8.self) }

  init(_ bytes: [UInt8]) {
    var rest = bytes[...]
    while let end = Self.headerEnd(rest) {
      let head = String(decoding: rest[rest.startIndex..<end], as: UTF8.self)
      rest = rest[(end + 4)...]
      let lines = head.components(separatedBy: "\r\n")
      let fields = lines.first?.split(separator: " ") ?? []
      status = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
      headers = [:]
      for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
      }
      if status >= 200 { break }
    }
    body = Array(rest)
  }

  private static func headerEnd(_ bytes: ArraySlice<UInt8>) -> Int? {
    guard bytes.count >= 4 else { return nil }
    var index = bytes.startIndex
    while index + 3 < bytes.endIndex {
      if bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
        return index
      }
      index += 1
    }
    return nil
  }
}

/// A `curl` process started but not yet waited for.
final class RunningCurl {
  let process = Process()
  let outputPath: String
  let errorPath: String
  let started = Date()

  init(_ arguments: [String]) throws {
    let stem = NSTemporaryDirectory() + "testserver-curl-\(UUID().uuidString)"
    outputPath = stem + ".out"
    errorPath = stem + ".err"
    _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-q", "-sS", "--noproxy", "*", "--max-time", "20"] + arguments
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle(forWritingAtPath: outputPath)
    process.standardError = FileHandle(forWritingAtPath: errorPath)
    try process.run()
  }

  func wait() -> CurlResult {
    process.waitUntilExit()
    let seconds = Date().timeIntervalSince(started)
    let output = (try? Data(contentsOf: URL(fileURLWithPath: outputPath))) ?? Data()
    let errors = (try? Data(contentsOf: URL(fileURLWithPath: errorPath))) ?? Data()
    try? FileManager.default.removeItem(atPath: outputPath)
    try? FileManager.default.removeItem(atPath: errorPath)
    return CurlResult(
      status: process.terminationStatus, output: Array(output), errorText: String(decoding: errors, as: UTF8.self),
      seconds: seconds)
  }
}

/// Runs `/usr/bin/curl` (quietly, no proxy, no .curlrc, 20 s at most) and waits for it.
func curl(_ arguments: String...) throws -> CurlResult {
  try RunningCurl(arguments).wait()
}

/// Writes `bytes` to a new temporary file and returns its path.
func temporaryFile(_ bytes: [UInt8]) -> String {
  let path = NSTemporaryDirectory() + "testserver-\(UUID().uuidString).bin"
  _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
  return path
}

/// A raw TCP connection to 127.0.0.1, for what curl cannot send.
final class RawConnection {
  private(set) var fd: Int32

  init?(port: UInt16, host: UInt32 = 0x7f00_0001) {
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = host.bigEndian
    let connected = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else {
      // deinit runs for a failed init too: close once, there.
      return nil
    }
  }

  deinit { if fd >= 0 { close(fd) } }

  func send(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  }

  /// Reads until the peer closes or the 5 s timeout passes.
  func readAll() -> String {
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if count <= 0 { break }
      result += chunk[0..<count]
    }
    return String(decoding: result, as: UTF8.self)
  }
}
