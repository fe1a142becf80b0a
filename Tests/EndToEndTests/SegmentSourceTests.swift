import BatchDL
import Foundation
import TestServer
import TestSupport
import Testing

/// Segments spread over a download's healthy sources, and only where bytes of two sources may
/// share a file: under the task's digest, or under the first source's strong ETag as `If-Range`.
@Suite(.serialized) struct SegmentSourceTests {
  static let length = 4 << 20
  static var body: [UInt8] { FileResource.versionBytes(1, length: length) }

  static func manifest(sha256: Bool) -> String {
    """
    version: 1
    sessions:
      s:
        retry: {attempts: 2, backoff: 10ms}
        network: {segments: 4, min_segment_size: 256KB, max_connections_per_host: 8}
        tasks:
          - download: BASE/a.bin
            mirrors: [BASE/b.bin]
            to: f.bin
    \(sha256 ? "        sha256: \(SHA256Digest.hex(body))" : "")
    """
  }

  static func capped(version: Int = 1) -> FileResource {
    .version(version, length: length, rateLimit: 3_000_000)
  }

  static func ranged(_ fixture: RunFixture, _ path: String) -> [Exchange] {
    fixture.server.exchanges(for: path).filter { $0.range != nil }
  }

  @Test func underADigestSegmentsComeFromEverySourceWithoutIfRange() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.capped()))
    fixture.server.route("/b.bin", .file(Self.capped()))
    fixture.manifest(Self.manifest(sha256: true))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("f.bin", Self.body))
    let mirror = Self.ranged(fixture, "/b.bin")
    #expect(!mirror.isEmpty)
    #expect(mirror.allSatisfy { $0.ifRange == nil && $0.status == 206 })
    #expect(Self.ranged(fixture, "/a.bin").allSatisfy { $0.ifRange == "\"v1-\(Self.length)\"" })
    let sources = try #require(try fixture.tasks()["f.bin"]?["sources"] as? [[String: Any]])
    #expect(sources.map { $0["url"] as? String } == [fixture.server.url("/a.bin"), fixture.server.url("/b.bin")])
    #expect(sources.allSatisfy { ($0["bytes"] as? Int ?? 0) > 0 }, "\(sources)")
    #expect((sources.compactMap { $0["bytes"] as? Int }.reduce(0, +)) >= Self.length, "every piece's bytes count")
    let urls = Set(fixture.events().filter { $0["event"] as? String == "segment" }.compactMap { $0["url"] as? String })
    #expect(urls == [fixture.server.url("/a.bin"), fixture.server.url("/b.bin")])
  }

  @Test func withoutADigestAMirrorIsAskedUnderTheFirstSourcesStrongETag() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.capped()))
    fixture.server.route("/b.bin", .file(Self.capped()))
    fixture.manifest(Self.manifest(sha256: false))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("f.bin", Self.body))
    let mirror = Self.ranged(fixture, "/b.bin")
    #expect(!mirror.isEmpty)
    #expect(mirror.allSatisfy { $0.ifRange == "\"v1-\(Self.length)\"" && $0.status == 206 })
  }

  /// The mirror has another version: it answers the `If-Range` ranges with its whole file, and
  /// serves no more segments; nothing of it reaches the file, and it is not blamed as failed.
  @Test func withoutADigestAMirrorWithAnotherVersionServesNoSegment() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.capped()))
    fixture.server.route("/b.bin", .file(Self.capped(version: 2)))
    fixture.manifest(Self.manifest(sha256: false))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("f.bin", Self.body))
    let mirror = Self.ranged(fixture, "/b.bin")
    // The ranges asked before its first answer came (two of the four connections) are all it got.
    #expect(!mirror.isEmpty && mirror.count <= 2 && mirror.allSatisfy { $0.status == 200 }, "\(mirror.map(\.status))")
    #expect(fixture.events().filter { $0["event"] as? String == "source_failed" }.isEmpty)
  }

  @Test func aMirrorThatFailsIsSetAsideAndTheOthersFinishItsSegments() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.capped()))
    fixture.server.route("/b.bin", .status(503))
    fixture.manifest(Self.manifest(sha256: true))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("f.bin", Self.body))
    let failed = fixture.events().filter { $0["event"] as? String == "source_failed" }
    #expect(failed.map { $0["url"] as? String } == [fixture.server.url("/b.bin")])
    #expect(fixture.server.exchanges(for: "/b.bin").count <= 2, "set aside after the ranges asked at first failed")
    let task = try #require(try fixture.tasks()["f.bin"])
    #expect(task["outcome"] as? String == "completed")
  }
}

extension SegmentSourceTests {
  /// A mirror asked for segments answers `200` with its whole file: nothing of it is kept, but it
  /// was asked, and the report's `sources` lists it (with 0 bytes) as it lists a mirror that
  /// answered `206`.
  @Test func aMirrorThatAnswersRangesWithTheWholeFileIsListedInSources() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.capped()))
    var whole = Self.capped()
    whole.rangeFault = .wholeBody
    fixture.server.route("/b.bin", .file(whole))
    fixture.manifest(Self.manifest(sha256: true))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("f.bin", Self.body))
    let mirror = Self.ranged(fixture, "/b.bin")
    #expect(!mirror.isEmpty && mirror.allSatisfy { $0.status == 200 }, "\(mirror.map(\.status))")
    let sources = try #require(try fixture.tasks()["f.bin"]?["sources"] as? [[String: Any]])
    #expect(sources.map { $0["url"] as? String } == [fixture.server.url("/a.bin"), fixture.server.url("/b.bin")])
    #expect((sources.first?["bytes"] as? Int ?? 0) >= Self.length, "\(sources)")
    #expect(sources.last?["bytes"] as? Int == 0, "nothing of its answer went into the file: \(sources)")
  }
}
