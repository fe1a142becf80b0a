import BatchDLSupport

/// Whether a complete body is what its task expects, by everything the task has: its size, its
/// whole-file digest (SHA-256 computed as the body streamed; SHA-512, SHA-1 or MD5 read back) and
/// its Metalink piece digests (checked in memory or read back from the file). The one rule that
/// every path goes through: the engine judging a source and repairing pieces (single stream,
/// resumed, segmented, mirrors), and the run before it places a file.
public struct BodyCheck: Sendable, Equatable {
  public var size: Int64?
  public var digest: ExpectedDigest?
  public var pieces: PieceDigests?

  public init(size: Int64? = nil, digest: ExpectedDigest? = nil, pieces: PieceDigests? = nil) {
    self.size = size
    self.digest = digest
    self.pieces = pieces
  }

  /// Where the body is.
  public enum Body: Sendable {
    case memory([UInt8])
    case file(String)
  }

  public enum Verdict: Sendable, Equatable {
    /// The task expects nothing to check.
    case nothingExpected
    /// Everything the task expects holds: the size, and the whole-file digest or every piece.
    case verified
    case wrongSize(expected: Int64)
    /// The body does not fit its piece digests (their count times their length), whatever its
    /// bytes: it is not the file they describe.
    case piecesDoNotFit
    /// These pieces fail their digests (the others pass): only they need fetching again.
    case badPieces([Int])
    /// The whole-file digest fails, and no piece says which bytes are wrong.
    case wrongDigest(received: String)
    /// The body could not be read back to be checked.
    case unreadable
  }

  /// The verdict on a complete body of `size` bytes whose SHA-256, computed as it streamed, is
  /// `sha256` ("" when it was not computed: it is then computed here).
  ///
  /// The size comes first; a whole-file digest that matches settles it; otherwise the pieces say
  /// which bytes are wrong, and a body whose whole digest fails though every piece passes is wrong
  /// all the same.
  public func verdict(size received: Int64, sha256: String, body: Body) -> Verdict {
    if let size, size != received { return .wrongSize(expected: size) }
    var wholeFailed: String?
    if let digest {
      let computed: String?
      if digest.algorithm == .sha256, !sha256.isEmpty {
        computed = sha256
      } else {
        switch body {
        case .memory(let bytes): computed = FileDigest.hex(of: bytes, algorithm: digest.algorithm)
        case .file(let path): computed = FileDigest.hex(of: path, algorithm: digest.algorithm)
        }
      }
      guard let computed else { return .unreadable }
      if computed == digest.hex.lowercased() { return .verified }
      wholeFailed = computed
    }
    if let pieces {
      guard pieces.fits(total: received) else { return .piecesDoNotFit }
      let bad: [Int]?
      switch body {
      case .memory(let bytes): bad = pieces.mismatches(in: bytes)
      case .file(let path): bad = pieces.mismatches(in: path, total: received)
      }
      guard let bad else { return .unreadable }
      if !bad.isEmpty { return .badPieces(bad) }
      if wholeFailed == nil { return .verified }
    }
    if let wholeFailed { return .wrongDigest(received: wholeFailed) }
    return size == nil ? .nothingExpected : .verified
  }
}

extension BodyCheck {
  /// Who judges a complete body, which decides how a failure is told.
  public enum Judge: Sendable {
    /// The engine, judging the source that sent it: a failure sets the source aside. Only the
    /// size and the whole-file digest are its to tell here (pieces are repaired, a body that
    /// cannot be read back is left to the run).
    case source
    /// The run, before it places the file at a task's destination: nothing is written there.
    case placement
  }

  /// Why a complete `result` is not what this check expects, as `judge` tells it (the reports'
  /// codes and messages); nil when it is, or when what fails is not `judge`'s to tell.
  public func failure(of result: TransferResult, by judge: Judge) -> TransferFailure? {
    let result = result.withDigest()
    let verdict = verdict(size: result.size, sha256: result.sha256, body: result.checkedBody ?? .memory([]))
    let failure: (code: FailureCode, message: String)
    switch (verdict, judge) {
    case (.wrongSize(let size), .source):
      failure = (.sizeMismatch, "the source sent \(result.size) bytes where size: says \(size)")
    case (.wrongSize(let size), .placement):
      failure = (.sizeMismatch, "expected \(size) bytes, received \(result.size); nothing was written to 'to'")
    case (.wrongDigest, .source):
      guard let digest else { return nil }
      let name = digest.algorithm == .sha256 ? "SHA-256" : digest.algorithm.rawValue.uppercased()
      failure = (.checksumMismatch, "the bytes do not have the expected \(name) \(digest.hex)")
    case (.wrongDigest(let received), .placement):
      guard let digest else { return nil }
      let name = digest.algorithm == .sha256 ? "sha256" : digest.algorithm.rawValue
      failure = (
        .checksumMismatch, "expected \(name) \(digest.hex), received \(received); nothing was written to 'to'"
      )
    case (.unreadable, .placement):
      let algorithm = digest?.algorithm.rawValue ?? "digest"
      failure = (.read, "cannot read the received file to check its \(algorithm); nothing was written to 'to'")
    case (.unreadable, .source), (.nothingExpected, _), (.verified, _), (.piecesDoNotFit, _), (.badPieces, _):
      return nil
    }
    return TransferFailure(code: failure.code, message: failure.message, attempts: result.attempts)
  }
}
