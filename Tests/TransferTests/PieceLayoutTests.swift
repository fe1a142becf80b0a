import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// The one piece arithmetic: Metalink's `<pieces>` and the engine's piece digests cut a file the
/// same way.
@Suite struct PieceLayoutTests {
  @Test func piecesCountAndRangesAgreeWhereverTheyAreAsked() {
    let mark = SourceMark(file: "d.meta4", line: 1, column: 1)
    for length: Int64 in [1, 7, 16 << 10] {
      let layout = PieceLayout(length: length)
      for size: Int64 in [0, 1, length - 1, length, length + 1, 3 * length, 3 * length + 5] where size >= 0 {
        let count = layout.count(forSize: size)
        #expect(count == (size == 0 ? 0 : (size + length - 1) / length))
        let hashes = Array(repeating: "00", count: Int(count))
        let metalink = MetalinkPieces(length: length, algorithm: .sha256, hashes: hashes, mark: mark)
        let digests = PieceDigests(length: length, algorithm: .sha256, hashes: hashes)
        #expect(metalink.count(forSize: size) == count)
        #expect(digests.fits(total: size))
        #expect(!digests.fits(total: size + length))
        var covered: Int64 = 0
        for index in 0..<Int(count) {
          let range = layout.range(ofPiece: index, size: size)
          #expect(range.lowerBound == covered)
          #expect(metalink.range(ofPiece: index, size: size) == range)
          let extent = digests.extent(of: index, total: size)
          #expect(extent.start == range.lowerBound && extent.end == range.upperBound)
          covered = range.upperBound
        }
        #expect(covered == size)
      }
    }
    #expect(PieceLayout(length: 0).length == 1)
    #expect(!PieceDigests(length: 4, algorithm: .sha256, hashes: []).fits(total: -1))
  }
}
