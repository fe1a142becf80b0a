import BatchDLSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Writes one range of a segmented download into the download's partial file at its offsets, on
/// the engine thread (`pwrite` into the page cache, in `DirectWrites.writeCached`'s pieces); the download hashes the file when it is whole.
/// `count` is the offset of the next byte, as a resumed `FileSink` counts the kept bytes.
package final class RangeSink: BodySink {
  private let descriptor: Int32
  private let path: String
  package private(set) var count: Int64
  package private(set) var failure: TransferFailure?

  package init(descriptor: Int32, start: Int64, path: String) {
    self.descriptor = descriptor
    self.path = path
    count = start
  }

  package func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard failure == nil else { return false }
    let fits = DirectWrites.writeCached(descriptor, bytes, at: count) { count += Int64($0) }
    if !fits { failure = TransferFailure.system(errno: errno, doing: "write \(path)") }
    return fits
  }

  package func finish() -> Result<(size: Int64, sha256: String), TransferFailure> {
    if let failure { return .failure(failure) }
    return .success((count, ""))
  }
}
