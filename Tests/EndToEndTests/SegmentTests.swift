import BatchDL
import Foundation
import TestServer
import TestSupport
import Testing

/// Segmented downloads: one file fetched as ranges at once into one partial file, against servers
/// that get ranges wrong in each way they do.
@Suite(.serialized) struct SegmentTests {
  static let length = 4 << 20

  /// A manifest of one download in `segments` segments of at least 256 KB.
  static func manifest(segments: Int = 5, extra: String = "") -> String {
    """
    version: 1
    sessions:
      s:
        retry: {attempts: 3, backoff: 10ms}
        network: {segments: \(segments), min_segment_size: 256KB, max_connections_per_host: 8}
        tasks:
          - download: BASE/seg.bin
            to: seg.bin
    \(extra)
    """
  }

  static var body: [UInt8] { FileResource.versionBytes(1, length: length) }

  /// Version 1 of the file, each connection capped at `rate` bytes a second.
  static func capped(_ rate: Int = 2_000_000, fault: RangeFault? = nil) -> FileResource {
    var file = FileResource.version(1, length: length, rateLimit: rate)
    file.rangeFault = fault
    return file
  }

  @Test func aLargeFileIsFetchedAsRangesAtOnce() throws {
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .file(Self.capped()))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("seg.bin", Self.body))
    #expect(!fixture.folder.exists("seg.bin.batchdl-part"))
    let stats = fixture.server.stats(for: "/seg.bin")
    #expect(stats.maxConcurrentRanges >= 4, "\(stats)")
    let ranged = fixture.server.exchanges(for: "/seg.bin").filter { $0.range != nil }
    #expect(ranged.allSatisfy { $0.ifRange == "\"v1-\(Self.length)\"" && $0.status == 206 })
    #expect(ranged.allSatisfy { ($0.range ?? "").split(separator: "-").count == 2 }, "each asks for a closed range")
    let task = try #require(try fixture.tasks()["seg.bin"])
    #expect(task["sha256"] as? String == SHA256Digest.hex(Self.body))
    let sources = try #require(task["sources"] as? [[String: Any]])
    #expect(sources.map { $0["url"] as? String } == [fixture.server.url("/seg.bin")])
    let segments = fixture.events().filter { $0["event"] as? String == "segment" }
    #expect(segments.count >= 4)
    #expect(segments.allSatisfy { ($0["start"] as? Int ?? -1) >= 0 && ($0["length"] as? Int ?? 0) > 0 })
  }

  /// The file is handed out in chunks, in file order, to the connections (not one big range each):
  /// the part from byte 0 without a gap grows steadily, and is hashed as it grows.
  @Test func rangesAreChunksHandedOutInFileOrder() throws {
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .file(Self.capped(4_000_000)))
    fixture.manifest(Self.manifest(segments: 4))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("seg.bin", Self.body))
    let starts = fixture.server.exchanges(for: "/seg.bin").compactMap { exchange -> Int? in
      guard let range = exchange.range, let first = range.split(separator: "=").last?.split(separator: "-").first
      else { return nil }
      return Int(first)
    }
    // 4 MiB in chunks of 256 KiB (min_segment_size): about 15 ranges, not 3 (plus steals).
    #expect(starts.count >= 10, "\(starts)")
    #expect(starts.prefix(3).allSatisfy { $0 < 2 << 20 }, "the first ranges asked are the file's start: \(starts)")
    let lengths = fixture.server.exchanges(for: "/seg.bin").filter { $0.range != nil }.map(\.bytesSent)
    #expect(lengths.allSatisfy { $0 <= 3 * 256 << 10 / 2 }, "each range is a chunk: \(lengths)")
    let task = try #require(try fixture.tasks()["seg.bin"])
    #expect(task["sha256"] as? String == SHA256Digest.hex(Self.body))
  }

  @Test func aSmallFileIsOneStream() throws {
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .file(.version(1, length: 300_000)))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.server.stats(for: "/seg.bin").rangeRequests == 0)
    #expect(try fixture.tasks()["seg.bin"]?["sources"] == nil)
  }

  @Test(arguments: [RangeFault.shiftedLabel(shift: 1000), .wrongTotal(total: 5 << 20)])
  func aRangeAnsweredWithOtherBytesIsNeverPlaced(fault: RangeFault) throws {
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .file(Self.capped(fault: fault)))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("seg.bin", Self.body))
  }

  @Test func aShortSegmentIsContinuedNotPlacedAsComplete() throws {
    let fixture = try RunFixture()
    let upper = Self.length / 2 + 100_000
    fixture.server.route("/seg.bin", .file(Self.capped(fault: .shortRange(upper: upper))))
    fixture.manifest(Self.manifest(segments: 4))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("seg.bin", Self.body))
    let ranges = fixture.server.exchanges(for: "/seg.bin").compactMap(\.range)
    #expect(ranges.contains { $0.hasPrefix("bytes=\(upper + 1)-") }, "\(ranges)")
  }

  @Test func aServerThatAnswers200ToRangesServesOneStream() throws {
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .file(Self.capped(4_000_000, fault: .wholeBody)))
    fixture.manifest(Self.manifest())
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("seg.bin", Self.body))
    let whole = fixture.server.exchanges(for: "/seg.bin").filter { $0.status == 200 && $0.isComplete }
    #expect(whole.count == 1)
  }

  @Test func aCorruptedSegmentIsFetchedAgain() throws {
    let fixture = try RunFixture()
    var file = Self.capped()
    file.corruptions = [Corruption(bytes: 3_000_000...3_000_099, times: 1)]
    fixture.server.route("/seg.bin", .file(file))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 3, backoff: 10ms}
          network: {segments: 5, min_segment_size: 256KB, max_connections_per_host: 8}
          tasks:
            - download: BASE/seg.bin
              to: seg.bin
              sha256: \(SHA256Digest.hex(Self.body))
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("seg.bin", Self.body))
    #expect(fixture.server.exchanges(for: "/seg.bin").contains { $0.corrupted })
  }

  @Test func aKilledSegmentedDownloadResumesEverySegment() throws {
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .file(Self.capped(400_000)))
    fixture.manifest(Self.manifest())
    let status = try fixture.interrupt(signal: SIGKILL, after: 300_000)
    #expect(status != 0)
    #expect(!fixture.folder.exists("seg.bin"))
    fixture.server.route("/seg.bin", .file(.version(1, length: Self.length)))
    fixture.server.clearLog()
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let intact = fixture.holds("seg.bin", Self.body)
    #expect(intact)
    let exchanges = fixture.server.exchanges(for: "/seg.bin")
    #expect(!exchanges.isEmpty)
    #expect(exchanges.allSatisfy { $0.range != nil && $0.ifRange == "\"v1-\(Self.length)\"" }, "\(exchanges)")
    #expect(exchanges.map(\.bytesSent).reduce(0, +) < Self.length - 1_000_000, "the segments' bytes were kept")
    #expect(fixture.checkpointBytes() == 0)
  }

  /// A download of `seg.bin` in 5 segments with a secret header (batchdl follows redirects itself),
  /// and `mirrors`.
  static func secretManifest(mirrors: [String] = []) -> String {
    """
    version: 1
    sessions:
      s:
        retry: {attempts: 3, backoff: 10ms}
        network: {segments: 5, min_segment_size: 256KB, max_connections_per_host: 8}
        headers: {Authorization: Bearer s3cret}
        tasks:
          - download: BASE/seg.bin
            to: seg.bin
            mirrors: [\(mirrors.joined(separator: ", "))]
    """
  }

  @Test func aSegmentedDownloadBehindARedirectWithASecretResumesAfterAKill() throws {
    // Resumed segments asked the URL before the redirect, and did not follow: every run after the
    // kill failed with http-302.
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .redirect(status: 302, location: "/real/seg.bin"))
    fixture.server.route("/real/seg.bin", .file(Self.capped(400_000)))
    fixture.manifest(Self.secretManifest())
    let status = try fixture.interrupt(signal: SIGKILL, after: 300_000)
    #expect(status != 0)
    #expect(!fixture.folder.exists("seg.bin"))
    fixture.server.route("/real/seg.bin", .file(.version(1, length: Self.length)))
    fixture.server.clearLog()
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.holds("seg.bin", Self.body))
    let ranged = fixture.server.exchanges(for: "/real/seg.bin").filter { $0.range != nil }
    #expect(!ranged.isEmpty)
  }

  @Test func aMirrorThatRedirectsServesSegmentsWithASecret() throws {
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .file(Self.capped()))
    fixture.server.route("/m/seg.bin", .redirect(status: 302, location: "/m/real/seg.bin"))
    fixture.server.route("/m/real/seg.bin", .file(Self.capped()))
    fixture.manifest(Self.secretManifest(mirrors: ["BASE/m/seg.bin"]))
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.holds("seg.bin", Self.body))
    let mirrored = fixture.server.exchanges(for: "/m/real/seg.bin").filter { $0.status == 206 }
    #expect(!mirrored.isEmpty, "the mirror's pieces go where it redirects")
  }

  @Test(arguments: [400, 401, 403])
  func aMirrorThatRefusesRangesIsSetAsideWhileTheFirstSourceServes(status: Int) throws {
    // A mirror answering 4xx to a range failed the whole task while the first source was healthy.
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .file(Self.capped()))
    fixture.server.route("/m/seg.bin", .status(status))
    fixture.manifest(Self.secretManifest(mirrors: ["BASE/m/seg.bin"]))
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.holds("seg.bin", Self.body))
    #expect(!fixture.server.requests(for: "/m/seg.bin").isEmpty, "the mirror was asked")
  }

  /// The file is replaced on the server while its segments are being fetched, without a digest to
  /// tell: whether the server answers the old `If-Range` with its new whole file (as it should) or
  /// with a `206` of the new version (ignoring `If-Range`), what is placed is one version whole,
  /// never bytes of both.
  @Test(arguments: [false, true])
  func aFileReplacedDuringItsSegmentsIsNeverSpliced(serverIgnoresIfRange: Bool) throws {
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .file(Self.capped(1_000_000)))
    fixture.manifest(Self.manifest(segments: 4))
    let process = try fixture.start(["--report", "report.json"])
    // Once ranges are under way (and before the file is done: 4 MiB at 1 MB/s per connection).
    let deadline = Date().addingTimeInterval(30)
    func ranged() -> Int {
      fixture.server.exchanges(for: "/seg.bin").filter { $0.range != nil && $0.bytesSent > 0 }.count
    }
    while Date() < deadline && ranged() < 2 { usleep(10_000) }
    #expect(ranged() >= 2 && !fixture.folder.exists("seg.bin"), "the file was replaced while ranges were under way")
    var replaced = FileResource.version(2, length: Self.length, rateLimit: 4_000_000)
    replaced.ignoreIfRange = serverIgnoresIfRange
    fixture.server.route("/seg.bin", .file(replaced))
    process.waitUntilExit()
    let placed = fixture.bytes("seg.bin")
    let two = FileResource.versionBytes(2, length: Self.length)
    if process.terminationStatus == 0 {
      #expect(placed == two || placed == Self.body, "a spliced file was placed")
    } else {
      #expect(placed == nil)
    }
  }
}
