import Crypto
import Dispatch
import Foundation

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
/// The first MiB is written on the engine thread; past that, writing and hashing move to a serial
/// queue of their own, so that a large download's hashing overlaps the network instead of
/// slowing it. At most `maxPending` chunks wait on that queue (back-pressure on the engine).
final class FileSink: BodySink, @unchecked Sendable {
  let path: String
  private let descriptor: Int32
  private var hasher = SHA256()
  private(set) var count: Int64 = 0
  /// Offset of the next write done by whichever side writes (inline or the queue).
  private var written: Int64 = 0
  private var queue: DispatchQueue?
  private let pending = DispatchSemaphore(value: 64)
  private let lock = NSLock()
  private var writeError: TransferFailure?
  private let inlineLimit: Int64 = 1 << 20

  /// Creates (or truncates) `path`, never following a symlink there.
  init(path: String) throws(TransferFailure) {
    self.path = path
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard fd >= 0 else {
      throw FileSink.failure(errno: errno, doing: "create \(path)")
    }
    descriptor = fd
  }

  deinit {
    close(descriptor)
  }

  var failure: TransferFailure? {
    lock.lock()
    defer { lock.unlock() }
    return writeError
  }

  static func failure(errno code: Int32, doing what: String) -> TransferFailure {
    let reason = String(cString: strerror(code))
    if code == ENOSPC || code == EDQUOT {
      return TransferFailure(code: "disk-full", message: "cannot \(what): \(reason); free some space and run again")
    }
    return TransferFailure(code: "write", message: "cannot \(what): \(reason)")
  }

  func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
    if failure != nil { return false }
    count += Int64(bytes.count)
    if queue == nil && count <= inlineLimit {
      return store(bytes)
    }
    let queue = self.queue ?? DispatchQueue(label: "batchdl.sink")
    self.queue = queue
    let copy = [UInt8](bytes)
    pending.wait()
    queue.async {
      copy.withUnsafeBytes { _ = self.store($0) }
      self.pending.signal()
    }
    return true
  }

  /// Writes and hashes on whichever thread owns the file at the moment.
  @discardableResult
  private func store(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
      let result = pwrite(descriptor, bytes.baseAddress.map { $0 + offset }, bytes.count - offset, off_t(written))
      if result < 0 {
        if errno == EINTR { continue }
        let failure = FileSink.failure(errno: errno, doing: "write \(path)")
        lock.lock()
        writeError = failure
        lock.unlock()
        return false
      }
      offset += result
      written += Int64(result)
    }
    hasher.update(bufferPointer: bytes)
    return true
  }

  func finish() -> Result<(size: Int64, sha256: String), TransferFailure> {
    queue?.sync {}
    if let failure { return .failure(failure) }
    return .success((count, hasher.finalize().hexString))
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
        code: "body-too-large",
        message: "the response is larger than \(ByteSize.format(limit)), the most a data task keeps in memory; use a download task or become_download")
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
