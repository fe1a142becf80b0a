import CSystem

#if canImport(Glibc)
  import Glibc
#endif

/// A download of known length has its blocks reserved before its body is written: a filesystem
/// that cannot hold the body says so at once (`disk-full`, before the body is fetched), and the
/// file is laid out in few extents instead of growing a write at a time.
///
/// `fallocate(2)` with `FALLOC_FL_KEEP_SIZE`: the blocks are allocated as unwritten extents and
/// the file's size stays the bytes written, so that the size keeps meaning what every check of a
/// partial file reads it as (a checkpoint is only used on a partial file at least that long;
/// a resumed sink refuses one that is shorter than its checkpoint). Never `posix_fallocate`,
/// which writes zeros where the filesystem has no `fallocate`. Where it has none (`EOPNOTSUPP`,
/// `ENOSYS`), or refuses for another reason, nothing is reserved and the body is written as it
/// comes.
package enum Preallocation {
  /// Reserves `[start, end)` of the file at `descriptor`; a failure (`disk-full`) only when the
  /// filesystem cannot hold it (no space, quota, or a file larger than it allows).
  package static func reserve(
    _ descriptor: Int32, from start: Int64, to end: Int64, path: String
  ) -> TransferFailure? {
    guard end > start else { return nil }
    let code = csystem_reserve(descriptor, start, end - start)
    switch code {
    case 0: return nil
    case ENOSPC, EDQUOT:
      return TransferFailure.system(errno: code, doing: "reserve \(end - start) bytes for \(path)")
    case EFBIG:
      return TransferFailure(
        code: .diskFull, message: "cannot reserve \(end) bytes for \(path): larger than its filesystem allows")
    default: return nil
    }
  }
}
