import BatchDLSupport

/// Bytes of a finished download and the source that sent them (its index in the job's
/// `SourceList`, 0 for the one URL of a download without mirrors; nil when unknown: bytes kept
/// from an earlier run).
package struct PieceWriter {
  package var extent: ByteExtent
  package var source: Int?
}

/// What the piece check made of a complete download (docs/sources.md, "Pieces").
package enum PieceVerdict {
  /// No piece digests, or the whole file's SHA-256 already matched: the whole-file checks decide.
  case unchecked
  /// Every piece has its digest.
  case verified
  /// Pieces failed their digests (`JobLife` decides whether they are asked again).
  case bad(BadPieces)
  /// The body cannot be the file the pieces describe, or cannot be read back.
  case failed(TransferFailure)

  /// Pieces that failed, each bad range with the sources that sent bytes of it.
  package struct BadPieces {
    package var pieces: [Int]
    /// Bad pieces near each other that the same sources sent are one range.
    package var blame: [(extent: ByteExtent, sources: Set<Int>)]
    package var failure: TransferFailure
    /// The validator a checkpoint of the repair records.
    package var validator: ResumeValidator
  }

  /// Bad pieces this close (bytes) are asked again as one range.
  package static let repairJoin: Int64 = 64 << 10

  /// Checks a complete download against its piece digests when its whole-file SHA-256 did not
  /// confirm it (it failed, or none is known); `writers` say which source sent which bytes.
  package init(_ result: TransferResult, spec: TransferSpec, writers: [PieceWriter], validator: ResumeValidator) {
    guard let digests = spec.pieces else {
      self = .unchecked
      return
    }
    let check = BodyCheck(digest: spec.expectedDigest, pieces: digests)
    let result = result.withDigest()
    let bad: [Int]
    switch check.verdict(size: result.size, sha256: result.sha256, body: result.checkedBody ?? .memory([])) {
    case .verified, .nothingExpected, .wrongSize:
      self = .verified
      return
    case .wrongDigest:
      // Every piece passes, the whole digest fails: which bytes are wrong is unknown (the caller's
      // check of the whole body decides).
      self = .unchecked
      return
    case .piecesDoNotFit:
      // A body that does not fit its pieces is not the file they describe, whatever its bytes.
      self = .failed(
        TransferFailure(
          code: .sizeMismatch,
          message:
            "the body of \(result.size) bytes does not fit its \(digests.hashes.count) pieces of \(digests.length) bytes"
        ))
      return
    case .unreadable:
      self = .failed(
        TransferFailure(code: .read, message: "cannot read the downloaded file back to check its pieces"))
      return
    case .badPieces(let pieces) where result.file == nil:
      // A small file kept in memory: pieces that fail fail the source whole.
      self = .failed(
        TransferFailure(
          code: .checksumMismatch,
          message: "\(digests.describe(pieces)) do not match their \(digests.algorithm.rawValue) digests"))
      return
    case .badPieces(let pieces):
      bad = pieces
    }
    // Each bad piece with the sources that sent bytes of it; pieces near each other that the same
    // sources sent are one range: a few good bytes again cost less than a request each (a document
    // of 1-byte pieces made thousands).
    var blame: [(extent: ByteExtent, sources: Set<Int>)] = []
    for piece in bad {
      let extent = digests.extent(of: piece, total: result.size)
      let sources = Set(
        writers.filter { $0.extent.start < extent.end && extent.start < $0.extent.end }.compactMap(\.source))
      if let last = blame.last, last.sources == sources, extent.start - last.extent.end < Self.repairJoin {
        blame[blame.count - 1].extent.end = extent.end
      } else {
        blame.append((extent, sources))
      }
    }
    self = .bad(
      BadPieces(
        pieces: bad, blame: blame,
        failure: TransferFailure(
          code: .checksumMismatch,
          message: "\(digests.describe(bad)) do not match their \(digests.algorithm.rawValue) digests"),
        validator: validator))
  }
}
