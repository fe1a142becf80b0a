import Foundation

/// Which file a path names, and its state: device, inode, size and last change. Taken from the
/// descriptor a body was written and hashed through, and compared with the path just before that
/// path is renamed into place: the bytes placed are the bytes that were checked, not a file put at
/// the partial path meanwhile (by another process, a second run writing the same destination).
public struct FileIdentity: Equatable, Sendable {
  public var device: UInt64
  public var inode: UInt64
  public var size: Int64
  /// Last modification, in nanoseconds since the epoch: a write into the same file moves it.
  public var modified: Int64

  package init(_ info: stat) {
    device = UInt64(info.st_dev)
    inode = UInt64(info.st_ino)
    size = Int64(info.st_size)
    modified = FileAccess.nanoseconds(seconds: Int64(info.st_mtim.tv_sec), nanoseconds: Int64(info.st_mtim.tv_nsec))
  }

  /// The identity of the open file `descriptor`; nil when it cannot be read.
  public init?(descriptor: Int32) {
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { return nil }
    self.init(info)
  }

  /// The identity of the regular file at `path` itself (a symbolic link is not followed); nil when
  /// there is none.
  public init?(path: String) {
    var info = stat()
    guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
    self.init(info)
  }
}
