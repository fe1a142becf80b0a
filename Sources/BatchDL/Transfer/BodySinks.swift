import Crypto
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Where a response body goes while it arrives. Written from the engine thread only.
protocol BodySink: AnyObject {
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
/// engine thread; after it, the bytes are gathered into a few reusable 256 KiB buffers that a
/// serial queue of the sink's own writes and hashes, so that a large download's hashing overlaps
/// the network instead of slowing it. When every buffer is in flight the engine waits
/// (back-pressure), so memory stays at `bufferCount` buffers per sink.
final class FileSink: BodySink, @unchecked Sendable {
  let path: String
  /// The partial file, or -1 while the body is held in memory.
  private var descriptor: Int32 = -1
  /// A held body (nil once the file exists).
  private var held: [UInt8]?
  private static let holdLimit = 64 << 10
  /// Made when the body goes to the file (a held body is hashed by whoever takes it), on whichever
  /// thread writes first: the engine's, or the queue's once there is one.
  private lazy var hasher = SHA256()
  private(set) var count: Int64 = 0
  /// Offset of the next write, advanced by whichever side writes (inline, then only the queue).
  private var written: Int64 = 0
  private var queue: DispatchQueue?
  private let inlineLimit: Int64 = 1 << 20

  /// What the engine thread shares with the sink's queues. A `Mutex` rather than an `NSLock`,
  /// and the semaphore made with the queue: every small file has a sink, and the lock and the
  /// semaphore of each cost more to make and free than its body to hold (bench/callgrind).
  private struct Shared {
    var writeError: TransferFailure?
    /// Buffers not in flight; `available` counts them.
    var spare: [UnsafeMutableRawBufferPointer] = []
    var allocated = 0
    /// Bytes known to be on disk: written and `fdatasync`ed.
    var synced: Int64 = 0
    /// Bytes handed to the kernel with `pwrite` (`written` is the writer's own copy).
    var stored: Int64 = 0
    var syncPending = false
  }
  private let shared = Mutex(Shared())

  private static let bufferSize = 256 << 10
  private static let bufferCount = 8
  /// Made with `queue` (`startQueue`), before any buffer is taken.
  private var available: DispatchSemaphore?
  /// The buffer being filled on the engine thread.
  private var current: UnsafeMutableRawBufferPointer?
  private var filled = 0

  /// Creates (or truncates) `path`, never following a symlink there. With `offset` > 0 the file's
  /// first `offset` bytes are kept (anything after them is cut off), hashed first, and the body
  /// continues after them: a resumed download.
  init(path: String, keeping offset: Int64 = 0, holding: Bool = false) throws(TransferFailure) {
    self.path = path
    if holding && offset == 0 {
      held = []
      return
    }
    let fd = try Self.open(path, truncating: offset == 0)
    guard offset > 0 else {
      descriptor = fd
      return
    }
    var info = stat()
    guard fstat(fd, &info) == 0, Int64(info.st_size) >= offset, ftruncate(fd, off_t(offset)) == 0 else {
      close(fd)
      throw TransferFailure(code: .resumeRestart, message: "the partial file \(path) is shorter than its checkpoint")
    }
    descriptor = fd
    count = offset
    written = offset
    shared.withLock {
      $0.stored = offset
      $0.synced = offset
    }
    // Hash the kept bytes on the sink's queue, before anything the network brings.
    startQueue().async { self.hashKept(offset) }
  }

  private static func open(_ path: String, truncating: Bool) throws(TransferFailure) -> Int32 {
    let flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (truncating ? O_TRUNC : 0)
    let fd = Glibc.open(path, flags, 0o644)
    guard fd >= 0 else {
      throw FileSink.failure(errno: errno, doing: "create \(path)")
    }
    return fd
  }

  /// The whole body, when it stayed in memory: the file was never created.
  var heldBody: [UInt8]? { held }

  /// Whether the partial file exists (the body outgrew memory, or the sink never held it).
  var isOnDisk: Bool { held == nil }

  private func hashKept(_ length: Int64) {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var position: Int64 = 0
    while position < length {
      let want = Int(min(Int64(buffer.count), length - position))
      let got = buffer.withUnsafeMutableBytes {
        SystemCalls.preadRetrying(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: position)
      }
      guard got > 0 else {
        setFailure(FileSink.failure(errno: got < 0 ? errno : EIO, doing: "read back \(path)"))
        return
      }
      buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
      position += Int64(got)
    }
  }

  /// Bytes handed to the kernel with `pwrite` (a segmented download's sync covers them).
  var handedOver: Int64 { shared.withLock { $0.stored } }

  /// Bytes known to be on disk (for checkpoints).
  var durable: Int64 { shared.withLock { $0.synced } }

  /// Asks for everything written so far to reach the disk, without blocking the engine: the sink's
  /// queue hands its current buffer over, `fdatasync`s after the writes before it, then moves
  /// `durable`. At most one request is pending at a time.
  func requestSync() {
    guard held == nil else { return }
    let pending = shared.withLock { state in
      defer { state.syncPending = true }
      return state.syncPending
    }
    guard !pending else { return }
    // On a queue of its own, so that the writes go on while the disk catches up: what was
    // written before `fdatasync` starts is on disk when it returns.
    DispatchQueue.global(qos: .utility).async {
      let target = self.shared.withLock { $0.stored }
      let ok = fdatasync(self.descriptor) == 0
      self.shared.withLock { state in
        if ok { state.synced = max(state.synced, target) }
        state.syncPending = false
      }
    }
  }

  /// Drains the queue and syncs now (a run stopping on a signal); returns the durable count.
  func syncNow() -> Int64 {
    guard held == nil else { return 0 }
    if filled > 0 { submit() }
    queue?.sync {}
    let target = count
    if fdatasync(descriptor) == 0 {
      shared.withLock { $0.synced = max($0.synced, target) }
    }
    return durable
  }

  deinit {
    // Every block on the queue holds the sink, so none is pending now (this may even run on the
    // queue, as its last block lets go): nothing to wait for.
    if descriptor >= 0 { close(descriptor) }
    if let current {
      current.deallocate()
      // Give back the buffer's slot: libdispatch traps when a semaphore is freed below its start.
      available?.signal()
    }
    for buffer in shared.withLock({ $0.spare }) { buffer.deallocate() }
  }

  var failure: TransferFailure? { shared.withLock { $0.writeError } }

  static func failure(errno code: Int32, doing what: String) -> TransferFailure {
    let reason = String(cString: strerror(code))
    if code == ENOSPC || code == EDQUOT {
      return TransferFailure(code: .diskFull, message: "cannot \(what): \(reason); free some space and run again")
    }
    return TransferFailure(code: .write, message: "cannot \(what): \(reason)")
  }

  func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
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
      guard kept.withUnsafeBytes({ put($0) }) else { return false }
    }
    count += Int64(bytes.count)
    if queue == nil && count <= inlineLimit {
      return store(bytes)
    }
    startQueue()
    var offset = 0
    while offset < bytes.count {
      let buffer = current ?? takeBuffer()
      current = buffer
      let take = min(bytes.count - offset, Self.bufferSize - filled)
      if let base = bytes.baseAddress, let target = buffer.baseAddress {
        (target + filled).copyMemory(from: base + offset, byteCount: take)
      }
      filled += take
      offset += take
      if filled == Self.bufferSize { submit() }
    }
    return true
  }

  /// The sink's queue, started on first use together with the count of buffers that may be in
  /// flight to it (`takeBuffer` waits on it).
  @discardableResult
  private func startQueue() -> DispatchQueue {
    if let queue { return queue }
    let queue = DispatchQueue(label: "batchdl.sink")
    available = DispatchSemaphore(value: FileSink.bufferCount)
    self.queue = queue
    return queue
  }

  /// Buffers made so far for the queue (at most `bufferCount`: the writer waits for one to come back).
  var buffersAllocated: Int { shared.withLock { $0.allocated } }

  private func takeBuffer() -> UnsafeMutableRawBufferPointer {
    available?.wait()
    return shared.withLock { state in
      if let buffer = state.spare.popLast() { return buffer }
      state.allocated += 1
      return .allocate(byteCount: Self.bufferSize, alignment: 64)
    }
  }

  /// Hands the current buffer to the queue.
  private func submit() {
    guard let buffer = current, let queue else { return }
    let chunk = Chunk(buffer: buffer, length: filled)
    current = nil
    filled = 0
    queue.async {
      self.store(UnsafeRawBufferPointer(rebasing: chunk.buffer[0..<chunk.length]))
      self.shared.withLock { $0.spare.append(chunk.buffer) }
      self.available?.signal()
    }
  }

  /// A filled buffer on its way to the queue; only the queue touches it until it is returned.
  private struct Chunk: @unchecked Sendable {
    var buffer: UnsafeMutableRawBufferPointer
    var length: Int
  }

  private func setFailure(_ failure: TransferFailure) {
    shared.withLock { $0.writeError = failure }
  }

  /// Writes and hashes on whichever thread owns the file at the moment.
  @discardableResult
  private func store(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard put(bytes) else { return false }
    hasher.update(bufferPointer: bytes)
    return true
  }

  /// Writes at the end of what was written.
  private func put(_ bytes: UnsafeRawBufferPointer) -> Bool {
    let fits = SystemCalls.pwriteAll(descriptor, bytes, at: written) { count in
      written += Int64(count)
      let written = written
      shared.withLock { $0.stored = written }
    }
    if !fits { setFailure(FileSink.failure(errno: errno, doing: "write \(path)")) }
    return fits
  }

  /// A held body's SHA-256 is left empty: whoever takes `heldBody` hashes it (off the engine's thread).
  func finish() -> Result<(size: Int64, sha256: String), TransferFailure> {
    if held != nil { return .success((count, "")) }
    if filled > 0 { submit() }
    queue?.sync {}
    if let failure { return .failure(failure) }
    return .success((count, hasher.finalize().hexString))
  }
}

/// Writes one range of a segmented download into the download's partial file at its offsets, on
/// the engine thread (`pwrite` into the page cache); the download hashes the file when it is whole.
/// `count` is the offset of the next byte, as a resumed `FileSink` counts the kept bytes.
final class RangeSink: BodySink {
  private let descriptor: Int32
  private let path: String
  private(set) var count: Int64
  private(set) var failure: TransferFailure?

  init(descriptor: Int32, start: Int64, path: String) {
    self.descriptor = descriptor
    self.path = path
    count = start
  }

  func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard failure == nil else { return false }
    let fits = SystemCalls.pwriteAll(descriptor, bytes, at: count) { count += Int64($0) }
    if !fits { failure = FileSink.failure(errno: errno, doing: "write \(path)") }
    return fits
  }

  func finish() -> Result<(size: Int64, sha256: String), TransferFailure> {
    if let failure { return .failure(failure) }
    return .success((count, ""))
  }
}

/// Keeps a body in memory up to a limit; a data task that may become a download spills into a
/// file when the response matches its rule or outgrows memory.
final class MemorySink: BodySink {
  private var bytes: [UInt8] = []
  private let limit: Int64
  private let spill: TransferSpec.Spill?
  private var hasher = SHA256()
  private(set) var count: Int64 = 0
  private(set) var failure: TransferFailure?
  /// The file the body moved to, once it has.
  private(set) var spilled: FileSink?
  private let openSpill: (TransferSpec.Spill) -> FileSink?

  init(limit: Int64, spill: TransferSpec.Spill?, openSpill: @escaping (TransferSpec.Spill) -> FileSink?) {
    self.limit = limit
    self.spill = spill
    self.openSpill = openSpill
  }

  /// Moves to the spill file now (the response's type or announced length matched the rule).
  func spillNow() -> Bool {
    guard spilled == nil, let spill, let file = openSpill(spill) else { return false }
    let kept = bytes
    bytes = []
    spilled = file
    if !kept.isEmpty && !kept.withUnsafeBytes({ file.write($0) }) {
      failure = file.failure
      return false
    }
    return true
  }

  func write(_ chunk: UnsafeRawBufferPointer) -> Bool {
    if let spilled { return spilled.write(chunk) }
    count += Int64(chunk.count)
    if let largerThan = spill?.largerThan, count > largerThan {
      bytes.append(contentsOf: chunk)
      return spillNow()
    }
    if count > limit {
      if spill != nil {
        bytes.append(contentsOf: chunk)
        return spillNow()
      }
      failure = TransferFailure(
        code: .bodyTooLarge,
        message:
          "the response is larger than \(ByteSize.format(limit)), the most a data task keeps in memory; use a download task or become_download"
      )
      return false
    }
    bytes.append(contentsOf: chunk)
    hasher.update(bufferPointer: chunk)
    return true
  }

  var body: [UInt8] { bytes }

  func finish() -> Result<(size: Int64, sha256: String), TransferFailure> {
    if let spilled { return spilled.finish() }
    if let failure { return .failure(failure) }
    return .success((count, hasher.finalize().hexString))
  }
}
