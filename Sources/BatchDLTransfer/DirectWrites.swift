import CSystem
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Direct writes (`O_DIRECT`): whole blocks from aligned memory, straight to the device, without a
/// copy into the page cache.
///
/// Used on local filesystems where they are known to be fast and exact (ext4, XFS); elsewhere
/// (network and FUSE filesystems, tmpfs, btrfs) the page cache. `BATCHDL_DIRECT_IO=off` leaves
/// them out.
package enum DirectWrites {
  /// Offsets, lengths and buffer addresses of direct writes are multiples of this (the largest
  /// logical block size of common devices).
  package static let blockSize = 4096

  package enum State { case untried, on, off, refused }

  package enum Mode {
    /// On the filesystems where direct writes pay, unless `BATCHDL_DIRECT_IO=off`.
    case auto
    case never
    /// Tried on any filesystem (tests: the fallback where the kernel refuses them).
    case anyFilesystem
  }

  package enum Outcome: Equatable {
    case written(Int)
    /// EINVAL: the file or its filesystem takes no direct writes.
    case refused
    case failed(Int32)
  }

  /// ext4 (and ext2/3, which share the number) and XFS.
  private static let filesystems: Set<Int> = [0xEF53, 0x5846_5342]

  /// Whether `BATCHDL_DIRECT_IO=off` leaves direct writes out of this process.
  private static let turnedOff = ProcessInfo.processInfo.environment["BATCHDL_DIRECT_IO"] == "off"

  /// Whether direct writes are worth trying on the file.
  package static func pays(for descriptor: Int32, mode: Mode) -> Bool {
    switch mode {
    case .auto: !turnedOff && filesystems.contains(csystem_filesystem_type(descriptor))
    case .never: false
    case .anyFilesystem: true
    }
  }

  package static func setFlag(_ descriptor: Int32, on: Bool) -> Bool {
    let flags = fcntl(descriptor, F_GETFL)
    guard flags >= 0 else { return false }
    let wanted = on ? flags | csystem_direct_flag() : flags & ~csystem_direct_flag()
    return wanted == flags || fcntl(descriptor, F_SETFL, wanted) == 0
  }

  /// One direct write (a short one is left to the caller, which writes the rest through the page
  /// cache).
  package static func write(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Outcome {
    while true {
      let count = pwrite(descriptor, bytes.baseAddress, bytes.count, off_t(offset))
      if count >= 0 { return .written(count) }
      if errno == EINTR { continue }
      return errno == EINVAL ? .refused : .failed(errno)
    }
  }
}
