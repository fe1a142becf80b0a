import Foundation
import TestServer
import TestSupport
import Testing

/// Failover across a download's URL and its mirrors, against servers that fail the ways mirrors
/// do: a port that refuses, a 503, a 404, a lying body, another version of the file.
@Suite(.serialized) struct MirrorFailoverTests {
  static let length = 300_000

  /// Runs a download of `path` from `first` (the fixture's server) with `second` (a server of its
  /// own) as its mirror, with one attempt each; returns the fixture and the mirror, after the run.
  func runWithMirror(
    _ path: String, first: FileResource, second: FileResource, sha256: String? = nil
  ) throws -> (fixture: RunFixture, mirror: TestHTTPServer, outcome: BinaryRunner.Outcome) {
    let fixture = try RunFixture()
    let mirror = try TestHTTPServer()
    fixture.server.route(path, .file(first))
    mirror.route(path, .file(second))
    let name = String(path.dropFirst())
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          tasks:
            - download: BASE\(path)
              to: \(name)
              mirrors: [\(mirror.url(path))]
      \(sha256.map { "        sha256: \($0)" } ?? "")
      """)
    let outcome = try fixture.run()
    mirror.stop()
    return (fixture, mirror, outcome)
  }

  /// Version `number`, cut off half way.
  static func brokenOff(_ number: Int) -> FileResource {
    var file = FileResource.version(number, length: length)
    file.dropAfter = length / 2
    return file
  }

  @Test func aDownloadGoesOnFromTheNextSourceUntilOneServesIt() throws {
    let fixture = try RunFixture()
    let refused = try RefusedPort()
    let busy = try TestHTTPServer()
    defer { busy.stop() }
    busy.route("/f.bin", .status(503))
    fixture.server.route("/f.bin", .file(.version(1, length: Self.length)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 2, backoff: 10ms}
          tasks:
            - download: \(refused.url("/f.bin"))
              to: f.bin
              mirrors: [\(busy.url("/f.bin")), BASE/f.bin]
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("f.bin", FileResource.versionBytes(1, length: Self.length)))
    let task = try #require(try fixture.tasks()["f.bin"])
    #expect(task["outcome"] as? String == "completed")
    let sources = try #require(task["sources"] as? [[String: Any]])
    #expect(sources.count == 3)
    #expect(sources.first { ($0["url"] as? String) == fixture.server.url("/f.bin") }?["bytes"] as? Int == Self.length)
    let failed = fixture.events().filter { $0["event"] as? String == "source_failed" }
    #expect(failed.map { $0["url"] as? String } == [refused.url("/f.bin"), busy.url("/f.bin")])
    #expect(busy.stats(for: "/f.bin").requests == 1, "with a source left, a 503 moves on at once")
  }

  @Test func theLastSourceLeftGetsTheRetries() throws {
    let fixture = try RunFixture()
    let refused = try RefusedPort()
    fixture.server.route("/busy.bin", .status(503))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 3, backoff: 10ms}
          tasks:
            - download: \(refused.url("/busy.bin"))
              to: busy.bin
              mirrors: [BASE/busy.bin]
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1)
    #expect(fixture.server.stats(for: "/busy.bin").requests == 3)
    let error = try #require(try fixture.tasks()["busy.bin"]?["error"] as? [String: Any])
    #expect(error["code"] as? String == "all-sources-failed")
  }

  @Test func aSourceWhoseNameDoesNotResolveHandsOverToTheNext() throws {
    // A failed name lookup used to leave libcurl's receive buffer on the handle, which the
    // session's next transfer reused and could not set up ("libcurl refused option 98").
    let fixture = try RunFixture()
    let body = FileResource.versionBytes(2, length: 10_000)
    fixture.server.route("/f.bin", .file(FileResource(body: body, etag: .strong("f2"))))
    fixture.server.route("/g.bin", .file(FileResource(body: body, etag: .strong("g2"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          network: {max_concurrent: 1}
          tasks:
            - download: http://mirror.batchdl-test.invalid/f.bin
              to: f.bin
              mirrors: [BASE/f.bin]
            - download: BASE/g.bin
              to: g.bin
              after: [f.bin]
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
    #expect(fixture.holds("f.bin", body))
    #expect(fixture.holds("g.bin", body))
    let failed = fixture.events().filter { $0["event"] as? String == "source_failed" }
    #expect((failed.first?["error"] as? [String: Any])?["code"] as? String == "dns")
  }

  @Test func aDownloadWhoseEverySourceFailsListsEachError() throws {
    let fixture = try RunFixture()
    let refused = try RefusedPort()
    fixture.server.route("/gone.bin", .status(404))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          tasks:
            - download: BASE/gone.bin
              to: gone.bin
              mirrors: [\(refused.url("/gone.bin"))]
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1)
    #expect(!fixture.files().contains("gone.bin"))
    let task = try #require(try fixture.tasks()["gone.bin"])
    let error = try #require(task["error"] as? [String: Any])
    #expect(error["code"] as? String == "all-sources-failed")
    let sources = try #require(error["sources"] as? [[String: Any]])
    #expect(sources.map { $0["code"] as? String } == ["http-404", "connect"])
    #expect(sources.map { $0["url"] as? String } == [fixture.server.url("/gone.bin"), refused.url("/gone.bin")])
  }

  @Test func bytesOfAnotherVersionAreNeverJoined() throws {
    // The first source has version 1 and breaks off half way; the mirror has version 2 of the same
    // length. The mirror answers If-Range with its whole file: the result is version 2 alone.
    let (fixture, mirror, outcome) = try runWithMirror(
      "/v.bin", first: Self.brokenOff(1), second: .version(2, length: Self.length))
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("v.bin", FileResource.versionBytes(2, length: Self.length)))
    let asked = mirror.exchanges(for: "/v.bin")
    #expect(asked.first?.ifRange == "\"v1-\(Self.length)\"", "the kept bytes were offered under their ETag")
    #expect(asked.first?.status == 200)
  }

  @Test func aMirrorThatIgnoresIfRangeGetsNoBytesJoined() throws {
    // The mirror has version 2 and answers the If-Range of version 1 with a 206 of its own bytes.
    var second = FileResource.version(2, length: Self.length)
    second.ignoreIfRange = true
    let (fixture, mirror, outcome) = try runWithMirror("/i.bin", first: Self.brokenOff(1), second: second)
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("i.bin", FileResource.versionBytes(2, length: Self.length)), "version 2 alone")
    let asked = mirror.exchanges(for: "/i.bin")
    #expect(asked.first?.status == 206, "the mirror broke the rule")
    #expect(asked.last?.range == nil && asked.last?.status == 200, "and was asked for the whole file")
  }

  @Test func bytesKeptUnderADateAloneStartOverAtTheNextSource() throws {
    // Without a strong ETag nothing tells two versions apart: the mirror is asked for the whole file.
    let date = Date(timeIntervalSince1970: 1_700_000_000)
    let (fixture, mirror, outcome) = try runWithMirror(
      "/m.bin",
      first: FileResource(
        body: FileResource.versionBytes(1, length: Self.length), lastModified: date, dropAfter: Self.length / 2),
      second: FileResource(body: FileResource.versionBytes(2, length: Self.length), lastModified: date))
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m.bin", FileResource.versionBytes(2, length: Self.length)))
    #expect(mirror.exchanges(for: "/m.bin").first?.range == nil)
  }

  @Test func bytesOfTheSameVersionAreJoinedUnderItsStrongETag() throws {
    let (fixture, mirror, outcome) = try runWithMirror(
      "/same.bin", first: Self.brokenOff(1), second: .version(1, length: Self.length))
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("same.bin", FileResource.versionBytes(1, length: Self.length)))
    #expect(mirror.exchanges(for: "/same.bin").first?.status == 206)
    let task = try #require(try fixture.tasks()["same.bin"])
    let sources = try #require(task["sources"] as? [[String: Any]])
    let bytes = sources.compactMap { $0["bytes"] as? Int }
    #expect(bytes.count == 2 && bytes.allSatisfy { $0 > 0 } && bytes.reduce(0, +) == Self.length)
  }

  @Test func aJoinedFileThatFailsItsDigestIsFetchedAgainWholeBeforeTheSourceIsBlamed() throws {
    // The first source breaks off half way; the mirror has the same ETag but lies about bytes past
    // the cut on its first answer only. The joined file fails the digest: the mirror is asked once
    // more, for the whole file, and that answer is right.
    let good = FileResource.versionBytes(1, length: Self.length)
    var lying = FileResource.version(1, length: Self.length)
    lying.corruptions = [Corruption(bytes: 200_000...200_999, times: 1)]
    let (fixture, mirror, outcome) = try runWithMirror(
      "/j.bin", first: Self.brokenOff(1), second: lying, sha256: SHA256Digest.hex(good))
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("j.bin", good))
    let answers = mirror.exchanges(for: "/j.bin")
    #expect(answers.map(\.status) == [206, 200], "the joined file is fetched again whole")
    #expect(answers.last?.range == nil)
  }

  @Test func aSourceWhoseBytesFailTheDigestIsSetAside() throws {
    let good = FileResource.versionBytes(1, length: Self.length)
    var lying = FileResource.version(1, length: Self.length)
    lying.corruptions = [Corruption(bytes: 1000...1999)]
    let (fixture, _, outcome) = try runWithMirror(
      "/d.bin", first: lying, second: .version(1, length: Self.length),
      sha256: SHA256Digest.hex(good))
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("d.bin", good))
    let failed = fixture.events().filter { $0["event"] as? String == "source_failed" }
    #expect((failed.first?["error"] as? [String: Any])?["code"] as? String == "checksum-mismatch")
  }
}
