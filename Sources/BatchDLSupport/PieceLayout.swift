/// How a file is cut into pieces: `length` bytes each, the last one shorter. The one piece
/// arithmetic of batchdl: the Metalink reader checks a `<pieces>` list against its `<size>` with
/// it (`MetalinkPieces`), and the engine checks and repairs a download's pieces with it
/// (`PieceDigests`).
public struct PieceLayout: Hashable, Sendable {
  /// Bytes in each piece but the last (at least 1).
  public let length: Int64

  public init(length: Int64) {
    self.length = max(1, length)
  }

  /// The number of pieces a file of `size` bytes has (none when it is empty).
  public func count(forSize size: Int64) -> Int64 {
    size <= 0 ? 0 : (size - 1) / length + 1
  }

  /// The byte range of piece `index` in a file of `size` bytes.
  public func range(ofPiece index: Int, size: Int64) -> Range<Int64> {
    let start = min(Int64(index) * length, size)
    return start..<min(start + length, size)
  }
}
