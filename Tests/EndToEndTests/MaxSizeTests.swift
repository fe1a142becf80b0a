import Crypto
import Foundation
import TestServer
import TestSupport
import Testing

/// `max_size`: a response longer than the limit, declared or as it streams, fails its task with
/// `too-large` on every path (one stream, resumed, segments, mirrors, Metalink files), and leaves
/// nothing behind: no file at `to`, no partial file, no checkpoint a later run would continue.
@Suite(.serialized) struct MaxSizeTests {
  static let length = 100_000

  /// One download of `BASE/big.bin` with `max_size: LIMIT`, two attempts.
  static func manifest(_ limit: String, session: String = "", task: String = "") -> String {
    """
    version: 1
    sessions:
      main:
        retry: {attempts: 2, backoff: 50ms}
    \(session)
        tasks:
          - download: BASE/big.bin
            max_size: \(limit)
    \(task)
    """
  }

  /// The run failed, the task says `too-large`, and nothing of the file is left.
  func expectNothingLeft(
    _ fixture: RunFixture, _ outcome: BinaryRunner.Outcome, id: String = "big.bin", name: String = "big.bin",
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)", sourceLocation: sourceLocation)
    let tasks = try fixture.tasks()
    let task = try #require(tasks[id], "\(tasks.keys.sorted())", sourceLocation: sourceLocation)
    #expect(task["outcome"] as? String == "failed", sourceLocation: sourceLocation)
    let error = task["error"] as? [String: Any]
    #expect(error?["code"] as? String == "too-large", "\(String(describing: error))", sourceLocation: sourceLocation)
    #expect((error?["message"] as? String)?.contains("max_size") == true, sourceLocation: sourceLocation)
    #expect(!fixture.folder.exists(name), sourceLocation: sourceLocation)
    #expect(!fixture.folder.exists(name + ".batchdl-part"), sourceLocation: sourceLocation)
    #expect(fixture.checkpointBytes() == 0, "no checkpoint to resume from", sourceLocation: sourceLocation)
    #expect(outcome.stderr.contains("too-large"), "\(outcome.stderr)", sourceLocation: sourceLocation)
  }

  // MARK: - Declared

  @Test func aDeclaredLengthPastMaxSizeFailsAtTheHeadOnce() throws {
    let fixture = try RunFixture()
    fixture.server.route("/big.bin", .file(.version(1, length: Self.length)))
    fixture.manifest(Self.manifest("99999"))
    let outcome = try fixture.run()
    try expectNothingLeft(fixture, outcome)
    // Not tried again: it is the file that is too large.
    #expect(fixture.server.requests(for: "/big.bin").count == 1)
    let message = try fixture.tasks()["big.bin"].flatMap { ($0["error"] as? [String: Any])?["message"] as? String }
    #expect(message?.contains("100000") == true, "\(message ?? "")")
  }

  @Test func aLengthOfExactlyMaxSizeIsPlaced() throws {
    let fixture = try RunFixture()
    fixture.server.route("/big.bin", .file(.version(1, length: Self.length)))
    fixture.manifest(Self.manifest("100000"))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
    #expect(fixture.holds("big.bin", FileResource.versionBytes(1, length: Self.length)))
  }

  @Test func theSessionsMaxSizeHoldsForItsTasksAndATaskMayRaiseIt() throws {
    let fixture = try RunFixture()
    fixture.server.route("/big.bin", .file(.version(1, length: Self.length)))
    fixture.server.route("/other.bin", .file(.version(2, length: Self.length)))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          max_size: 50KB
          tasks:
            - download: BASE/big.bin
            - download: BASE/other.bin
              max_size: 1MB
      """)
    let outcome = try fixture.run()
    try expectNothingLeft(fixture, outcome)
    #expect(fixture.holds("other.bin", FileResource.versionBytes(2, length: Self.length)))
  }

  // MARK: - As it streams

  @Test func aChunkedBodyThatStreamsPastMaxSizeIsStopped() throws {
    let fixture = try RunFixture()
    var file = FileResource.version(1, length: 2_000_000)
    file.chunked = true
    fixture.server.route("/big.bin", .file(file))
    fixture.manifest(Self.manifest("64KB"))
    let outcome = try fixture.run()
    try expectNothingLeft(fixture, outcome)
    #expect(fixture.server.requests(for: "/big.bin").count == 1)
  }

  @Test func aChunkedDataTaskPastMaxSizeIsStoppedBeforeBatchdlsOwnLimit() throws {
    let fixture = try RunFixture()
    var file = FileResource.version(1, length: 300_000)
    file.chunked = true
    fixture.server.route("/data.json", .file(file))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - data: BASE/data.json
              to: data.json
              max_size: 100KB
      """)
    let outcome = try fixture.run()
    try expectNothingLeft(fixture, outcome, id: "data.json", name: "data.json")
  }

  @Test func aServerThatSendsMoreThanItDeclaredNeverPlacesMoreThanMaxSize() throws {
    let fixture = try RunFixture()
    let body = FileResource.versionBytes(1, length: Self.length)
    // Declares 1,000 bytes (within max_size) and sends 100,000: only the declared bytes are the
    // response's, and they are all that can be placed.
    fixture.server.route(
      "/big.bin", .fixed(Response(status: 200, headers: ["Content-Length": "1000"], body: body)))
    fixture.manifest(Self.manifest("10KB"))
    _ = try fixture.run()
    let placed = fixture.bytes("big.bin")
    #expect(placed == nil || placed == Array(body[0..<1000]), "\(placed?.count ?? -1) bytes")
    #expect(!fixture.folder.exists("big.bin.batchdl-part"))
  }

  // MARK: - Resumed

  @Test func aResumedDownloadWhoseTotalPassesMaxSizeLeavesNothing() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 1_000_000, seed: 28)
    fixture.server.route("/big.bin", trickling(body, etag: "v1"))
    fixture.manifest(ResumeTests.manifest)
    _ = try fixture.interrupt(signal: SIGKILL)
    #expect(fixture.checkpointBytes() >= 200_000)
    #expect(fixture.folder.exists("big.bin.batchdl-part"))
    // The manifest now says 900 KB at most: the continued file is 1,000,000 bytes.
    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.server.clearLog()
    fixture.manifest(Self.manifest("900KB"))
    let outcome = try fixture.run()
    let ranges = fixture.server.requests(for: "/big.bin").map(rangeOffset)
    #expect(ranges.count == 1 && ranges.first.flatMap { $0 } != nil, "it was a resume: \(ranges)")
    try expectNothingLeft(fixture, outcome)
    // The next run starts over, from byte 0, and fails at the head again.
    fixture.server.clearLog()
    let again = try fixture.run()
    #expect(again.status == 1)
    #expect(fixture.server.requests(for: "/big.bin").map(rangeOffset) == [nil])
  }

  @Test func aResumedSegmentedDownloadWhoseTotalPassesMaxSizeLeavesNothing() throws {
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .file(SegmentTests.capped(400_000)))
    fixture.manifest(SegmentTests.manifest())
    let status = try fixture.interrupt(signal: SIGKILL, after: 300_000)
    #expect(status != 0)
    #expect(fixture.folder.exists("seg.bin.batchdl-part"))
    fixture.server.route("/seg.bin", .file(.version(1, length: SegmentTests.length)))
    fixture.server.clearLog()
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
              max_size: 3MB
      """)
    let outcome = try fixture.run()
    #expect(fixture.server.requests(for: "/seg.bin").allSatisfy { $0.header("range") != nil })
    try expectNothingLeft(fixture, outcome, id: "seg.bin", name: "seg.bin")
  }

  @Test func aSegmentedDownloadPastMaxSizeFailsBeforeAnySegment() throws {
    let fixture = try RunFixture()
    fixture.server.route("/seg.bin", .file(SegmentTests.capped()))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          max_size: 1MB
          network: {segments: 5, min_segment_size: 256KB, max_connections_per_host: 8}
          tasks:
            - download: BASE/seg.bin
              to: seg.bin
      """)
    let outcome = try fixture.run()
    try expectNothingLeft(fixture, outcome, id: "seg.bin", name: "seg.bin")
    #expect(fixture.server.requests(for: "/seg.bin").count == 1)
    #expect(!fixture.events().contains { $0["event"] as? String == "segment" })
  }

  // MARK: - Mirrors and Metalink

  @Test func aFilePastMaxSizeAtAMirrorFailsTooLargeAndTheNextMirrorIsNotAsked() throws {
    let fixture = try RunFixture()
    fixture.server.route("/big.bin", .status(503))
    fixture.server.route("/m1/big.bin", .file(.version(1, length: Self.length)))
    fixture.server.route("/m2/big.bin", .file(.version(1, length: Self.length)))
    fixture.manifest(
      Self.manifest("50KB", task: "        mirrors: [BASE/m1/big.bin, BASE/m2/big.bin]"))
    let outcome = try fixture.run()
    try expectNothingLeft(fixture, outcome)
    #expect(fixture.server.requests(for: "/m1/big.bin").count == 1)
    #expect(fixture.server.requests(for: "/m2/big.bin").isEmpty)
  }

  @Test func aMetalinkFilePastTheEntrysMaxSizeLeavesNothingAndTheOthersArePlaced() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    fixture.server.route("/b.bin", .file(.version(2, length: 1000)))
    fixture.folder.write(
      "doc.meta4",
      MetalinkRunTests.document([
        ("a.bin", [fixture.server.url("/a.bin")], nil), ("b.bin", [fixture.server.url("/b.bin")], nil),
      ]))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: doc.meta4
              to: m/
              max_size: 10KB
      """)
    let outcome = try fixture.run()
    try expectNothingLeft(fixture, outcome, id: "m/a.bin", name: "m/a.bin")
    #expect(fixture.holds("m/b.bin", FileResource.versionBytes(2, length: 1000)))
  }

  @Test func aListEntrysMaxSizeHoldsForEachLine() throws {
    let fixture = try RunFixture()
    fixture.server.route("/big.bin", .file(.version(1, length: Self.length)))
    fixture.server.route("/small.bin", .file(.version(2, length: 1000)))
    fixture.folder.write("urls.txt", "\(fixture.server.url("/big.bin"))\n\(fixture.server.url("/small.bin"))\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - list: urls.txt
              max_size: 10KB
      """)
    let outcome = try fixture.run()
    try expectNothingLeft(fixture, outcome)
    #expect(fixture.holds("small.bin", FileResource.versionBytes(2, length: 1000)))
  }

  @Test func aMetalinkFileWhoseSizeIsPastMaxSizeIsLeftOutUnfetched() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    fixture.server.route("/b.bin", .file(.version(2, length: 1000)))
    fixture.folder.write(
      "doc.meta4",
      """
      <?xml version="1.0"?>
      <metalink xmlns="urn:ietf:params:xml:ns:metalink">
        <file name="a.bin"><size>\(Self.length)</size><url>\(fixture.server.url("/a.bin"))</url></file>
        <file name="b.bin"><size>1000</size><url>\(fixture.server.url("/b.bin"))</url></file>
      </metalink>
      """)
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          max_size: 10KB
          tasks:
            - metalink: doc.meta4
              to: m/
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    let tasks = try fixture.tasks()
    let error = try #require(tasks["doc.meta4#a.bin"]?["error"] as? [String: Any], "\(tasks.keys.sorted())")
    #expect(error["code"] as? String == "too-large")
    #expect((error["message"] as? String)?.contains("<size> 100000 is larger than max_size") == true, "\(error)")
    #expect(fixture.server.requests(for: "/a.bin").isEmpty, "nothing of it is fetched")
    #expect(!fixture.folder.exists("m/a.bin"))
    #expect(fixture.holds("m/b.bin", FileResource.versionBytes(2, length: 1000)))
  }

  @Test func aListLineWhoseSizeIsPastMaxSizeIsAManifestError() throws {
    let fixture = try RunFixture()
    fixture.folder.write("urls.txt", "\(fixture.server.url("/a.bin")) a.bin size:20000\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - list: urls.txt
              max_size: 10KB
      """)
    let outcome = try BinaryRunner.run(["validate", "manifest.yaml"], in: fixture.folder.path)
    #expect(outcome.status == 2)
    let column = fixture.server.url("/a.bin").count + 2
    #expect(
      outcome.stderr.contains("urls.txt:1:\(column): error: size:20000 is larger than max_size"), "\(outcome.stderr)")
  }

  /// An `index:` entry's max_size holds for each listed file; the listings themselves and the
  /// checksum file, read as descriptors, are not held to it. nginx lists sizes to the byte, so a
  /// file listed larger is left out before it is asked for, as one task `PAGE#PATH`.
  @Test func anIndexEntrysMaxSizeHoldsForEachListedFile() throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer(autoindex: [.init(location: "/release/", folder: "release")])
    defer { nginx.stop() }
    MirrorIndexTests.serve(MirrorIndexTests.tree, on: nginx)
    MirrorIndexTests.manifest(fixture, nginx, extra: "        max_size: 12")
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(fixture.holds("out/release/a.txt", Array("alpha\n".utf8)))
    #expect(fixture.holds("out/release/sub/b.txt", Array("bravo bravo\n".utf8)))
    try expectNothingLeft(
      fixture, outcome, id: nginx.url("/release/") + "#sub/deeper/c.txt", name: "out/release/sub/deeper/c.txt")
    #expect(nginx.requests(for: "/release/sub/deeper/c.txt").isEmpty)
  }

  /// Two tasks of one request: the transfer takes the larger limit, and the task with the smaller
  /// one fails alone.
  @Test func tasksSharingARequestAreEachHeldToTheirOwnMaxSize() throws {
    let fixture = try RunFixture()
    fixture.server.route("/big.bin", .file(.version(1, length: Self.length)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/big.bin
              to: small/big.bin
              max_size: 10KB
            - download: BASE/big.bin
              to: large/big.bin
              max_size: 1MB
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1)
    #expect(fixture.server.requests(for: "/big.bin").count == 1)
    let tasks = try fixture.tasks()
    #expect((tasks["small/big.bin"]?["error"] as? [String: Any])?["code"] as? String == "too-large")
    #expect(!fixture.folder.exists("small/big.bin"))
    #expect(fixture.holds("large/big.bin", FileResource.versionBytes(1, length: Self.length)))
  }

  /// A data task's body stored in the cache before `max_size` was lowered is held to it too.
  @Test func aCachedBodyPastMaxSizeIsNotServed() throws {
    let fixture = try RunFixture()
    fixture.server.route(
      "/releases.json", .fixed(.json(200, "{\"v\": 12345}", headers: ["Cache-Control": "max-age=600"])))
    func manifest(_ extra: String) {
      fixture.manifest(
        """
        version: 1
        sessions:
          api:
            tasks:
              - data: BASE/releases.json
                to: releases.json
        \(extra)
        """)
    }
    manifest("")
    #expect(try fixture.run().status == 0)
    try FileManager.default.removeItem(atPath: fixture.folder.path + "/releases.json")
    manifest("        max_size: 8")
    let outcome = try fixture.run()
    #expect(fixture.server.requests.count == 1, "served from the cache")
    try expectNothingLeft(fixture, outcome, id: "releases.json", name: "releases.json")
  }

  // MARK: - Validation

  @Test func aSizeLargerThanMaxSizeIsAManifestError() throws {
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          max_size: 1MB
          tasks:
            - download: BASE/a.bin
              size: 2MB
            - download: BASE/b.bin
              size: 2MB
              max_size: 3MB
            - download: BASE/c.bin
              max_size: 0
      """)
    let outcome = try BinaryRunner.run(["validate", "manifest.yaml"], in: fixture.folder.path)
    #expect(outcome.status == 2)
    #expect(
      outcome.stderr.contains("manifest.yaml:7:15: error: size 2097152 is larger than the session's max_size"),
      "\(outcome.stderr)")
    #expect(!outcome.stderr.contains("manifest.yaml:9:"), "the task's own max_size allows it: \(outcome.stderr)")
    #expect(
      outcome.stderr.contains("manifest.yaml:12:19: error: max_size must be at least 1 byte"), "\(outcome.stderr)")
    #expect(fixture.server.requests(for: "/a.bin").isEmpty)
  }
}

/// `sha512:` on data and download tasks, checked like `sha256:`.
@Suite struct SHA512RunTests {
  static let body = FileResource.versionBytes(1, length: 50_000)
  static let right = SHA512.hash(data: body).map { String(format: "%02x", $0) }.joined()

  static func manifest(_ sha512: String) -> String {
    """
    version: 1
    sessions:
      s:
        tasks:
          - download: BASE/f.bin
            sha512: \(sha512)
          - data: BASE/f.bin
            headers: {X-Data: "1"}
            to: data.bin
            sha512: \(sha512)
    """
  }

  @Test func theRightSHA512IsPlaced() throws {
    let fixture = try RunFixture()
    fixture.server.route("/f.bin", .file(.version(1, length: 50_000)))
    fixture.manifest(Self.manifest(Self.right.uppercased()))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
    #expect(fixture.holds("f.bin", Self.body))
    #expect(fixture.holds("data.bin", Self.body))
  }

  @Test func aWrongSHA512FailsChecksumMismatchAndPlacesNothing() throws {
    let fixture = try RunFixture()
    fixture.server.route("/f.bin", .file(.version(1, length: 50_000)))
    let wrong = String(repeating: "ab", count: 64)
    fixture.manifest(Self.manifest(wrong))
    let outcome = try fixture.run()
    #expect(outcome.status == 1)
    for id in ["f.bin", "data.bin"] {
      let error = try fixture.tasks()[id]?["error"] as? [String: Any]
      #expect(error?["code"] as? String == "checksum-mismatch", "\(id): \(String(describing: error))")
      let message = error?["message"] as? String ?? ""
      #expect(message.contains("sha-512 \(wrong)") && message.contains(Self.right), "\(message)")
      #expect(!fixture.folder.exists(id))
      #expect(!fixture.folder.exists(id + ".batchdl-part"))
    }
  }

  /// A finished download whose `sha512:` pin changes runs again (the state records SHA-256s only).
  @Test func aChangedSHA512PinRunsTheTaskAgain() throws {
    let fixture = try RunFixture()
    fixture.server.route("/f.bin", .file(.version(1, length: 50_000)))
    func manifest(_ sha512: String) {
      fixture.manifest(
        """
        version: 1
        sessions:
          s:
            tasks:
              - download: BASE/f.bin
                sha512: \(sha512)
        """)
    }
    manifest(Self.right)
    #expect(try fixture.run().status == 0)
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests(for: "/f.bin").count == 1, "unchanged: no request")
    manifest(String(repeating: "cd", count: 64))
    let outcome = try fixture.run()
    #expect(outcome.status == 1)
    #expect(fixture.server.requests(for: "/f.bin").count == 2)
    #expect((try fixture.tasks()["f.bin"]?["error"] as? [String: Any])?["code"] as? String == "checksum-mismatch")
  }

  /// The engine judges each source by the SHA-512 as it does by a SHA-256: a mirror whose bytes
  /// fail it is set aside, and the next one's are placed.
  @Test func aSourceWhoseBytesFailTheSHA512IsSetAside() throws {
    let fixture = try RunFixture()
    let mirror = try TestHTTPServer()
    defer { mirror.stop() }
    var lying = FileResource.version(1, length: 50_000)
    lying.corruptions = [Corruption(bytes: 1000...1999)]
    fixture.server.route("/f.bin", .file(lying))
    mirror.route("/f.bin", .file(.version(1, length: 50_000)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          tasks:
            - download: BASE/f.bin
              mirrors: [\(mirror.url("/f.bin"))]
              sha512: \(Self.right)
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("f.bin", Self.body))
    let failed = fixture.events().filter { $0["event"] as? String == "source_failed" }
    #expect((failed.first?["error"] as? [String: Any])?["code"] as? String == "checksum-mismatch", "\(failed)")
  }

  @Test func aBadSHA512IsAManifestErrorWithItsPlace() throws {
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/a.bin
              sha512: abc
            - download: BASE/b.bin
              sha512: \(String(repeating: "g", count: 128))
            - download: BASE/c.bin
              sha256: \(String(repeating: "a", count: 64))
              sha512: \(String(repeating: "a", count: 128))
            - upload: BASE/u
              body: x
              sha512: \(String(repeating: "a", count: 128))
      """)
    let outcome = try BinaryRunner.run(["validate", "manifest.yaml"], in: fixture.folder.path)
    #expect(outcome.status == 2)
    for expected in [
      "manifest.yaml:6:17: error: sha512 must be 128 hexadecimal digits, found 3 characters",
      "manifest.yaml:8:17: error: sha512 must be 128 hexadecimal digits (0-9, a-f), found 'g'",
      "manifest.yaml:11:17: error: give sha256: or sha512:, not both",
      "manifest.yaml:14:17: error: sha512 applies to the response of a data or download task",
    ] {
      #expect(outcome.stderr.contains(expected), "\(expected)\n\(outcome.stderr)")
    }
  }
}
