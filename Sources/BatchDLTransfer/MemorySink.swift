import BatchDLSupport
import Crypto

/// Keeps a body in memory up to a limit; a data task that may become a download spills into a
/// file when the response matches its rule or outgrows memory.
package final class MemorySink: BodySink {
  private var bytes: [UInt8] = []
  private let limit: Int64
  private let spill: TransferSpec.Spill?
  private var hasher = SHA256()
  package private(set) var count: Int64 = 0
  package private(set) var failure: TransferFailure?
  /// The file the body moved to, once it has.
  package private(set) var spilled: FileSink?
  private let openSpill: (TransferSpec.Spill) -> FileSink?

  package init(limit: Int64, spill: TransferSpec.Spill?, openSpill: @escaping (TransferSpec.Spill) -> FileSink?) {
    self.limit = limit
    self.spill = spill
    self.openSpill = openSpill
  }

  /// Moves to the spill file now (the response's type or announced length matched the rule).
  package func spillNow() -> Bool {
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

  package func write(_ chunk: UnsafeRawBufferPointer) -> Bool {
    if let spilled {
      // `count` goes on counting the whole body (the gate's `max_size` reads it).
      count += Int64(chunk.count)
      return spilled.write(chunk)
    }
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

  package var body: [UInt8] { bytes }

  package func finish() -> Result<(size: Int64, sha256: String), TransferFailure> {
    if let spilled { return spilled.finish() }
    if let failure { return .failure(failure) }
    return .success((count, hasher.finalize().hexString))
  }
}
