import Crypto

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An `errno` turned into a Swift error with the system's own words.
public struct SystemError: Error, CustomStringConvertible {
  public var code: Int32
  public var operation: String

  public init(_ operation: String, code: Int32 = errno) {
    self.operation = operation
    self.code = code
  }

  public var reason: String { String(cString: strerror(code)) }
  public var description: String { "\(operation): \(reason)" }
}

/// Small POSIX file helpers with clear errors.
public enum FileAccess {
  /// The whole file, read with `read(2)`.
  public static func readAll(_ path: String) throws(SystemError) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw SystemError("open \(path)") }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw SystemError("stat \(path)") }
    if (info.st_mode & S_IFMT) == S_IFDIR { throw SystemError("read \(path)", code: EISDIR) }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(Int(info.st_size))
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 {
        if errno == EINTR { continue }
        throw SystemError("read \(path)")
      }
      if count == 0 { break }
      bytes.append(contentsOf: chunk[0..<count])
    }
    return bytes
  }

  /// Creates `path` and the folders above it, like `mkdir -p`.
  public static func makeDirectories(_ path: String) throws(SystemError) {
    var info = stat()
    if stat(path, &info) == 0 {
      if (info.st_mode & S_IFMT) == S_IFDIR { return }
      throw SystemError("create the folder \(path)", code: ENOTDIR)
    }
    let parent = directory(of: path)
    if parent != path && parent != "." && parent != "/" { try makeDirectories(parent) }
    if mkdir(path, 0o755) != 0 && errno != EEXIST { throw SystemError("create the folder \(path)") }
  }

  /// A file's size and modification time (nanoseconds since the epoch), or nil when it does not
  /// exist or is not a regular file.
  public static func status(_ path: String) -> (size: Int64, modified: Int64)? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return status(of: info)
  }

  /// The same for an open file.
  public static func status(descriptor: Int32) -> (size: Int64, modified: Int64)? {
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { return nil }
    return status(of: info)
  }

  private static func status(of info: stat) -> (size: Int64, modified: Int64)? {
    guard (info.st_mode & S_IFMT) == S_IFREG else { return nil }
    return (Int64(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
  }

  /// The folder part of `path` ("." when there is none).
  public static func directory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    if slash == path.startIndex { return "/" }
    return String(path[..<slash])
  }

  /// The last part of `path` (all of it when it has no `/`).
  public static func name(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return path }
    return String(path[path.index(after: slash)...])
  }

  /// `relative` resolved against `base`, unless it is absolute; "." bases are dropped.
  public static func resolve(_ relative: String, against base: String) -> String {
    if relative.hasPrefix("/") || base == "." || base.isEmpty { return relative }
    return base.hasSuffix("/") ? base + relative : base + "/" + relative
  }
}

/// Reads a text file line by line without loading it whole.
public final class LineReader {
  private let file: UnsafeMutablePointer<FILE>
  private var buffer: UnsafeMutablePointer<CChar>?
  private var capacity = 0

  public init(path: String) throws(SystemError) {
    guard let file = fopen(path, "re") else { throw SystemError("open \(path)") }
    self.file = file
  }

  deinit {
    free(buffer)
    fclose(file)
  }

  /// Calls `body` with each line's bytes (without the line break) until the end of the file.
  public func forEachLine(_ body: (UnsafeBufferPointer<UInt8>) -> Void) throws(SystemError) {
    while true {
      let count = getline(&buffer, &capacity, file)
      if count < 0 {
        if ferror(file) != 0 { throw SystemError("read") }
        return
      }
      guard let buffer else { return }
      var length = count
      let bytes = UnsafeRawPointer(buffer).assumingMemoryBound(to: UInt8.self)
      while length > 0, bytes[length - 1] == 0x0A || bytes[length - 1] == 0x0D { length -= 1 }
      body(UnsafeBufferPointer(start: bytes, count: length))
    }
  }
}

extension FileAccess {
  /// The SHA-256 of a file's contents (hex), or nil when it cannot be read.
  public static func sha256(of path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var hasher = SHA256()
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count < 0 { return nil }
      if count == 0 { break }
      buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }
    return hasher.finalize().hexString
  }
}
