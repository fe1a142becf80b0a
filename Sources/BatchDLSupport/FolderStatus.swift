import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `FileAccess.status` for many paths that come folder by folder (every destination of a plan,
/// checked by `plan`, `status` and each re-run): the last folder stays open and each file is looked
/// up in it with `fstatat`, so the kernel resolves one name instead of the whole path. At 100,000
/// files this halves the time spent in the kernel. Safe to share between threads.
public final class FolderStatus: Sendable {
  private struct Open {
    /// The folder's path, as bytes.
    var path: [UInt8] = []
    var descriptor: Int32 = -1
  }

  private let open = Mutex(Open())

  public init() {}

  deinit {
    open.withLock { if $0.descriptor >= 0 { close($0.descriptor) } }
  }

  /// The file's size and modification time, or nil when it does not exist or is not a regular
  /// file: the same answer as `FileAccess.status(path)`. Makes no String: the folder is compared
  /// and the name passed on the path's own bytes.
  public func status(_ path: String) -> (size: Int64, modified: Int64)? {
    path.withCString { cPath -> (size: Int64, modified: Int64)? in
      let length = strlen(cPath)
      let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(cPath).assumingMemoryBound(to: UInt8.self), count: length)
      guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")), slash > 0, slash + 1 < length else {
        return FileAccess.status(path)
      }
      let folder = UnsafeBufferPointer(rebasing: bytes[..<slash])
      return open.withLock { open -> (size: Int64, modified: Int64)? in
        if !open.path.elementsEqual(folder) {
          if open.descriptor >= 0 { close(open.descriptor) }
          open.path = Array(folder)
          open.descriptor = Glibc.open(String(decoding: folder, as: UTF8.self), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard open.descriptor >= 0 else { return FileAccess.status(path) }
        var info = stat()
        guard fstatat(open.descriptor, cPath + slash + 1, &info, 0) == 0 else { return nil }
        return FileAccess.status(of: info)
      }
    }
  }

  /// `status(path)` for a file below `root` (a session's `dest`), never through a symbolic link
  /// below `root`: each folder on the way is opened with `O_NOFOLLOW` from the one above it, and
  /// the file itself is looked at without following a link, as prune and placement do. A path on
  /// which a link stands reads as no file (nil). `root` itself may be a link: the user chose it.
  public func status(_ path: String, below root: String) -> (size: Int64, modified: Int64)? {
    // `root` and a `/`, compared on the bytes: no String is made per file (every unchanged task asks).
    let rootLength = root.utf8.count - (root.hasSuffix("/") ? 1 : 0)
    let prefixLength = rootLength + 1
    guard path.utf8.count > prefixLength, path.utf8.starts(with: root.utf8.prefix(rootLength)),
      path.utf8.dropFirst(rootLength).first == UInt8(ascii: "/")
    else { return status(path) }
    return path.withCString { cPath -> (size: Int64, modified: Int64)? in
      let length = strlen(cPath)
      let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(cPath).assumingMemoryBound(to: UInt8.self), count: length)
      guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")), slash + 1 < length else { return nil }
      let folder = UnsafeBufferPointer(rebasing: bytes[..<slash])
      return open.withLock { open -> (size: Int64, modified: Int64)? in
        // The cache key marks a folder opened without links by a leading NUL (no path has one);
        // it is made only when the folder changes.
        if !(open.path.first == 0 && open.path.count == folder.count + 1 && open.path.dropFirst().elementsEqual(folder))
        {
          if open.descriptor >= 0 { close(open.descriptor) }
          open.path = [0] + Array(folder)
          open.descriptor = Self.openWithoutLinks(
            root: root, below: Array(folder.dropFirst(min(folder.count, prefixLength))))
        }
        guard open.descriptor >= 0 else { return nil }
        var info = stat()
        guard fstatat(open.descriptor, cPath + slash + 1, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return FileAccess.status(of: info)
      }
    }
  }

  /// Opens `root`, then each folder of `relative` (bytes, `/`-separated) from the one above it
  /// with `O_NOFOLLOW`; -1 when one is missing, a link or not a folder.
  private static func openWithoutLinks(root: String, below relative: [UInt8]) -> Int32 {
    var descriptor = Glibc.open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    for part in relative.split(separator: UInt8(ascii: "/")) where descriptor >= 0 {
      let name = String(decoding: part, as: UTF8.self)
      let next = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
      close(descriptor)
      descriptor = next
    }
    return descriptor
  }
}
