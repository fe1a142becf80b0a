import CSystem
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
      let count = chunk.withUnsafeMutableBytes { SystemCalls.readRetrying(fd, into: $0) }
      if count < 0 { throw SystemError("read \(path)") }
      if count == 0 { break }
      bytes.append(contentsOf: chunk[0..<count])
    }
    return bytes
  }

  /// Why a small file a manifest names (a secret, a netrc file) cannot be read.
  package enum SmallFileProblem: Error, Equatable {
    /// No file at the path.
    case missing
    /// Open failed (no such file, no permission...): `errno`'s words.
    case unreadable(String)
    /// A FIFO, device, socket or folder, by `irregularKind`'s words ("a folder" for a folder).
    case notRegular(String)
    /// Longer than the limit: its size.
    case tooLarge(Int64)
  }

  /// The bytes of a regular file of at most `limit` bytes. It is opened without blocking and
  /// checked on the descriptor before a byte is read: a FIFO would hold the reading forever, a
  /// device feed it endless bytes, and a check by path could be answered by another file.
  package static func readSmallFile(_ path: String, limit: Int64) -> Result<[UInt8], SmallFileProblem> {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard fd >= 0 else { return .failure(errno == ENOENT ? .missing : .unreadable(String(cString: strerror(errno)))) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { return .failure(.unreadable(String(cString: strerror(errno)))) }
    guard info.st_mode & S_IFMT == S_IFREG else {
      return .failure(.notRegular(irregularKind(info.st_mode) ?? "a folder"))
    }
    guard Int64(info.st_size) <= limit else { return .failure(.tooLarge(Int64(info.st_size))) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let count = chunk.withUnsafeMutableBytes { SystemCalls.readRetrying(fd, into: $0) }
      if count < 0 { return .failure(.unreadable(String(cString: strerror(errno)))) }
      if count == 0 { break }
      bytes.append(contentsOf: chunk[0..<count])
      // A file that grew past the limit since `fstat`.
      if Int64(bytes.count) > limit { return .failure(.tooLarge(Int64(bytes.count))) }
    }
    return .success(bytes)
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

  /// Sets a file's modification time (seconds since 1970), leaving its access time; returns the
  /// time as `status` gives it (nanoseconds), or nil when it could not be set. A symbolic link
  /// put at `path` is not followed: the time never lands on a file it points to.
  public static func setModified(_ path: String, seconds: Int64) -> Int64? {
    guard csystem_set_modified(path, seconds) == 0 else { return nil }
    return nanoseconds(seconds: seconds, nanoseconds: 0)
  }

  /// The same for an open file: before it is linked or renamed into place, so that it appears
  /// there with its time.
  @discardableResult
  public static func setModified(descriptor: Int32, seconds: Int64) -> Bool {
    csystem_set_modified_descriptor(descriptor, seconds) == 0
  }

  /// The same for an open file.
  public static func status(descriptor: Int32) -> (size: Int64, modified: Int64)? {
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { return nil }
    return status(of: info)
  }

  package static func status(of info: stat) -> (size: Int64, modified: Int64)? {
    guard (info.st_mode & S_IFMT) == S_IFREG else { return nil }
    return (
      Int64(info.st_size), nanoseconds(seconds: Int64(info.st_mtim.tv_sec), nanoseconds: Int64(info.st_mtim.tv_nsec))
    )
  }

  /// A file time as nanoseconds since the epoch, saturated at the ends of `Int64` (before 1678 or
  /// after 2262, where a server's `Last-Modified` or a `touch` can put a file, nanoseconds do not
  /// fit; such a time reads as the nearest one that does, never as a trap).
  public static func nanoseconds(seconds: Int64, nanoseconds: Int64) -> Int64 {
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return seconds < 0 ? .min : .max }
    let (sum, overflowAgain) = scaled.addingReportingOverflow(nanoseconds)
    if overflowAgain { return nanoseconds < 0 ? .min : .max }
    return sum
  }

  /// The folder part of `path` ("." when there is none).
  public static func directory(of path: String) -> String {
    // On the UTF-8 bytes: `String.lastIndex(of:)` walks grapheme clusters, and the UTF-8 view's
    // generic walk still costs hundreds of instructions a call; every placed file asks.
    withBytes(of: path) { bytes in
      guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "." }
      if slash == 0 { return "/" }
      return String(decoding: UnsafeBufferPointer(rebasing: bytes[..<slash]), as: UTF8.self)
    }
  }

  /// Whether `path` names an entry directly in `folder` (`folder/name`), as `directory(of:)` would
  /// tell, compared byte by byte without making the folder's path.
  package static func isEntry(_ path: String, of folder: String) -> Bool {
    withBytes(of: path) { path in
      withBytes(of: folder) { folder in
        guard let last = folder.last, last != UInt8(ascii: "/"), path.count > folder.count + 1,
          path[folder.count] == UInt8(ascii: "/"), let pathStart = path.baseAddress,
          let folderStart = folder.baseAddress, memcmp(pathStart, folderStart, folder.count) == 0
        else { return false }
        return !path[(folder.count + 1)...].contains(UInt8(ascii: "/"))
      }
    }
  }

  /// The last part of `path` (all of it when it has no `/`).
  public static func name(of path: String) -> String {
    withBytes(of: path) { bytes in
      guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return path }
      return String(decoding: UnsafeBufferPointer(rebasing: bytes[(slash + 1)...]), as: UTF8.self)
    }
  }

  /// Where the last part of `path` starts, in its UTF-8 bytes.
  package static func nameStart(of path: String) -> Int {
    withBytes(of: path) { bytes in bytes.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 } ?? 0 }
  }

  /// Calls `body` with the UTF-8 bytes of `text` (where they lie, for a native string).
  private static func withBytes<R>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    var text = text
    return text.withUTF8(body)
  }

  /// `relative` resolved against `base`, unless it is absolute; "." bases are dropped.
  public static func resolve(_ relative: String, against base: String) -> String {
    // On the bytes, and into one allocation: every task's destination passes here.
    if relative.utf8.first == UInt8(ascii: "/") || base.isEmpty || base == "." { return relative }
    let slash = base.utf8.last != UInt8(ascii: "/")
    let count = base.utf8.count + (slash ? 1 : 0) + relative.utf8.count
    // Copied in place: appending to a copy of `base` costs twice as much.
    return String(unsafeUninitializedCapacity: count) { buffer in
      var end = withBytes(of: base) { buffer[...].initialize(fromContentsOf: $0) }
      if slash {
        buffer[end] = UInt8(ascii: "/")
        end += 1
      }
      return withBytes(of: relative) { buffer[end...].initialize(fromContentsOf: $0) }
    }
  }

  /// An absolute path without `.`, `..` and empty parts, split on the byte `/` as the kernel does
  /// (a combining mark after a `/` does not make it another character).
  public static func normalize(_ path: String) -> String {
    if isNormal(path) { return path }
    var parts: [ArraySlice<UInt8>] = []
    let bytes = Array(path.utf8)
    for part in bytes.split(separator: 0x2F) {
      if part.elementsEqual([0x2E]) { continue }
      if part.elementsEqual([0x2E, 0x2E]) {
        _ = parts.popLast()
        continue
      }
      parts.append(part)
    }
    var joined: [UInt8] = []
    joined.reserveCapacity(bytes.count + 1)
    for part in parts {
      joined.append(0x2F)
      joined += part
    }
    return joined.isEmpty ? "/" : String(decoding: joined, as: UTF8.self)
  }
}

extension FileAccess {
  /// Whether `normalize` would give `path` back as it is: absolute, no empty, `.` or `..` part,
  /// no `/` at its end (a plan's destinations mostly are; one pass over the bytes, no String made).
  static func isNormal(_ path: String) -> Bool {
    let utf8 = path.utf8
    return utf8.withContiguousStorageIfAvailable { bytes -> Bool in
      guard bytes.first == 0x2F, bytes.count > 1, bytes.last != 0x2F else { return bytes.elementsEqual([0x2F]) }
      var partStart = 1
      for index in 1...bytes.count {
        guard index == bytes.count || bytes[index] == 0x2F else { continue }
        let length = index - partStart
        if length == 0 { return false }
        if bytes[partStart] == 0x2E && (length == 1 || (length == 2 && bytes[partStart + 1] == 0x2E)) { return false }
        partStart = index + 1
      }
      return true
    } ?? false
  }
}

/// Why a file cannot be read: the system's words, or a limit the file passes.
public struct FileProblem: Error, CustomStringConvertible {
  public var reason: String

  public init(_ reason: String) {
    self.reason = reason
  }

  package init(_ error: SystemError) {
    reason = error.reason
  }

  public var description: String { reason }
}

extension FileAccess {
  /// What kind of file `mode` describes, in words, when it is not a regular file.
  package static func irregularKind(_ mode: mode_t) -> String? {
    switch mode & S_IFMT {
    case S_IFREG: return nil
    case S_IFDIR: return "a folder"
    case S_IFIFO: return "a FIFO (named pipe)"
    case S_IFCHR: return "a character device"
    case S_IFBLK: return "a block device"
    case S_IFSOCK: return "a socket"
    default: return "not a regular file"
    }
  }
}

/// Reads a regular text file line by line without loading it whole, within limits on its bytes,
/// its lines and the bytes of one line, so that memory stays bounded whatever the file holds.
public final class LineReader {
  public struct Limits: Sendable {
    public var bytes: Int64
    public var lines: Int
    public var lineBytes: Int

    public init(bytes: Int64, lines: Int, lineBytes: Int) {
      self.bytes = bytes
      self.lines = lines
      self.lineBytes = lineBytes
    }

    /// What one `list:` file may hold.
    public static let listFile = Limits(
      bytes: BatchDLSupport.Limits.listBytes, lines: BatchDLSupport.Limits.listLines,
      lineBytes: BatchDLSupport.Limits.listLineBytes)
  }

  private let fd: Int32
  private let limits: Limits

  /// Opens `path`; FIFOs, devices, folders and sockets are refused (without blocking on a FIFO),
  /// and so is a file already larger than `limits.bytes`.
  public init(path: String, limits: Limits = .listFile) throws(FileProblem) {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard fd >= 0 else { throw FileProblem(SystemError("open \(path)")) }
    var info = stat()
    guard fstat(fd, &info) == 0 else {
      let error = SystemError("stat \(path)")
      close(fd)
      throw FileProblem(error)
    }
    if let kind = FileAccess.irregularKind(info.st_mode) {
      close(fd)
      throw FileProblem("it is \(kind), not a regular file")
    }
    if Int64(info.st_size) > limits.bytes {
      close(fd)
      throw FileProblem(Self.tooLarge(limits))
    }
    self.fd = fd
    self.limits = limits
  }

  deinit {
    close(fd)
  }

  private static func tooLarge(_ limits: Limits) -> String {
    "it holds more than \(ByteSize.format(limits.bytes)), the most one list file may hold; split it into several"
  }

  /// Calls `body` with each line's bytes (without the line break) until the end of the file.
  public func forEachLine(_ body: (UnsafeBufferPointer<UInt8>) -> Void) throws(FileProblem) {
    let chunkSize = 1 << 18
    let chunk = UnsafeMutablePointer<UInt8>.allocate(capacity: chunkSize)
    defer { chunk.deallocate() }
    // A line that runs past the end of a chunk (at most `limits.lineBytes` of it).
    var carry: [UInt8] = []
    var total: Int64 = 0
    var lines = 0

    func deliver(_ start: UnsafePointer<UInt8>, _ count: Int) throws(FileProblem) {
      lines += 1
      if lines > limits.lines {
        throw FileProblem(
          "it has more than \(limits.lines) lines, the most one list file may hold; split it into several")
      }
      var length = count
      while length > 0, start[length - 1] == 0x0A || start[length - 1] == 0x0D { length -= 1 }
      body(UnsafeBufferPointer(start: start, count: length))
    }

    func lineTooLong() -> FileProblem {
      FileProblem(
        "line \(lines + 1) is longer than \(ByteSize.format(Int64(limits.lineBytes))), the most one line may hold")
    }

    while true {
      let count = SystemCalls.readRetrying(fd, into: UnsafeMutableRawBufferPointer(start: chunk, count: chunkSize))
      if count < 0 { throw FileProblem(SystemError("read")) }
      if count == 0 { break }
      total += Int64(count)
      if total > limits.bytes { throw FileProblem(Self.tooLarge(limits)) }
      var start = 0
      while start < count {
        guard let newline = memchr(chunk + start, 0x0A, count - start) else {
          if carry.count + count - start > limits.lineBytes { throw lineTooLong() }
          carry.append(contentsOf: UnsafeBufferPointer(start: chunk + start, count: count - start))
          break
        }
        let end = chunk.distance(to: newline.assumingMemoryBound(to: UInt8.self))
        if carry.isEmpty {
          if end - start > limits.lineBytes { throw lineTooLong() }
          try deliver(chunk + start, end - start)
        } else {
          if carry.count + end - start > limits.lineBytes { throw lineTooLong() }
          carry.append(contentsOf: UnsafeBufferPointer(start: chunk + start, count: end - start))
          try carry.withUnsafeBufferPointer { (buffer) throws(FileProblem) in
            guard let base = buffer.baseAddress else { return }
            try deliver(base, buffer.count)
          }
          carry.removeAll(keepingCapacity: true)
        }
        start = end + 1
      }
    }
    if !carry.isEmpty {
      try carry.withUnsafeBufferPointer { (buffer) throws(FileProblem) in
        guard let base = buffer.baseAddress else { return }
        try deliver(base, buffer.count)
      }
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
      let count = buffer.withUnsafeMutableBytes { SystemCalls.readRetrying(fd, into: $0) }
      if count < 0 { return nil }
      if count == 0 { break }
      buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }
    return hasher.finalize().hexString
  }

  /// Where the symbolic link at `path` leads, followed to its end (a relative link against the
  /// link's folder); nil when it cannot be read or loops. The last link may name a file that does
  /// not exist yet.
  package static func resolvingLink(_ path: String) -> String? {
    var current = path
    for _ in 0..<40 {
      var info = stat()
      guard lstat(current, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { return current }
      var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
      let count = readlink(current, &buffer, buffer.count - 1)
      guard count > 0 else { return nil }
      let link = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
      current = link.hasPrefix("/") ? link : directory(of: current) + "/" + link
    }
    return nil
  }

}
