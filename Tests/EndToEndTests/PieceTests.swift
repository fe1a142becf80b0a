import BatchDL
import Crypto
import Foundation
import TestServer
import TestSupport
import Testing

/// Metalink piece digests: a complete file whose digest fails is checked piece by piece, and only
/// the pieces that fail are fetched again (from another source when one is left); the good pieces
/// stay. The servers corrupt bytes on the way out, as a broken mirror or a bad disk does.
@Suite(.serialized) struct PieceTests {
  static let length = 4 << 20
  static let pieceLength = 256 << 10
  static var body: [UInt8] { FileResource.versionBytes(1, length: length) }
  /// Bytes inside piece 3 (786,432-1,048,575) only.
  static let inPieceThree = 1_000_000...1_000_099

  /// A Metalink 4 document for `f.bin` with its sources in order, piece digests of 256 KiB, and
  /// the whole file's SHA-256 unless `whole` is false.
  static func document(urls: [String], whole: Bool = true, pieceLength: Int = Self.pieceLength) -> String {
    let bytes = body
    var pieces = ""
    for start in stride(from: 0, to: bytes.count, by: pieceLength) {
      let piece = bytes[start..<min(start + pieceLength, bytes.count)]
      pieces += "<hash>\(SHA256.hash(data: Data(piece)).map { String(format: "%02x", $0) }.joined())</hash>"
    }
    let sources = urls.enumerated().map { "<url priority=\"\($0.offset + 1)\">\($0.element)</url>" }.joined()
    let digest = whole ? "<hash type=\"sha-256\">\(SHA256Digest.hex(bytes))</hash>" : ""
    return """
      <?xml version="1.0"?>
      <metalink xmlns="urn:ietf:params:xml:ns:metalink">
        <file name="f.bin"><size>\(bytes.count)</size>\(digest)
          <pieces length="\(pieceLength)" type="sha-256">\(pieces)</pieces>
          \(sources)</file>
      </metalink>
      """
  }

  static func manifest(segments: Int = 1) -> String {
    """
    version: 1
    sessions:
      s:
        retry: {attempts: 2, backoff: 10ms}
        network: {segments: \(segments), min_segment_size: 256KB, max_connections_per_host: 8}
        tasks:
          - metalink: doc.meta4
            to: m/
    """
  }

  static func corrupt(_ bytes: ClosedRange<Int>, times: Int = .max, rate: Int? = nil) -> FileResource {
    var file = FileResource.version(1, length: length, rateLimit: rate)
    file.corruptions = [Corruption(bytes: bytes, times: times)]
    return file
  }

  @Test func aBadPieceFromOneMirrorIsFetchedAgainFromTheNextAndTheGoodPiecesStay() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.corrupt(Self.inPieceThree)))
    fixture.server.route("/b.bin", .file(.version(1, length: Self.length)))
    fixture.folder.write(
      "doc.meta4", Self.document(urls: [fixture.server.url("/a.bin"), fixture.server.url("/b.bin")]))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m/f.bin", Self.body))
    let repaired = fixture.server.exchanges(for: "/b.bin")
    #expect(repaired.map(\.range) == ["bytes=786432-1048575"], "only piece 3 is asked again")
    #expect(repaired.allSatisfy { $0.ifRange == nil && $0.status == 206 })
    #expect(repaired.map(\.bytesSent).reduce(0, +) == Self.pieceLength)
    let task = try #require(try fixture.tasks()["m/f.bin"])
    let sources = try #require(task["sources"] as? [[String: Any]])
    #expect(sources.map { $0["url"] as? String } == [fixture.server.url("/a.bin"), fixture.server.url("/b.bin")])
    #expect(sources.map { $0["bytes"] as? Int } == [Self.length, Self.pieceLength])
    let failed = fixture.events().filter { $0["event"] as? String == "pieces_failed" }
    #expect(failed.map { $0["pieces"] as? [Int] } == [[3]])
    #expect(failed.first?["urls"] as? [String] == [fixture.server.url("/a.bin")])
    let setAside = fixture.events().filter { $0["event"] as? String == "source_failed" }
    #expect(setAside.map { $0["url"] as? String } == [fixture.server.url("/a.bin")])
  }

  @Test func withOneSourceABadPieceIsAskedAgainFromIt() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.corrupt(Self.inPieceThree, times: 1)))
    fixture.folder.write("doc.meta4", Self.document(urls: [fixture.server.url("/a.bin")]))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m/f.bin", Self.body))
    let exchanges = fixture.server.exchanges(for: "/a.bin")
    #expect(exchanges.map(\.range) == [nil, "bytes=786432-1048575"])
  }

  @Test func badPiecesNearEachOtherAreAskedAgainAsOneRange() throws {
    // Each bad piece was a request of its own, in every round of repairs.
    let fixture = try RunFixture()
    let small = 16 << 10
    var file = FileResource.version(1, length: Self.length)
    file.corruptions = [0, 2, 4, 6].map { Corruption(bytes: ($0 * small + 100)...($0 * small + 109), times: 1) }
    fixture.server.route("/a.bin", .file(file))
    fixture.folder.write(
      "doc.meta4", Self.document(urls: [fixture.server.url("/a.bin")], whole: false, pieceLength: small))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m/f.bin", Self.body))
    let exchanges = fixture.server.exchanges(for: "/a.bin")
    #expect(exchanges.map(\.range) == [nil, "bytes=0-\(7 * small - 1)"])
  }

  @Test func piecesThatKeepFailingFailTheTaskAndLeaveNothingAtTo() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.corrupt(Self.inPieceThree)))
    fixture.folder.write("doc.meta4", Self.document(urls: [fixture.server.url("/a.bin")]))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(!fixture.folder.exists("m/f.bin"))
    let task = try #require(try fixture.tasks()["m/f.bin"])
    let error = try #require(task["error"] as? [String: Any])
    #expect(error["code"] as? String == "checksum-mismatch")
    #expect((error["message"] as? String ?? "").contains("piece 3 of 16"), "\(error)")
    // The whole file once, then piece 3 twice: the repairs are bounded.
    #expect(fixture.server.exchanges(for: "/a.bin").count == 3)
  }

  @Test func piecesAreCheckedWhenTheDocumentGivesNoWholeDigest() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.corrupt(Self.inPieceThree, times: 1)))
    fixture.folder.write("doc.meta4", Self.document(urls: [fixture.server.url("/a.bin")], whole: false))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m/f.bin", Self.body))
    #expect(fixture.server.exchanges(for: "/a.bin").count == 2)
  }

  /// Segments spread over both sources; every piece `/a.bin` sends is bad, every one `/b.bin`
  /// sends is good: exactly the pieces `/a.bin` sent fail, and each is asked again from `/b.bin`.
  @Test func aSegmentedDownloadRepairsOnlyThePiecesOfTheBadSourceFromAnother() throws {
    let fixture = try RunFixture()
    var bad = FileResource.version(1, length: Self.length, rateLimit: 4_000_000)
    bad.corruptions = stride(from: 1000, to: Self.length, by: Self.pieceLength).map {
      Corruption(bytes: $0...($0 + 9))
    }
    fixture.server.route("/a.bin", .file(bad))
    fixture.server.route("/b.bin", .file(.version(1, length: Self.length, rateLimit: 4_000_000)))
    fixture.folder.write(
      "doc.meta4", Self.document(urls: [fixture.server.url("/a.bin"), fixture.server.url("/b.bin")]))
    fixture.manifest(Self.manifest(segments: 4))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m/f.bin", Self.body))
    let failed = fixture.events().filter { $0["event"] as? String == "pieces_failed" }
    #expect(failed.count == 1, "\(fixture.events().filter { ($0["event"] as? String ?? "") != "progress" })")
    let pieces = try #require(failed.first?["pieces"] as? [Int])
    #expect(pieces.contains(0) && pieces.count < 16, "both sources sent pieces: \(pieces)")
    let asked = Set(fixture.server.exchanges(for: "/b.bin").compactMap(\.range))
    for piece in pieces {
      let start = piece * Self.pieceLength
      #expect(asked.contains("bytes=\(start)-\(start + Self.pieceLength - 1)"), "piece \(piece): \(asked)")
    }
    let sources = try #require(try fixture.tasks()["m/f.bin"]?["sources"] as? [[String: Any]])
    #expect(sources.count == 2 && sources.allSatisfy { ($0["bytes"] as? Int ?? 0) > 0 }, "\(sources)")
  }
}

extension PieceTests {
  /// Mirror A sends the even pieces bad, mirror B the odd ones: each was asked again for pieces it
  /// had sent bad (until the repairs ran out: checksum-mismatch); each bad piece now goes to a
  /// source that did not send it.
  @Test func aSegmentedRepairAsksEachBadPieceFromASourceThatDidNotSendIt() throws {
    let fixture = try RunFixture()
    var first = FileResource.version(1, length: Self.length, rateLimit: 4_000_000)
    first.corruptions = stride(from: 1000, to: Self.length, by: 2 * Self.pieceLength).map {
      Corruption(bytes: $0...($0 + 9))
    }
    var second = FileResource.version(1, length: Self.length, rateLimit: 4_000_000)
    second.corruptions = stride(from: Self.pieceLength + 1000, to: Self.length, by: 2 * Self.pieceLength).map {
      Corruption(bytes: $0...($0 + 9))
    }
    fixture.server.route("/a.bin", .file(first))
    fixture.server.route("/b.bin", .file(second))
    fixture.folder.write(
      "doc.meta4", Self.document(urls: [fixture.server.url("/a.bin"), fixture.server.url("/b.bin")]))
    fixture.manifest(Self.manifest(segments: 4))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m/f.bin", Self.body))
    let failed = fixture.events().filter { $0["event"] as? String == "pieces_failed" }
    #expect(failed.count == 1, "one round of repairs: \(failed)")
  }

  /// The mirror asked for the bad piece ignores `Range` and sends its whole file: nothing of it is
  /// written at the piece's offset; the download goes on as one stream and ends byte-identical.
  @Test func aRepairRangeAnsweredWithTheWholeFileIsNeverWrittenAtThePiece() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.corrupt(Self.inPieceThree)))
    var whole = FileResource.version(1, length: Self.length)
    whole.rangeFault = .wholeBody
    fixture.server.route("/b.bin", .file(whole))
    fixture.folder.write(
      "doc.meta4", Self.document(urls: [fixture.server.url("/a.bin"), fixture.server.url("/b.bin")]))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m/f.bin", Self.body))
    let asked = fixture.server.exchanges(for: "/b.bin")
    #expect(asked.first?.range == "bytes=786432-1048575" && asked.first?.status == 200, "\(asked.map(\.range))")
  }
}

/// Every body with piece digests is checked against them, whatever its size and however it was
/// kept (in memory or on disk), and a body that does not fit its pieces is refused.
extension PieceTests {
  /// A document for `f.bin` whose pieces of `pieceLength` describe `bytes`, with no whole-file
  /// digest and, when `size` is false, no `<size>` either.
  static func piecesOnly(_ bytes: [UInt8], pieceLength: Int, urls: [String], size: Bool = true) -> String {
    var pieces = ""
    for start in stride(from: 0, to: bytes.count, by: pieceLength) {
      pieces += "<hash>\(SHA256Digest.hex(Array(bytes[start..<min(start + pieceLength, bytes.count)])))</hash>"
    }
    let sources = urls.enumerated().map { "<url priority=\"\($0.offset + 1)\">\($0.element)</url>" }.joined()
    return """
      <?xml version="1.0"?>
      <metalink xmlns="urn:ietf:params:xml:ns:metalink">
        <file name="f.bin">\(size ? "<size>\(bytes.count)</size>" : "")
          <pieces length="\(pieceLength)" type="sha-256">\(pieces)</pieces>
          \(sources)</file>
      </metalink>
      """
  }

  @Test func aSmallFileKeptInMemoryIsCheckedAgainstItsPieces() throws {
    let fixture = try RunFixture()
    let body = FileResource.versionBytes(3, length: 1000)
    var bad = FileResource(body: body, etag: .strong("s"))
    bad.corruptions = [Corruption(bytes: 300...309)]
    fixture.server.route("/a.bin", .file(bad))
    fixture.folder.write("doc.meta4", Self.piecesOnly(body, pieceLength: 256, urls: [fixture.server.url("/a.bin")]))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(!fixture.folder.exists("m/f.bin"))
    let error = try #require(try fixture.tasks()["m/f.bin"]?["error"] as? [String: Any])
    #expect(error["code"] as? String == "checksum-mismatch")
    #expect((error["message"] as? String ?? "").contains("piece 1 of 4"), "\(error)")

    // With a good mirror, the bad source is set aside and the file comes from the mirror.
    let again = try RunFixture()
    again.server.route("/a.bin", .file(bad))
    again.server.route("/b.bin", .file(FileResource(body: body, etag: .strong("s"))))
    again.folder.write(
      "doc.meta4",
      Self.piecesOnly(body, pieceLength: 256, urls: [again.server.url("/a.bin"), again.server.url("/b.bin")]))
    again.manifest(Self.manifest())
    let recovered = try again.run()
    #expect(recovered.status == 0, "\(recovered.stderr)")
    #expect(again.holds("m/f.bin", body))
  }

  @Test func aBodyThatDoesNotFitItsPiecesIsRefused() throws {
    // Four pieces of 1 MiB and no <size>; the server sends 4 MiB and 12,345 bytes more.
    let fixture = try RunFixture()
    let described = FileResource.versionBytes(4, length: 4 << 20)
    let sent = described + FileResource.versionBytes(5, length: 12_345)
    fixture.server.route("/a.bin", .file(FileResource(body: sent, etag: .strong("long"))))
    fixture.folder.write(
      "doc.meta4", Self.piecesOnly(described, pieceLength: 1 << 20, urls: [fixture.server.url("/a.bin")], size: false))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(!fixture.folder.exists("m/f.bin"))
    let error = try #require(try fixture.tasks()["m/f.bin"]?["error"] as? [String: Any])
    #expect(error["code"] as? String == "size-mismatch", "\(error)")
  }
}

/// `pieces_failed` names the source that sent the bad pieces whatever the number of sources: a
/// download with one URL names it, as a download with mirrors names the mirror.
extension PieceTests {
  @Test func withOneSourcePiecesFailedNamesIt() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.corrupt(Self.inPieceThree, times: 1)))
    fixture.folder.write("doc.meta4", Self.document(urls: [fixture.server.url("/a.bin")]))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    let failed = fixture.events().filter { $0["event"] as? String == "pieces_failed" }
    #expect(failed.map { $0["pieces"] as? [Int] } == [[3]])
    #expect(failed.map { $0["urls"] as? [String] } == [[fixture.server.url("/a.bin")]])
  }

  /// Every repair fails too: each `pieces_failed` names the one source, whichever of its
  /// connections sent the piece.
  @Test func withOneSourceInSegmentsPiecesFailedNamesIt() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.corrupt(Self.inPieceThree, rate: 4_000_000)))
    fixture.folder.write("doc.meta4", Self.document(urls: [fixture.server.url("/a.bin")]))
    fixture.manifest(Self.manifest(segments: 4))
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(!fixture.events().filter { $0["event"] as? String == "segment" }.isEmpty, "fetched in segments")
    let failed = fixture.events().filter { $0["event"] as? String == "pieces_failed" }
    #expect(!failed.isEmpty)
    #expect(failed.allSatisfy { $0["pieces"] as? [Int] == [3] }, "\(failed)")
    #expect(failed.allSatisfy { $0["urls"] as? [String] == [fixture.server.url("/a.bin")] }, "\(failed)")
  }
}
