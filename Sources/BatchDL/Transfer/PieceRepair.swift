/// Bytes of a finished download and the source that sent them (its index in the job's
/// `SourceList`, 0 for the one URL of a download without mirrors; nil when unknown: bytes kept
/// from an earlier run).
struct PieceWriter {
  var extent: ByteExtent
  var source: Int?
}

/// What the piece check made of a complete download (docs/sources.md, "Pieces").
enum PieceVerdict {
  /// No piece digests, or the whole file's SHA-256 already matched: the whole-file checks decide.
  case unchecked
  /// Every piece has its digest.
  case verified
  /// Pieces failed: they are being fetched again (the job is queued).
  case repairing
  /// Pieces still failed after as many repairs as the download has sources, and one more.
  case failed(TransferFailure)
}

extension Engine {
  /// Checks a complete download against its piece digests when its whole-file SHA-256 did not
  /// confirm it (it failed, or none is known). Pieces that fail are fetched again, from a source
  /// other than the one that sent them when one is left (that one is set aside); the pieces that
  /// passed stay on disk as extents and are not asked again. `validator` is the one a checkpoint
  /// of the repair records.
  /// Bad pieces this close (bytes) are asked again as one range.
  static let repairJoin: Int64 = 64 << 10

  func checkPieces(
    _ job: Int, _ result: TransferResult, writers: [PieceWriter], validator: ResumeValidator
  ) -> PieceVerdict {
    let built = built(job)
    guard let digests = built.spec.pieces, !cancelled.isSet else { return .unchecked }
    let check = BodyCheck(
      digest: built.spec.expectedSHA256.map { ExpectedDigest(algorithm: .sha256, hex: $0) }, pieces: digests)
    let result = result.withDigest()
    let bad: [Int]
    switch check.verdict(size: result.size, sha256: result.sha256, body: result.checkedBody ?? .memory([])) {
    case .verified, .nothingExpected, .wrongSize:
      return .verified
    case .wrongDigest:
      // Every piece passes, the whole digest fails: which bytes are wrong is unknown (the caller's
      // check of the whole body decides).
      return .unchecked
    case .piecesDoNotFit:
      // A body that does not fit its pieces is not the file they describe, whatever its bytes.
      return .failed(
        TransferFailure(
          code: .sizeMismatch,
          message:
            "the body of \(result.size) bytes does not fit its \(digests.hashes.count) pieces of \(digests.length) bytes",
          attempts: jobs[job].attempts))
    case .unreadable:
      return .failed(
        TransferFailure(
          code: .read, message: "cannot read the downloaded file back to check its pieces",
          attempts: jobs[job].attempts))
    case .badPieces(let pieces) where result.file == nil:
      // A small file kept in memory: pieces that fail fail the source whole.
      return .failed(
        TransferFailure(
          code: .checksumMismatch,
          message: "\(digests.describe(pieces)) do not match their \(digests.algorithm.rawValue) digests",
          attempts: jobs[job].attempts))
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
    let extents = blame.map(\.extent)
    var failure = TransferFailure(
      code: .checksumMismatch,
      message: "\(digests.describe(bad)) do not match their \(digests.algorithm.rawValue) digests",
      attempts: jobs[job].attempts)
    let blamed = blame.reduce(into: Set<Int>()) { $0.formUnion($1.sources) }
    let sources = built.sources
    // Without mirrors, source 0 is the download's one URL, as it was asked (before redirects).
    let urls = blamed.sorted().map { index in sources.map { $0.sources[index].url } ?? built.firstURL }
    observer?.transferPiecesFailed(job, pieces: bad, urls: urls, message: failure.message)
    built.pieceRepairs += 1
    guard built.pieceRepairs <= (sources?.sources.count ?? 1) + 1 else {
      failure.message += ", still after \(built.pieceRepairs - 1) repairs"
      return .failed(failure)
    }
    if let sources {
      // The sources that sent bad pieces are set aside while another one is left to ask.
      for index in blamed.sorted() where sources.healthy.contains(where: { !blamed.contains($0) }) {
        observer?.transferSourceFailed(job, url: sources.sources[index].url, failure: failure)
        sources.setAside(index, failure)
      }
      let next = sources.sources[sources.current]
      built.spec.url = next.url
      built.spec.hostKey = next.hostKey
      built.spec.sourceHeaders = next.headers
    }
    let kept = ByteExtent.gaps(in: ByteExtent(start: 0, end: result.size), besides: extents)
    built.spec.extents = kept
    built.spec.rangeEnd = nil
    built.spec.conditional = nil
    built.spec.resume = TransferSpec.Resume(
      offset: kept.first.map { $0.start == 0 ? $0.end : 0 } ?? 0, validator: validator, total: result.size)
    built.repairing = true
    built.repairBlame = blame
    requeue(job)
    return .repairing
  }
}
