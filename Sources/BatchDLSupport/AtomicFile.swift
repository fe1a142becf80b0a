import CSystem
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Writes `contents` to `path` atomically (a temporary file beside it, then a rename).
public enum AtomicFile {
  /// Creates the folders above `path`.
  public static func makeParent(of path: String) throws(SystemError) {
    try FileAccess.makeDirectories(FileAccess.directory(of: path))
  }

  public static func write(_ contents: String, to path: String) throws(SystemError) {
    try write(Array(contents.utf8), to: path)
  }

  /// Writes what `body` writes to its stream to `path` atomically, 64 KB at a time: a report of
  /// a million tasks never stands whole in memory. The text goes to `PATH.batchdl-part`, which is
  /// renamed over `path` once all of it is written.
  public static func write(
    to path: String, _ body: (inout FileStream) -> Void
  ) throws(SystemError) {
    try makeParent(of: path)
    let temporary = PartialFile.path(of: path)
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard fd >= 0 else { throw SystemError("create \(temporary)") }
    var stream = FileStream(descriptor: fd)
    body(&stream)
    stream.flush()
    close(fd)
    if let failure = stream.failure {
      unlink(temporary)
      throw SystemError("write \(temporary)", code: failure)
    }
    guard rename(temporary, path) == 0 else {
      let error = SystemError("rename \(temporary) to \(path)")
      unlink(temporary)
      throw error
    }
  }

  /// Writes an output the command line names (`--report`, `--junit`, `--metrics`, `-o`) as a
  /// shell's `>` would, but atomically where that is possible: through a symbolic link to the file
  /// it names (the link stays), straight into what is not a regular file (`/dev/stdout`, a FIFO,
  /// `>(jq .)`, a device: never replaced), else a temporary file renamed over `path`.
  public static func writeOutput(to path: String, _ body: (inout FileStream) -> Void) throws(SystemError) {
    var info = stat()
    var target = path
    if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
      guard let resolved = FileAccess.resolvingLink(path) else { throw SystemError("follow the link \(path)") }
      target = resolved
    }
    if stat(target, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
      guard info.st_mode & S_IFMT != S_IFDIR else { throw SystemError("write \(path)", code: EISDIR) }
      let fd = open(target, O_WRONLY | O_CLOEXEC)
      guard fd >= 0 else { throw SystemError("open \(path)") }
      var stream = FileStream(descriptor: fd)
      body(&stream)
      stream.flush()
      close(fd)
      if let failure = stream.failure { throw SystemError("write \(path)", code: failure) }
      return
    }
    try write(to: target, body)
  }

  /// `writeOutput` of a whole text.
  public static func writeOutput(_ contents: String, to path: String) throws(SystemError) {
    try writeOutput(to: path) { $0.write(contents) }
  }

  /// A file written through a 64 KB buffer that remembers the first failed write.
  public struct FileStream: TextOutputStream {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    /// The `errno` of the first write that failed; nothing is written after it.
    package fileprivate(set) var failure: Int32?

    fileprivate init(descriptor: Int32) {
      self.descriptor = descriptor
      buffer.reserveCapacity(1 << 16 + 4096)
    }

    public mutating func write(_ string: String) {
      guard failure == nil else { return }
      buffer.append(contentsOf: string.utf8)
      if buffer.count >= 1 << 16 { flush() }
    }

    fileprivate mutating func flush() {
      guard failure == nil, !buffer.isEmpty else { return }
      if !buffer.withUnsafeBytes({ SystemCalls.writeAll(descriptor, $0) }) { failure = errno }
      buffer.removeAll(keepingCapacity: true)
    }
  }

  /// With `makingParent` false, the folder is known to exist. Returns the written file's size and
  /// modification time (as `FileAccess.status` would read them back).
  @discardableResult
  public static func write(
    _ bytes: [UInt8], to path: String, makingParent: Bool = true
  ) throws(SystemError) -> (size: Int64, modified: Int64)? {
    try write(bytes, to: path, makingParent: makingParent, in: nil)
  }

  /// `folder`: `path`'s folder, already open: the file is made and linked in there without
  /// walking the folder's path again. `modified`: the modification time the file takes (seconds
  /// since 1970), set before it appears at `path`, so that no reader sees it with another; a time
  /// that cannot be set is left out (the file keeps the time of its writing).
  @discardableResult
  package static func write(
    _ bytes: [UInt8], to path: String, makingParent: Bool = true, in folder: OpenFolder?, modified: Int64? = nil
  ) throws(SystemError) -> (size: Int64, modified: Int64)? {
    if makingParent { try makeParent(of: path) }
    if let written = try writeUnnamed(bytes, to: path, in: folder, modified: modified) { return written }
    let temporary = PartialFile.path(of: path)
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard fd >= 0 else { throw SystemError("create \(temporary)") }
    guard bytes.withUnsafeBytes({ SystemCalls.writeAll(fd, $0) }) else {
      let error = SystemError("write \(temporary)")
      close(fd)
      unlink(temporary)
      throw error
    }
    if let modified { FileAccess.setModified(descriptor: fd, seconds: modified) }
    let status = FileAccess.status(descriptor: fd)
    close(fd)
    guard rename(temporary, path) == 0 else {
      let error = SystemError("rename \(temporary) to \(path)")
      unlink(temporary)
      throw error
    }
    return status
  }

  /// `O_TMPFILE` and `AT_EMPTY_PATH`, which Swift's Glibc module does not import.
  private static let unnamedFlag = csystem_unnamed_file_flag()
  private static let emptyPathFlag = csystem_empty_path_flag()

  /// Writes `bytes` into an unnamed file in `path`'s folder (`O_TMPFILE`), then links it in as
  /// `path`: it appears whole, and the folder changes once (a temporary and a rename change a big
  /// folder three times). Nil, with nothing left behind, when the filesystem has no unnamed
  /// files or something is at `path` already: the caller goes the named way.
  private static func writeUnnamed(
    _ bytes: [UInt8], to path: String, in folder: OpenFolder?, modified: Int64?
  ) throws(SystemError) -> (size: Int64, modified: Int64)? {
    // In the open folder by name, else by path from the working directory.
    let base = folder?.descriptor ?? AT_FDCWD
    let flags = unnamedFlag | O_WRONLY | O_CLOEXEC
    let fd =
      folder != nil ? openat(base, ".", flags, 0o644) : openat(base, FileAccess.directory(of: path), flags, 0o644)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    guard bytes.withUnsafeBytes({ SystemCalls.writeAll(fd, $0) }) else { throw SystemError("write \(path)") }
    if let modified { FileAccess.setModified(descriptor: fd, seconds: modified) }
    let status = FileAccess.status(descriptor: fd)
    // The name is the end of `path`'s C string: no String is made for it.
    let nameStart = folder != nil ? FileAccess.nameStart(of: path) : 0
    guard path.withCString({ link(fd, to: $0 + nameStart, in: base, path: path) }) else { return nil }
    return status ?? FileAccess.status(path)
  }

  /// Links an unnamed file in as `name` in `folder` (`path` in all). By its descriptor where the
  /// kernel lets the process that made the file do so (Linux 6.10 and later, or with
  /// CAP_DAC_READ_SEARCH); else through `/proc/self/fd`, which costs a path walk through procfs.
  private static func link(_ fd: Int32, to name: UnsafePointer<CChar>, in folder: Int32, path: String) -> Bool {
    if !descriptorLinksRefused.isSet {
      if linkat(fd, "", folder, name, emptyPathFlag) == 0 { return true }
      guard errno == ENOENT || errno == EPERM || errno == EINVAL else { return false }
      // An older kernel answers ENOENT, as for a missing folder: tell the two apart.
      if errno != ENOENT || access(FileAccess.directory(of: path), F_OK) == 0 { descriptorLinksRefused.set() }
    }
    return linkat(AT_FDCWD, "/proc/self/fd/\(fd)", folder, name, AT_SYMLINK_FOLLOW) == 0
  }

  /// Set once the kernel refused to link by descriptor in this process.
  private static let descriptorLinksRefused = AtomicFlag()

  /// Whether unnamed files are still linked in by descriptor (for tests).
  package static var linksByDescriptor: Bool { !descriptorLinksRefused.isSet }

  /// Links through `/proc/self/fd` from now on, as on a kernel that refuses (for tests).
  package static func stopLinkingByDescriptor() { descriptorLinksRefused.set() }
}

/// A folder held open, to make and link files in it by name (`openat`, `linkat`) rather than by
/// path: a run placing thousands of files in one folder walks its path once.
package final class OpenFolder {
  package let path: String
  package let descriptor: Int32

  /// Nil when the folder cannot be opened (the caller goes by path).
  package init?(path: String) {
    // O_PATH (010000000 on Linux, not imported): a handle for the *at calls, no read access needed.
    let fd = open(path, 0o10_000_000 | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    self.path = path
    descriptor = fd
  }

  deinit {
    close(descriptor)
  }
}
