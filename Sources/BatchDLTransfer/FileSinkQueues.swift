import BatchDLSupport
import CSystem
import Crypto
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

// How a `FileSink`'s bytes reach the file: the buffers handed to its hashing and writing queues,
// and the writing queue's writes, direct or through the page cache.
extension FileSink {
  /// The sink's queues, started on first use together with the count of buffers that may be in
  /// flight to them (`takeBuffer` waits on it).
  @discardableResult
  func startQueues() -> (hashing: DispatchQueue, writing: DispatchQueue) {
    if let queues { return queues }
    let made = (DispatchQueue(label: "batchdl.sink.hash"), DispatchQueue(label: "batchdl.sink.write"))
    available = DispatchSemaphore(value: FileSink.bufferCount)
    queues = made
    return made
  }

  /// Waits for both queues to finish what they were given.
  func drain() {
    queues?.writing.sync {}
    queues?.hashing.sync {}
  }

  /// Buffers made so far for the queues (at most `bufferCount`: the engine waits for one to come back).
  package var buffersAllocated: Int { shared.withLock { $0.allocated } }

  /// A buffer for the bytes from `written` on, and how much of it to fill: up to the next block
  /// boundary past a whole buffer's length, so that every buffer after it starts on one.
  func takeBuffer() -> UnsafeMutableRawBufferPointer {
    if let available, available.wait(timeout: .now()) == .timedOut {
      let writes = writesQueued.load(ordering: .relaxed)
      let byWrites = writes >= 2 && writes >= hashesQueued.load(ordering: .relaxed)
      let start = DispatchTime.now().uptimeNanoseconds
      available.wait()
      if byWrites && !pace.fellBehind {
        let now = DispatchTime.now().uptimeNanoseconds
        pace.waitedForWrites(now &- start, now: now)
        if pace.fellBehind { slowDevice.store(true, ordering: .relaxed) }
      }
    }
    pace.filling(at: DispatchTime.now().uptimeNanoseconds)
    capacity = Self.bufferSize - Int(written % Int64(DirectWrites.blockSize))
    return shared.withLock { state in
      if let buffer = state.spare.popLast() { return buffer }
      state.allocated += 1
      return Self.allocateBuffer()
    }
  }

  /// A buffer for the queues, on huge pages where the kernel has them (`madvise(MADV_HUGEPAGE)`):
  /// 2 MiB pages instead of 512 of 4 KiB each to fault in, to map for the copy and the hash, and
  /// to pin for every direct write (the pinning cost 3% of a GiB's CPU on 4 KiB pages).
  private static func allocateBuffer() -> UnsafeMutableRawBufferPointer {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: hugePage)
    if let base = buffer.baseAddress { _ = csystem_huge_pages(base, UInt(bufferSize)) }
    return buffer
  }
  private static let hugePage = 2 << 20

  /// Hands the current buffer to both queues; it comes back when both are done with it.
  func submit() {
    guard let buffer = current, let queues else { return }
    let chunk = Chunk(buffer: buffer, length: filled, offset: written)
    written += Int64(filled)
    current = nil
    filled = 0
    hashesQueued.add(1, ordering: .relaxed)
    writesQueued.add(1, ordering: .relaxed)
    queues.hashing.async {
      self.hasher.update(bufferPointer: chunk.bytes)
      self.hashesQueued.subtract(1, ordering: .relaxed)
      self.release(chunk)
    }
    queues.writing.async {
      if self.failure == nil { self.writeOut(chunk) }
      self.writesQueued.subtract(1, ordering: .relaxed)
      self.release(chunk)
    }
  }

  private func release(_ chunk: Chunk) {
    guard chunk.users.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
    shared.withLock { $0.spare.append(chunk.buffer) }
    available?.signal()
  }

  /// A filled buffer on its way to the queues, each of which lets go of it once (`users`); only
  /// they touch it until it is back among the spare ones.
  private final class Chunk: @unchecked Sendable {
    let buffer: UnsafeMutableRawBufferPointer
    let length: Int
    let offset: Int64
    let users = Atomic(2)

    init(buffer: UnsafeMutableRawBufferPointer, length: Int, offset: Int64) {
      self.buffer = buffer
      self.length = length
      self.offset = offset
    }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[0..<length]) }
  }

  /// Writes a buffer at its offset, on the writing queue: its whole blocks direct when they start
  /// on a block boundary, the file allows it and the device has kept up, the rest through the
  /// page cache.
  private func writeOut(_ chunk: Chunk) {
    var done = 0
    let whole = chunk.length - chunk.length % DirectWrites.blockSize
    if whole > 0 && chunk.offset % Int64(DirectWrites.blockSize) == 0 && keepsUp() && setDirect(true) {
      let start = DispatchTime.now().uptimeNanoseconds
      switch DirectWrites.write(descriptor, UnsafeRawBufferPointer(rebasing: chunk.buffer[0..<whole]), at: chunk.offset)
      {
      case .written(let count):
        directTaken.bytes += Int64(count)
        directTaken.nanoseconds += DispatchTime.now().uptimeNanoseconds &- start
        done = count
        shared.withLock {
          $0.stored += Int64(count)
          $0.storedDirect += Int64(count)
        }
      case .refused:
        // The filesystem takes no direct writes after all: the page cache from now on.
        _ = DirectWrites.setFlag(descriptor, on: false)
        direct = .refused
      case .failed(let code):
        setFailure(TransferFailure.system(errno: code, doing: "write \(path)"))
        return
      }
    }
    guard done < chunk.length else { return }
    guard setDirect(false) else {
      setFailure(TransferFailure.system(errno: errno, doing: "write \(path)"))
      return
    }
    _ = put(UnsafeRawBufferPointer(rebasing: chunk.buffer[done..<chunk.length]), at: chunk.offset + Int64(done))
  }

  /// Whether the device has kept up with the body so far; the first time it has not, the sink
  /// takes note that the page cache holds the rest, and how fast the direct writes went.
  private func keepsUp() -> Bool {
    guard slowDevice.load(ordering: .relaxed) else { return true }
    if eligible() {
      let rate = directTaken.bytes > 0 ? Double(directTaken.bytes) * 1e9 / Double(max(directTaken.nanoseconds, 1)) : nil
      shared.withLock { state in
        guard !state.caching else { return }
        state.caching = true
        state.writeback = rate
      }
    }
    return false
  }

  /// Whether direct writes are for this file: asked once, on the writing queue.
  private func eligible() -> Bool {
    if direct == .untried {
      direct = DirectWrites.pays(for: descriptor, mode: directMode) ? .off : .refused
    }
    return direct != .refused
  }

  /// Turns direct writes on or off for the file; false when they cannot be had (on), or the
  /// file's flags cannot be changed back (off).
  private func setDirect(_ on: Bool) -> Bool {
    if on {
      guard eligible() else { return false }
      if direct == .on { return true }
      guard DirectWrites.setFlag(descriptor, on: true) else {
        direct = .refused
        return false
      }
      direct = .on
      return true
    }
    guard direct == .on else { return true }
    guard DirectWrites.setFlag(descriptor, on: false) else { return false }
    direct = .off
    return true
  }

  func setFailure(_ failure: TransferFailure) {
    shared.withLock { $0.writeError = failure }
  }

  /// Writes through the page cache at `offset`.
  func put(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
    let fits = DirectWrites.writeCached(descriptor, bytes, at: offset) { count in
      shared.withLock { $0.stored += Int64(count) }
    }
    if !fits { setFailure(TransferFailure.system(errno: errno, doing: "write \(path)")) }
    return fits
  }

  /// A body that ended before the blocks reserved for it gives the rest back: the file is cut
  /// where it ends, when nothing else (a segmented download's ranges) made it longer.
  func release(reservedAfter end: Int64) {
    var info = stat()
    guard fstat(descriptor, &info) == 0, Int64(info.st_size) == end else { return }
    _ = ftruncate(descriptor, off_t(end))
  }
}
