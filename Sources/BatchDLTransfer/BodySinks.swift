import BatchDLSupport
import CSystem
import Crypto
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Where a response body goes while it arrives. Written from the engine thread only.
package protocol BodySink: AnyObject {
  /// Takes the next bytes; false aborts the transfer (see `failure`).
  func write(_ bytes: UnsafeRawBufferPointer) -> Bool
  /// Waits for pending writes and returns the body's size and SHA-256.
  func finish() -> Result<(size: Int64, sha256: String), TransferFailure>
  /// Why `write` refused, if it did.
  var failure: TransferFailure? { get }
  /// Bytes taken so far.
  var count: Int64 { get }
}

/// Writes a body into a partial file with `pwrite` and hashes it.
///
/// A sink made `holding` keeps a fresh body in memory until it outgrows 64 KiB, and creates the
/// file only then: a small file's body is handed over whole (`heldBody`), then hashed and written
/// where the run places it, off the engine's thread. Past that, the first MiB is written on the
/// engine thread; after it, the bytes are gathered into a few reusable 4 MiB buffers. Each full
/// buffer goes to two serial queues of the sink's own at once, one that hashes and one that
/// writes, so that a large download's hashing and writing overlap each other and the network
/// instead of slowing it. When every buffer is in flight the engine waits (back-pressure), so
/// memory stays at `bufferCount` buffers per sink.
///
/// The writing queue writes whole blocks with `O_DIRECT` where that is known to pay (`DirectWrites`)
/// and while the device keeps up with the body (`DirectWrites.Pace`): on this project's machine, a
/// GiB written through the page cache cost 0.17–0.36 s of system time in writes of 16–256 KiB
/// (`DirectWrites.writeCached`; 2.0–2.3 s in 4 MiB writes), the same GiB written direct in 4 MiB
/// blocks 0.03–0.05 s, and a run that mirrors large files leaves the page cache to what the machine
/// was caching before. Once the device proves slower than the network, the rest of the body goes
/// through the page cache, as curl's does, so that the download never waits for the disk; each
/// checkpoint's `fdatasync` then drops the pages it wrote back. A buffer that does not start on a
/// block boundary (the first after the inline MiB or a resume) is cut to end on one, and the last,
/// short block of the body goes through the page cache.
///
/// The buffers, the queues and the writes to the file are in FileSinkQueues.swift. The sink's state
/// that they share is internal rather than private for that file alone: nothing outside `FileSink`
/// touches it.
package final class FileSink: BodySink, @unchecked Sendable {
  package let path: String
  /// The partial file, or -1 while the body is held in memory.
  var descriptor: Int32 = -1
  /// A held body (nil once the file exists).
  private var held: [UInt8]?
  private static let holdLimit = 64 << 10
  /// The partial file's identity, asked once its bytes are written (after `finish`); nil while the
  /// body is held in memory.
  package var identity: FileIdentity? { descriptor >= 0 ? FileIdentity(descriptor: descriptor) : nil }
  /// Made when the body goes to the file (a held body is hashed by whoever takes it), on whichever
  /// thread hashes first: the engine's, or the hashing queue's once there is one.
  lazy var hasher = SHA256()
  package private(set) var count: Int64 = 0
  /// Offset of the next byte the engine writes inline, then of the next buffer it fills.
  var written: Int64 = 0
  var queues: (hashing: DispatchQueue, writing: DispatchQueue)?
  private let inlineLimit: Int64 = 1 << 20
  /// Where the reserved blocks end (`Preallocation`), when they were reserved.
  private var reserved: Int64?

  /// What the engine thread shares with the sink's queues. A `Mutex` rather than an `NSLock`,
  /// and the semaphore made with the queues: every small file has a sink, and the lock and the
  /// semaphore of each cost more to make and free than its body to hold (bench/callgrind).
  struct Shared {
    var writeError: TransferFailure?
    /// Buffers not in flight; `available` counts them.
    var spare: [UnsafeMutableRawBufferPointer] = []
    var allocated = 0
    /// Bytes known to be on disk: written and `fdatasync`ed.
    var synced: Int64 = 0
    /// Bytes handed to the kernel with `pwrite`, and how many of them went direct.
    var stored: Int64 = 0
    var storedDirect: Int64 = 0
    var syncPending = false
    /// Whether the device fell behind and the body goes through the page cache: a sync then also
    /// drops the pages it wrote back, from `dropped` on.
    var caching = false
    var dropped: Int64 = 0
    /// Bytes a second the file's data reaches the disk, as far as is known: the direct writes'
    /// rate when the device fell behind, then that of the syncs (`syncEstimate`).
    var writeback: Double?
  }
  let shared = Mutex(Shared())

  /// 4 MiB: against 1 MiB, a GiB cost a tenth less CPU (fewer direct writes and hand-overs);
  /// three are enough for one being filled, one hashed and one written (bench/transfer).
  package static let bufferSize = 4 << 20
  package static let bufferCount = 3
  /// Made with the queues (`startQueues`), before any buffer is taken.
  var available: DispatchSemaphore?
  /// The buffer being filled on the engine thread, how much of it is filled, and how much may
  /// be (less than its size when it starts off a block boundary: it then ends on one).
  var current: UnsafeMutableRawBufferPointer?
  var filled = 0
  var capacity = 0
  /// Whether the writing queue writes direct now (it alone touches this, the file's flags and
  /// `directTaken`); `.untried` until it asks whether direct writes pay for the file.
  var direct = DirectWrites.State.untried
  let directMode: DirectWrites.Mode
  /// Whether the device keeps up (the engine's thread keeps it); `slowDevice` tells the writing
  /// queue when it no longer does.
  var pace = DirectWrites.Pace()
  let slowDevice = Atomic(false)
  /// Buffers handed to each queue and not yet done with there: the engine's waits for a buffer
  /// are the writes' when the writing queue holds more of them.
  let writesQueued = Atomic(0)
  let hashesQueued = Atomic(0)
  /// The bytes written direct and the time those writes took (the writing queue's): their rate
  /// is the device's. Summed over every direct write, not smoothed over the last few: a device
  /// behind a throttle takes the first writes of each time slice at its full speed, and a rate
  /// from those made the sink expect a checkpoint's sync to end long before it could.
  var directTaken: (bytes: Int64, nanoseconds: UInt64) = (0, 0)

  /// Creates (or truncates) `path`, never following a symlink there. With `offset` > 0 the file's
  /// first `offset` bytes are kept (anything after them is cut off), hashed first, and the body
  /// continues after them: a resumed download. `reserving`: where the body will end, when that is
  /// known; the blocks up to there are reserved at once (`Preallocation`), and a filesystem that
  /// cannot hold them fails the sink with `disk-full` before any byte is written (a new file is
  /// removed again, a resumed one keeps its first `offset` bytes). A body known to end past the
  /// 64 KiB a sink `holding` keeps in memory goes to the file from its first byte. `direct`: where
  /// to write direct (tests try filesystems the sink would leave alone); `pace`: when the device
  /// counts as slower than the network (tests).
  package init(
    path: String, keeping offset: Int64 = 0, holding: Bool = false, reserving end: Int64? = nil,
    direct: DirectWrites.Mode = .auto, pace: DirectWrites.Pace = DirectWrites.Pace()
  ) throws(TransferFailure) {
    self.path = path
    directMode = direct
    self.pace = pace
    slowDevice.store(pace.fellBehind, ordering: .relaxed)
    if holding && offset == 0 && (end ?? 0) <= Self.holdLimit {
      held = []
      return
    }
    let fd = try Self.open(path, truncating: offset == 0)
    guard offset > 0 else {
      if let end, let failure = Preallocation.reserve(fd, from: 0, to: end, path: path) {
        close(fd)
        unlink(path)
        throw failure
      }
      descriptor = fd
      reserved = end
      return
    }
    var info = stat()
    guard fstat(fd, &info) == 0, Int64(info.st_size) >= offset, ftruncate(fd, off_t(offset)) == 0 else {
      close(fd)
      throw TransferFailure(code: .resumeRestart, message: "the partial file \(path) is shorter than its checkpoint")
    }
    if let end, let failure = Preallocation.reserve(fd, from: offset, to: end, path: path) {
      close(fd)
      throw failure
    }
    descriptor = fd
    reserved = end
    count = offset
    written = offset
    shared.withLock {
      $0.stored = offset
      $0.synced = offset
    }
    // Hash the kept bytes on the hashing queue, before anything the network brings. The writing
    // queue waits for that: its direct writes set O_DIRECT on the file, which reads through the
    // same descriptor would then have to obey.
    let queues = startQueues()
    queues.hashing.async { self.hashKept(offset) }
    queues.writing.async { queues.hashing.sync {} }
  }

  private static func open(_ path: String, truncating: Bool) throws(TransferFailure) -> Int32 {
    let flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (truncating ? O_TRUNC : 0)
    let fd = Glibc.open(path, flags, 0o644)
    guard fd >= 0 else {
      throw TransferFailure.system(errno: errno, doing: "create \(path)")
    }
    return fd
  }

  /// The whole body, when it stayed in memory: the file was never created.
  package var heldBody: [UInt8]? { held }

  /// Whether the partial file exists (the body outgrew memory, or the sink never held it).
  package var isOnDisk: Bool { held == nil }

  private func hashKept(_ length: Int64) {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var position: Int64 = 0
    while position < length {
      let want = Int(min(Int64(buffer.count), length - position))
      let got = buffer.withUnsafeMutableBytes {
        SystemCalls.preadRetrying(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: position)
      }
      guard got > 0 else {
        setFailure(TransferFailure.system(errno: got < 0 ? errno : EIO, doing: "read back \(path)"))
        return
      }
      buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
      position += Int64(got)
    }
  }

  /// Bytes handed to the kernel with `pwrite` (a segmented download's sync covers them).
  package var handedOver: Int64 { shared.withLock { $0.stored } }

  /// Bytes written direct, past the page cache (read after `finish`).
  package var directBytes: Int64 { shared.withLock { $0.storedDirect } }

  /// Bytes known to be on disk (for checkpoints).
  package var durable: Int64 { shared.withLock { $0.synced } }

  /// Asks for everything written so far to reach the disk, without blocking the engine: on a
  /// queue of its own, `fdatasync` after the writes handed over so far, then moves `durable`. At
  /// most one request is pending at a time.
  package func requestSync() {
    guard held == nil else { return }
    let pending = shared.withLock { state in
      defer { state.syncPending = true }
      return state.syncPending
    }
    guard !pending else { return }
    // On a queue of its own, so that the writes go on while the disk catches up: what was
    // written before `fdatasync` starts is on disk when it returns.
    DispatchQueue.global(qos: .utility).async {
      let (target, before) = self.shared.withLock { ($0.stored, $0.synced) }
      let start = DispatchTime.now().uptimeNanoseconds
      let ok = fdatasync(self.descriptor) == 0
      let took = DispatchTime.now().uptimeNanoseconds &- start
      let drop: Int64? = self.shared.withLock { state in
        state.syncPending = false
        guard ok else { return nil }
        state.synced = max(state.synced, target)
        // A sync of a few buffers or more says how fast the page cache reaches the disk.
        if state.caching && target - before >= Int64(Self.bufferSize) {
          state.writeback = Double(target - before) * 1e9 / Double(max(took, 1))
        }
        guard state.caching && target > state.dropped else { return nil }
        defer { state.dropped = target }
        return state.dropped
      }
      // The pages below `target` are clean now: they go, so that the page cache holds only what
      // the disk has not taken yet.
      if let drop { _ = csystem_drop_cached(self.descriptor, drop, target - drop) }
    }
  }

  /// Hands the bytes taken so far to the writing queue and waits for it: the bytes written from
  /// byte 0 on without a gap, `count` unless a write failed. What a retry may keep of the file:
  /// with blocks reserved, the file's size no longer tells a write that never landed.
  package func settle() -> Int64 {
    guard held == nil else { return 0 }
    if filled > 0 && failure == nil { submit() }
    drain()
    return shared.withLock { $0.stored }
  }

  /// How long a sync started now would take, in milliseconds, as far as is known: the bytes not yet
  /// synced over the rate the file's data reaches the disk; nil while the device keeps up (its
  /// direct writes are on it already) or before anything is known. The engine leaves out a sync
  /// that could not end before the download does: the download's result replaces its checkpoint.
  package var syncEstimate: Double? {
    shared.withLock { state in
      guard state.caching, let rate = state.writeback, rate > 0 else { return nil }
      return Double(state.stored - state.synced) * 1000 / rate
    }
  }

  /// Drains the queues and syncs now (a run stopping on a signal); returns the durable count:
  /// the bytes written from byte 0 on, never those a failed write left out.
  package func syncNow() -> Int64 {
    guard held == nil else { return 0 }
    let target = settle()
    if fdatasync(descriptor) == 0 {
      shared.withLock { $0.synced = max($0.synced, target) }
    }
    return durable
  }

  deinit {
    // Every block on the queues holds the sink, so none is pending now (this may even run on a
    // queue, as its last block lets go): nothing to wait for.
    if descriptor >= 0 { close(descriptor) }
    if let current {
      current.deallocate()
      // Give back the buffer's slot: libdispatch traps when a semaphore is freed below its start.
      available?.signal()
    }
    for buffer in shared.withLock({ $0.spare }) { buffer.deallocate() }
  }

  package var failure: TransferFailure? { shared.withLock { $0.writeError } }

  package func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
    if failure != nil { return false }
    if var kept = held.take() {
      if kept.count + bytes.count <= Self.holdLimit {
        kept.append(contentsOf: bytes)
        held = kept
        count += Int64(bytes.count)
        return true
      }
      // Outgrown: hash what was held, create the file and write it there.
      kept.withUnsafeBytes { hasher.update(bufferPointer: $0) }
      do {
        descriptor = try Self.open(path, truncating: true)
      } catch {
        setFailure(error)
        return false
      }
      guard kept.withUnsafeBytes({ put($0, at: written) }) else { return false }
      written += Int64(kept.count)
    }
    count += Int64(bytes.count)
    if queues == nil && count <= inlineLimit {
      guard put(bytes, at: written) else { return false }
      written += Int64(bytes.count)
      hasher.update(bufferPointer: bytes)
      return true
    }
    startQueues()
    var offset = 0
    while offset < bytes.count {
      let buffer = current ?? takeBuffer()
      current = buffer
      let take = min(bytes.count - offset, capacity - filled)
      if let base = bytes.baseAddress, let target = buffer.baseAddress {
        (target + filled).copyMemory(from: base + offset, byteCount: take)
      }
      filled += take
      offset += take
      if filled == capacity { submit() }
    }
    return true
  }

  /// A held body's SHA-256 is left empty: whoever takes `heldBody` hashes it (off the engine's thread).
  package func finish() -> Result<(size: Int64, sha256: String), TransferFailure> {
    if held != nil { return .success((count, "")) }
    if filled > 0 { submit() }
    drain()
    if let failure { return .failure(failure) }
    if let reserved, reserved > count { release(reservedAfter: count) }
    return .success((count, hasher.finalize().hexString))
  }
}
