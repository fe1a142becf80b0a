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
}
