import BatchDLSupport
import CSystem
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Direct writes (`O_DIRECT`): whole blocks from aligned memory, straight to the device, without a
/// copy into the page cache.
///
/// Used on local filesystems where they are known to be fast and exact (ext4, XFS), while the
/// device keeps up with the body (`Pace`); elsewhere (network and FUSE filesystems, tmpfs, btrfs)
/// the page cache. `BATCHDL_DIRECT_IO=off` leaves them out, and the page cache's writeback is then
/// the kernel's, as elsewhere.
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

  /// Whether the device keeps up with a body, told by the engine's waits: a sink has a few
  /// buffers, and when every one is held by a direct write still under way (or waiting for one),
  /// the engine waits for the disk. A sink writes direct while such waits are rare; once they
  /// add up to `usualThreshold` and to a quarter of the time since the body began to fill
  /// buffers, the device is slower than the network, and the rest of the body goes through the
  /// page cache, so that the download no longer waits for the disk: the page cache takes the
  /// difference, as it does for curl's bytes. There is no going back to direct writes for that body: a direct write
  /// would wait behind the page cache's writeback queued before it (seconds on a slow disk).
  ///
  /// The rate at which the body fills buffers is no measure: after each wait the socket's buffer
  /// is full, and a buffer fills at the speed of memory. Times in nanoseconds of a monotonic
  /// clock; kept by the engine's thread.
  package struct Pace {
    /// When the body began to fill buffers.
    private var since: UInt64?
    /// How long the engine waited for buffers held by the writes.
    package private(set) var waited: UInt64 = 0
    /// Whether the device fell behind: the page cache from now on.
    package private(set) var fellBehind = false
    /// The waits it takes at least: more than a few slow writes of a device that keeps up.
    package static let usualThreshold: UInt64 = 50_000_000
    private let threshold: UInt64

    /// `fellBehind`: the device is taken as slower than the network from the start (tests).
    package init(threshold: UInt64 = usualThreshold, fellBehind: Bool = false) {
      self.threshold = threshold
      self.fellBehind = fellBehind
    }

    /// The engine takes a buffer to fill at `now`.
    package mutating func filling(at now: UInt64) {
      if since == nil { since = now }
    }

    /// The engine waited `nanoseconds`, up to `now`, for a buffer the writes held.
    package mutating func waitedForWrites(_ nanoseconds: UInt64, now: UInt64) {
      waited += nanoseconds
      guard let since, !fellBehind else { return }
      fellBehind = waited >= threshold && waited * 4 >= now &- since
    }
  }

  /// Writes through the page cache in pieces of at most `cachedPiece` bytes. The kernel (6.18 and
  /// ext4 here) gives a buffered write page-cache folios up to its own length; on this project's
  /// machine, a VM whose host takes back the memory its guest frees, writes of 512 KiB and more
  /// cost many times what smaller ones do, most of it in the copy into fresh folios: a GiB written
  /// in 1 or 4 MiB writes cost 1.6–2.3 s of system time, in 64 or 256 KiB writes 0.17–0.20 s
  /// (a new file each time, 3 s after the last one was deleted). curl writes 16 KiB at a time.
  package static func writeCached(
    _ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, wrote: (Int) -> Void = { _ in }
  ) -> Bool {
    var done = 0
    while done < bytes.count {
      let piece = UnsafeRawBufferPointer(rebasing: bytes[done..<min(done + cachedPiece, bytes.count)])
      guard SystemCalls.pwriteAll(descriptor, piece, at: offset + Int64(done), wrote: wrote) else { return false }
      done += piece.count
    }
    return true
  }

  /// The largest write `writeCached` makes.
  package static let cachedPiece = 256 << 10

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
