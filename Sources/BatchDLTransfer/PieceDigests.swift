import BatchDLSupport

/// The digests of a file's pieces, from a Metalink `<pieces>`: what lets a download keep the
/// pieces that are right and fetch again only those that are not (docs/sources.md, "Pieces").
public struct PieceDigests: Sendable, Equatable {
  /// Bytes in each piece but the last.
  public var length: Int64
  public var algorithm: DigestAlgorithm
  /// Lower-case hexadecimal digests, piece 0 first.
  public var hashes: [String]

  public init(length: Int64, algorithm: DigestAlgorithm, hashes: [String]) {
    self.length = max(1, length)
    self.algorithm = algorithm
    self.hashes = hashes
  }

  /// How a file is cut into these pieces.
  public var layout: PieceLayout { PieceLayout(length: length) }

  /// Whether the digests describe a file of `total` bytes: one per piece.
  public func fits(total: Int64) -> Bool {
    total >= 0 && Int64(hashes.count) == layout.count(forSize: total)
  }

  /// The pieces of `body` (a whole file kept in memory) that do not have their digest, in order;
  /// nil when the digests do not fit it.
  package func mismatches(in body: [UInt8]) -> [Int]? {
    let total = Int64(body.count)
    guard fits(total: total) else { return nil }
    return hashes.indices.filter { index in
      let piece = extent(of: index, total: total)
      return FileDigest.hex(of: Array(body[Int(piece.start)..<Int(piece.end)]), algorithm: algorithm) != hashes[index]
    }
  }

  /// The bytes of piece `index` in a file of `total` bytes.
  public func extent(of index: Int, total: Int64) -> ByteExtent {
    let range = layout.range(ofPiece: index, size: total)
    return ByteExtent(start: range.lowerBound, end: range.upperBound)
  }

  /// The pieces whose bytes in the file at `path` (of `total` bytes) do not have their digest, in
  /// order; nil when the digests do not fit the file or it cannot be read.
  package func mismatches(in path: String, total: Int64) -> [Int]? {
    guard fits(total: total) else { return nil }
    let extents = hashes.indices.map { extent(of: $0, total: total) }
    guard let digests = FileDigest.hex(of: path, extents: extents, algorithm: algorithm) else { return nil }
    return hashes.indices.filter { digests[$0] != hashes[$0] }
  }

  /// "pieces 3 and 4 of 16 (1 MiB each)", for messages.
  package func describe(_ indices: [Int]) -> String {
    let shown = indices.prefix(8).map(String.init)
    let list =
      indices.count == 1
      ? "piece \(shown[0])"
      : "pieces \(shown.dropLast().joined(separator: ", ")) and \(shown.last ?? "")"
        + (indices.count > 8 ? " (\(indices.count) in all)" : "")
    return "\(list) of \(hashes.count) (\(length) bytes each)"
  }
}
