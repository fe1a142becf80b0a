import Foundation
import TestServer
import TestSupport
import Testing

/// `summary.requests` counts every request the run sent, as the server counts them (issue 38,
/// item 7): transfers a signal cut included, and a background worker's in its own report.
@Suite(.serialized) struct RequestCountTests {
  static func requests(inReport path: String) throws -> (requests: Int?, descriptors: Int?) {
    let data = try #require(FileManager.default.contents(atPath: path))
    let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let summary = object["summary"] as? [String: Any] ?? [:]
    return (summary["requests"] as? Int, summary["descriptor_requests"] as? Int)
  }

  @Test func aRunStoppedBySIGTERMCountsTheTransfersItCut() throws {
    let fixture = try RunFixture()
    fixture.server.route("/one.bin", trickling(TestData.pseudoRandomBytes(count: 3 << 20, seed: 386), etag: "o1"))
    fixture.server.route("/two.bin", trickling(TestData.pseudoRandomBytes(count: 3 << 20, seed: 387), etag: "t1"))
    fixture.server.route("/idx/small.txt", .file(Array("small\n".utf8), etag: .strong("s1")))
    fixture.server.route("/idx/", HostileReviewTests.listing(["small.txt"]))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          dest: pub
          retry: {attempts: 1}
          tasks:
            - index: BASE/idx/
            - download: BASE/one.bin
            - download: BASE/two.bin
      """)
    let status = try fixture.interrupt(signal: SIGTERM, after: 100_000, ["--report", "report.json"])
    #expect(status == 3)
    let sent = fixture.server.requests.count
    let (requests, descriptors) = try Self.requests(inReport: fixture.folder.path + "/report.json")
    // The listing, the small file, and the downloads the signal cut (both, unless the machine is
    // slow enough that the second had not started).
    let cut = fixture.server.requests(for: "/one.bin").count + fixture.server.requests(for: "/two.bin").count
    #expect(cut >= 1 && sent >= 3, "\(fixture.server.requests.map(\.path))")
    #expect(requests == sent, "the report says \(requests ?? -1), the server saw \(sent)")
    #expect(descriptors == 1)
  }

  /// A manifest of a foreground session `fg` (one file) and a background session `bg` (a listing of
  /// `names`, and `extra` tasks).
  static func backgroundManifest(_ fixture: RunFixture, extra: String = "") {
    fixture.manifest(
      """
      version: 1
      sessions:
        fg:
          dest: fg
          tasks:
            - download: BASE/fg.txt
        bg:
          kind: background
          identifier: org.example.count
          dest: bg
          retry: {attempts: 1}
          tasks:
            - index: BASE/bg/
      \(extra)
      """)
  }

  static func serveBackground(_ fixture: RunFixture, _ names: [String], big: Int = 600_000) {
    for name in names { fixture.server.route("/bg/" + name, .file(Array("\(name)\n".utf8), etag: .strong(name))) }
    fixture.server.route("/bg/", HostileReviewTests.listing(names))
    fixture.server.route("/fg.txt", .file(Array("fg\n".utf8), etag: .strong("fg")))
    fixture.server.route(
      "/big.iso", trickling(TestData.pseudoRandomBytes(count: big, seed: 388), etag: "i1"))
  }

  static var workerReport: String { "/.batchdl/workers/org.example.count.report.json" }

  @Test func aBackgroundWorkersReportCountsTheRequestsOfEveryPass() throws {
    let fixture = try RunFixture()
    // big.iso takes about 5 s: the second run comes while the worker is busy with it.
    Self.serveBackground(fixture, ["f0.txt", "f1.txt"], big: 3 << 20)
    fixture.server.route("/late.txt", .file(Array("late\n".utf8), etag: .strong("late")))
    Self.backgroundManifest(fixture, extra: "      - download: BASE/big.iso")
    let first = try fixture.run()
    #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
    let afterFirst = try Self.requests(inReport: fixture.folder.path + "/report.json")
    // While the worker downloads big.iso, the manifest gains a task: a second run wakes the
    // worker, which runs a second pass for it once the first ends.
    Self.backgroundManifest(fixture, extra: "      - download: BASE/big.iso\n      - download: BASE/late.txt")
    let second = try fixture.run()
    #expect(second.stdout.contains("is running; it takes the new tasks next"), "\(second.stdout)")
    let afterSecond = try Self.requests(inReport: fixture.folder.path + "/report.json")
    let wait = try BinaryRunner.run(["wait", "manifest.yaml", "--timeout", "30"], in: fixture.folder.path)
    #expect(wait.status == 0, "\(wait.stdout)\(wait.stderr)")
    #expect(fixture.folder.read("bg/late.txt") == "late\n")
    let worker = try Self.requests(inReport: fixture.folder.path + Self.workerReport)
    let sent = fixture.server.requests.count
    // Each run fetched the listing before planning, and each pass of the worker again.
    #expect(fixture.server.requests(for: "/bg/").count == 4)
    let runs = (afterFirst.requests ?? 0) + (afterSecond.requests ?? 0)
    #expect(
      (worker.requests ?? 0) + runs == sent,
      "worker \(worker), runs \(runs), the server saw \(fixture.server.requests.map(\.path))")
    #expect(worker.descriptors == 2, "\(worker)")
  }

  @Test func aBackgroundWorkerStoppedBySIGTERMCountsTheTransferItCut() throws {
    let fixture = try RunFixture()
    Self.serveBackground(fixture, ["f0.txt"], big: 3 << 20)
    Self.backgroundManifest(fixture, extra: "      - download: BASE/big.iso")
    let run = try fixture.run()
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    let foreground = try Self.requests(inReport: fixture.folder.path + "/report.json")
    // Once the worker is in the middle of big.iso, it is stopped as a service manager would.
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline && fixture.checkpointBytes() < 60_000 { usleep(20_000) }
    let status = try #require(fixture.folder.read(".batchdl/workers/org.example.count.json"))
    let object = try #require(try JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any])
    let pid = try #require(object["pid"] as? Int)
    #expect(kill(pid_t(pid), SIGTERM) == 0)
    let wait = try BinaryRunner.run(["wait", "manifest.yaml", "--timeout", "30"], in: fixture.folder.path)
    #expect(wait.status == 3, "\(wait.stdout)\(wait.stderr)")
    let worker = try Self.requests(inReport: fixture.folder.path + Self.workerReport)
    let sent = fixture.server.requests.count
    #expect(fixture.server.requests(for: "/big.iso").count == 1)
    #expect(
      (worker.requests ?? 0) + (foreground.requests ?? 0) == sent,
      "worker \(worker), run \(foreground), the server saw \(fixture.server.requests.map(\.path))")
  }
}
