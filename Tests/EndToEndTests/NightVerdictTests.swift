import Foundation
import TestServer
import TestSupport
import Testing

/// What a night means, decided once (DESIGN.md, 2026-11-28): a run whose documents upstream did not
/// give fresh is not a success, for the exit code, the report, the metrics and prune alike; and
/// what a mirror publishes (a checksum file, an index page) is decided over the whole manifest.
@Suite(.serialized) struct NightVerdictTests {
  static func listing(_ links: [String]) -> Behavior { HostileReviewTests.listing(links) }

  static func report(_ fixture: RunFixture) throws -> [String: Any] {
    try JSONSerialization.jsonObject(with: Data((fixture.folder.read("report.json") ?? "").utf8)) as? [String: Any]
      ?? [:]
  }

  static func metric(_ fixture: RunFixture, _ name: String) -> String? {
    let lines = (fixture.folder.read("metrics.prom") ?? "").split(separator: "\n")
    return lines.first { $0.hasPrefix(name) }.map { String($0.split(separator: " ").last ?? "") }
  }

  /// A mirror of a listing with prune, run once well; then the listing answers 500 (`stop`: the
  /// server refuses every connection instead).
  func staleNight(stop: Bool) throws {
    let fixture = try RunFixture()
    fixture.server.route("/pub/", Self.listing(["a.bin", "b.bin", "SHA256SUMS"]))
    fixture.server.route("/pub/a.bin", .text("alpha\n"))
    fixture.server.route("/pub/b.bin", .text("bravo\n"))
    let sums = "\(SHA256Digest.hex(Array("alpha\n".utf8)))  a.bin\n\(SHA256Digest.hex(Array("bravo\n".utf8)))  b.bin\n"
    fixture.server.route("/pub/SHA256SUMS", .text(sums))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: m
          retry: {attempts: 1}
          prune: {max_delete: 100%}
          tasks:
            - index: BASE/pub/
              checksums: BASE/pub/SHA256SUMS
      """)
    let first = try fixture.run(["--metrics", "metrics.prom"])
    #expect(first.status == 0, "\(first.stderr)")
    #expect(Self.metric(fixture, "batchdl_exit_code") == "0")
    let succeeded = try #require(Self.metric(fixture, "batchdl_last_success_timestamp_seconds"))
    sleep(1)
    if stop {
      fixture.server.stop()
    } else {
      fixture.server.route("/pub/", .fixed(Response(status: 500)))
      fixture.server.route("/pub/SHA256SUMS", .fixed(Response(status: 500)))
    }
    let night = try fixture.run(["--metrics", "metrics.prom"])
    #expect(night.status == 1, "a night upstream could not be read is no success: \(night.stderr)")
    let report = try Self.report(fixture)
    let descriptors = report["descriptors"] as? [[String: Any]] ?? []
    let listing = descriptors.first { ($0["url"] as? String)?.hasSuffix("/pub/") == true }
    #expect(listing?["outcome"] as? String == "failed", "\(descriptors)")
    let tasks = try fixture.tasks()
    // The stored copies still plan the files: they stay as they were.
    #expect(tasks["m/a.bin"]?["outcome"] as? String == "unchanged", "\(tasks)")
    #expect(tasks["m/b.bin"]?["outcome"] as? String == "unchanged", "\(tasks)")
    let failed = tasks.values.filter { $0["outcome"] as? String == "failed" }
    #expect(failed.contains { HostileReviewTests.code($0) == "descriptor" }, "\(tasks)")
    #expect(fixture.folder.read("m/a.bin") == "alpha\n")
    let prune = (report["prune"] as? [[String: Any]])?.first
    #expect(prune?["outcome"] as? String == "skipped", "\(report)")
    #expect(Self.metric(fixture, "batchdl_exit_code") == "1")
    #expect(Self.metric(fixture, "batchdl_last_success_timestamp_seconds") == succeeded)
  }

  @Test func aListingAnswering500FailsTheNightThoughItsStoredCopyPlansTheFiles() throws {
    try staleNight(stop: false)
  }

  @Test func upstreamRefusingEveryConnectionIsNotASuccess() throws {
    try staleNight(stop: true)
  }

  /// `a.txt`, `b.txt` and the `SHA256SUMS` that covers them, in one session: upstream's new
  /// `SHA256SUMS` has a `b.txt` entry the served bytes do not match. `b.txt` fails, and the new
  /// `SHA256SUMS` is not published over it: the old copy stays.
  @Test func aChecksumFileIsNeverPublishedOverAFileThatFailed() throws {
    let fixture = try RunFixture()
    let old = "\(SHA256Digest.hex(Array("alpha\n".utf8)))  a.txt\n\(SHA256Digest.hex(Array("bravo\n".utf8)))  b.txt\n"
    let new = "\(SHA256Digest.hex(Array("alpha\n".utf8)))  a.txt\n\(String(repeating: "0", count: 64))  b.txt\n"
    fixture.server.route("/pub/", Self.listing(["a.txt", "b.txt", "SHA256SUMS"]))
    fixture.server.route("/pub/a.txt", .text("alpha\n"))
    fixture.server.route("/pub/b.txt", .text("bravo\n"))
    fixture.server.route("/pub/SHA256SUMS", .text(old))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: m
          retry: {attempts: 1}
          tasks:
            - index: BASE/pub/
              checksums: BASE/pub/SHA256SUMS
      """)
    let first = try fixture.run()
    #expect(first.status == 0, "\(first.stderr)")
    #expect(fixture.folder.read("m/SHA256SUMS") == old)
    fixture.server.route("/pub/SHA256SUMS", .text(new))
    let second = try fixture.run()
    #expect(second.status == 1, "\(second.stderr)")
    let tasks = try fixture.tasks()
    #expect(HostileReviewTests.code(tasks["m/b.txt"]) == "checksum-mismatch", "\(tasks)")
    #expect(fixture.folder.read("m/b.txt") == "bravo\n")
    #expect(fixture.folder.read("m/SHA256SUMS") == old, "a checksum file its files do not match was published")
  }

  /// A `SHA256SUMS` that session `files` checks with and session `meta` mirrors into the same
  /// `dest`: placed after the files it covers, with the bytes they were checked with.
  @Test func publishOrderAndPinsHoldAcrossSessions() throws {
    let fixture = try RunFixture()
    let checked =
      "\(SHA256Digest.hex(Array("alpha\n".utf8)))  a.txt\n\(SHA256Digest.hex(Array("bravo\n".utf8)))  b.txt\n"
    let replaced = checked + "\(String(repeating: "1", count: 64))  c.txt\n"
    fixture.server.route("/pub/a.txt", .text("alpha\n"))
    fixture.server.route(
      "/pub/b.txt",
      .file(FileResource(body: Array("bravo\n".utf8), trickle: Trickle(chunkBytes: 2, interval: 0.1))))
    fixture.server.route(
      "/pub/SHA256SUMS",
      .sequence([Response(status: 200, body: Array(checked.utf8)), Response(status: 200, body: Array(replaced.utf8))]))
    fixture.manifest(
      """
      version: 1
      sessions:
        files:
          dest: m
          retry: {attempts: 1}
          checksums: BASE/pub/SHA256SUMS
          tasks:
            - download: BASE/pub/a.txt
            - download: BASE/pub/b.txt
        meta:
          dest: m
          retry: {attempts: 1}
          tasks:
            - download: BASE/pub/SHA256SUMS
      """)
    let outcome = try fixture.run()
    #expect(fixture.folder.read("m/b.txt") == "bravo\n", "\(outcome.stderr)")
    #expect(fixture.folder.read("m/SHA256SUMS") != replaced, "bytes nothing was checked with were published")
    let paths = fixture.server.requests.map(\.path)
    let sums = paths.lastIndex(of: "/pub/SHA256SUMS") ?? -1
    #expect(sums > (paths.firstIndex(of: "/pub/b.txt") ?? .max), "placed before a file it covers: \(paths)")
  }

  /// A mirrored index page is the page that was crawled: one that gained `new.bin` after the crawl
  /// is never placed.
  @Test func aMirroredIndexPageIsThePageThatWasCrawled() throws {
    let fixture = try RunFixture()
    let crawled = HostileReviewTests.page(["a.bin"])
    let later = HostileReviewTests.page(["a.bin", "new.bin"])
    fixture.server.route(
      "/pub/",
      .sequence([
        Response(status: 200, headers: ["Content-Type": "text/html"], body: Array(crawled.utf8)),
        Response(status: 200, headers: ["Content-Type": "text/html"], body: Array(later.utf8)),
      ]))
    fixture.server.route("/pub/a.bin", .text("alpha\n"))
    fixture.server.route("/pub/new.bin", .text("new\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: m
          retry: {attempts: 1}
          tasks:
            - index: BASE/pub/
            - download: BASE/pub/
              to: index.html
      """)
    let outcome = try fixture.run()
    #expect(fixture.folder.read("m/a.bin") == "alpha\n", "\(outcome.stderr)")
    #expect(fixture.folder.read("m/index.html") != later, "a page listing a file the mirror lacks was placed")
  }
}

/// Background sessions: the worker decides its night as a run does, and `wait` says why it failed.
@Suite(.serialized) struct BackgroundVerdictTests {
  func wait(_ fixture: RunFixture) throws -> BinaryRunner.Outcome {
    try BinaryRunner.run(["wait", "manifest.yaml", "--timeout", "60"], in: fixture.folder.path)
  }

  /// A background session fed by an `index:` prunes when its listing was fresh; when the listing
  /// answers 500, its worker fails and `wait` exits 1 saying why.
  @Test func aBackgroundIndexPrunesWhenFreshAndAFailedListingReachesWait() throws {
    let fixture = try RunFixture()
    fixture.server.route("/pub/", NightVerdictTests.listing(["a.bin", "b.bin"]))
    fixture.server.route("/pub/a.bin", .text("alpha\n"))
    fixture.server.route("/pub/b.bin", .text("bravo\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        bg:
          kind: background
          identifier: org.example.bg
          dest: m
          retry: {attempts: 1}
          prune: {max_delete: 100%}
          tasks:
            - index: BASE/pub/
      """)
    #expect(try fixture.run().status == 0)
    var waited = try wait(fixture)
    #expect(waited.status == 0, "\(waited.stderr)")
    #expect(fixture.folder.read("m/b.bin") == "bravo\n")

    fixture.server.route("/pub/", NightVerdictTests.listing(["a.bin"]))
    #expect(try fixture.run().status == 0)
    waited = try wait(fixture)
    #expect(waited.status == 0, "\(waited.stderr)")
    #expect(!fixture.folder.exists("m/b.bin"), "the worker never pruned")
    #expect(fixture.folder.read("m/a.bin") == "alpha\n")

    fixture.server.route("/pub/", .fixed(Response(status: 500)))
    #expect(try fixture.run().status == 0)
    waited = try wait(fixture)
    #expect(waited.status == 1, "\(waited.stderr)")
    #expect(waited.stderr.contains("/pub/"), "wait must say why: \(waited.stderr)")
    #expect(fixture.folder.read("m/a.bin") == "alpha\n")
  }

  /// A background session's `on_finished` that fails: `wait` exits 1 and says why on stderr.
  @Test func aFailedOnFinishedOfABackgroundSessionIsExplainedByWait() throws {
    let fixture = try RunFixture()
    fixture.server.route("/f", .text("f\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        bg:
          kind: background
          identifier: org.example.bg
          on_finished: 'exit 7'
          tasks:
            - download: BASE/f
      """)
    #expect(try fixture.run().status == 0)
    let waited = try wait(fixture)
    #expect(waited.status == 1, "\(waited.stderr)")
    #expect(waited.stderr.contains("on_finished"), "wait must say why: \(waited.stderr)")
    #expect(waited.stderr.contains("7"), "\(waited.stderr)")
  }
}

/// `report diff` of a run a signal interrupted: its `cancelled` tasks did not run, a `not-run`
/// regression (MANIFEST.md, Reports).
@Suite(.serialized) struct InterruptedDiffTests {
  @Test func cancelledTasksAreANotRunRegression() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 600_000, seed: 36)
    fixture.server.route("/big.bin", trickling(body, etag: "b1"))
    fixture.server.route("/a.bin", .text("alpha\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/a.bin
            - download: BASE/big.bin
      """)
    let first = try fixture.run()
    #expect(first.status == 0, "\(first.stderr)")
    try FileManager.default.moveItem(
      atPath: fixture.folder.path + "/report.json", toPath: fixture.folder.path + "/old.json")
    // The next night starts over in another state folder, and a signal stops it mid-download.
    let process = try fixture.start(["--report", "report.json", "--state", "night2"])
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline && !fixture.folder.exists("big.bin.batchdl-part") { usleep(20_000) }
    usleep(200_000)
    kill(process.processIdentifier, SIGTERM)
    process.waitUntilExit()
    #expect(process.terminationStatus == 3)
    let tasks = try fixture.tasks()
    #expect(tasks["big.bin"]?["outcome"] as? String == "cancelled", "\(tasks)")
    let diff = try BinaryRunner.run(["report", "diff", "old.json", "report.json"], in: fixture.folder.path)
    #expect(diff.status == 1, "an interrupted night is a regression: \(diff.stdout)")
    #expect(diff.stdout.contains("big.bin") && diff.stdout.contains("not-run"), "\(diff.stdout)")
  }
}

/// A covered file `after:` its own mirrored checksum file: `validate`, `plan` and `run` all refuse
/// it, at the `after:` reference, naming publish order.
@Suite(.serialized) struct PublishCycleTests {
  @Test func validatePlanAndRunReportTheCycleWithPublishOrder() throws {
    let fixture = try RunFixture()
    let sums = "\(SHA256Digest.hex(Array("alpha\n".utf8)))  a.txt\n"
    fixture.server.route("/pub/a.txt", .text("alpha\n"))
    fixture.server.route("/pub/SHA256SUMS", .text(sums))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: m
          checksums: BASE/pub/SHA256SUMS
          tasks:
            - download: BASE/pub/a.txt
              after: [m/SHA256SUMS]
            - download: BASE/pub/SHA256SUMS
      """)
    for command in [["validate", "manifest.yaml"], ["plan", "manifest.yaml"], ["run", "manifest.yaml"]] {
      let outcome = try BinaryRunner.run(command, in: fixture.folder.path)
      #expect(outcome.status == 2, "\(command): \(outcome.stdout)\(outcome.stderr)")
      #expect(outcome.stderr.contains("manifest.yaml:8:"), "\(command): \(outcome.stderr)")
      #expect(outcome.stderr.contains("publish order"), "\(command): \(outcome.stderr)")
    }
  }
}

/// The state folder's disk fills up mid-run: the run cannot record what it did, so it exits 5
/// (the state folder cannot be used), not 1 with warnings.
@Suite(.serialized) struct FullStateDiskTests {
  @Test(.enabled(if: SmallFilesystem.permitted, "mounting a tmpfs is not permitted here (needs root)"))
  func aStateDiskThatFillsMidRunExits5() throws {
    let fixture = try RunFixture()
    let small = try #require(SmallFilesystem(mebibytes: 2, at: fixture.folder.path + "/small"))
    let body = TestData.pseudoRandomBytes(count: 300_000, seed: 16)
    fixture.server.route("/a.txt", .text("alpha\n"))
    fixture.server.route("/big.bin", trickling(body, etag: "b1"))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/a.txt
            - download: BASE/big.bin
      """)
    let process = try fixture.start(["--state", small.path + "/state", "--report", "report.json"])
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline && !fixture.folder.exists("a.txt") { usleep(20_000) }
    // Fill the state folder's disk to the last byte while big.bin still comes.
    let filler = open(small.path + "/filler", O_WRONLY | O_CREAT, 0o600)
    let block = [UInt8](repeating: 0x55, count: 64 << 10)
    var written = 0
    while written < 8 << 20 {
      let count = block.withUnsafeBytes { write(filler, $0.baseAddress, $0.count) }
      if count <= 0 { break }
      written += count
    }
    let small1 = [UInt8](repeating: 0x55, count: 1)
    while small1.withUnsafeBytes({ write(filler, $0.baseAddress, 1) }) == 1 {}
    close(filler)
    process.waitUntilExit()
    #expect(process.terminationStatus == 5, "a run that cannot record its results must exit 5")
    #expect(fixture.holds("big.bin", body))
  }
}
