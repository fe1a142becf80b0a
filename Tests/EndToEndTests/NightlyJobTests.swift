import Foundation
import TestServer
import TestSupport
import Testing

/// What a nightly mirror needs around the run (issue 38): partial files out of the published tree
/// (`partial_dir:`), every request counted (`summary.requests`), one line per cause of failure,
/// and the sizes a listing gives.
@Suite(.serialized) struct NightlyJobTests {
  /// The names in `folder` below the fixture's, none when it does not exist.
  func names(_ fixture: RunFixture, _ folder: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: fixture.folder.path + "/" + folder)) ?? []).sorted()
  }

  static func partialManifest(_ tasks: String, prune: Bool = false) -> String {
    """
    version: 1
    defaults:
      retry: {attempts: 2, backoff: 100ms}
    sessions:
      main:
        dest: pub
        partial_dir: ../.partial
    \(prune ? "    prune: {max_delete: 5}\n" : "")    tasks:
    \(tasks)
    """
  }

  @Test func aKilledRunLeavesItsPartialFileInPartialDirAndTheNextResumesFromThere() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 381)
    fixture.server.route("/big.bin", trickling(body, etag: "v1"))
    fixture.manifest(Self.partialManifest("      - download: BASE/big.bin"))
    _ = try fixture.interrupt(signal: SIGKILL)
    let saved = fixture.checkpointBytes()
    #expect(saved > 0)
    // Nothing half-written in the published tree: the partial file is in partial_dir.
    #expect(names(fixture, "pub").isEmpty, "\(names(fixture, "pub"))")
    let partials = names(fixture, ".partial")
    #expect(partials.count == 1 && partials.first?.hasSuffix("-big.bin.batchdl-part") == true, "\(partials)")
    let stats = try BinaryRunner.run(["cache", "stats", "manifest.yaml"], in: fixture.folder.path)
    #expect(stats.stdout.contains("partial files: 1 "), "\(stats.stdout)\(stats.stderr)")

    fixture.server.route("/big.bin", .file(FileResource(body: body, etag: .strong("v1"))))
    fixture.server.clearLog()
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.holds("pub/big.bin", body))
    #expect((rangeOffset(fixture.server.requests(for: "/big.bin").first) ?? 0) > 0)
    #expect(names(fixture, ".partial").isEmpty)
    #expect(names(fixture, "pub") == ["big.bin"])
  }

  @Test func pruneRemovesAPartialFileInPartialDirThatNoTaskNamesAnyMore() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 382)
    fixture.server.route("/big.bin", trickling(body, etag: "v1"))
    fixture.server.route("/small.txt", .file(FileResource(body: Array("small\n".utf8), etag: .strong("s1"))))
    fixture.manifest(Self.partialManifest("      - download: BASE/big.bin", prune: true))
    _ = try fixture.interrupt(signal: SIGKILL)
    #expect(fixture.checkpointBytes() > 0)
    #expect(names(fixture, ".partial").count == 1)
    // Upstream dropped big.bin: the manifest names another file now.
    fixture.manifest(Self.partialManifest("      - download: BASE/small.txt", prune: true))
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(names(fixture, ".partial").isEmpty, "\(names(fixture, ".partial"))")
    #expect(fixture.checkpointBytes() == 0)
    #expect(result.stdout.contains("pruned the partial file"), "\(result.stdout)")
  }

  @Test func aPartialDirOnAnotherFilesystemIsAManifestError() throws {
    var here = stat()
    var shm = stat()
    let fixture = try RunFixture()
    guard stat(fixture.folder.path, &here) == 0, stat("/dev/shm", &shm) == 0, here.st_dev != shm.st_dev else {
      return  // one filesystem only: nothing to tell apart
    }
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          dest: pub
          partial_dir: /dev/shm/batchdl-test-\(getpid())/partial
          tasks:
            - download: BASE/a.txt
      """)
    let result = try fixture.run()
    #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
    #expect(result.stderr.contains("manifest.yaml:5:18: error: partial_dir"), "\(result.stderr)")
    #expect(result.stderr.contains("another filesystem"), "\(result.stderr)")
    #expect(fixture.server.requests(for: "/a.txt").isEmpty)
  }

  /// A release folder served by nginx's autoindex, mirrored by `index:`.
  static func indexManifest(_ nginx: NginxServer, extra: String = "") -> String {
    """
    version: 1
    sessions:
      mirror:
        dest: out
        tls: {ca_file: ca.pem}
        retry: {attempts: 1}
        tasks:
          - index: \(nginx.url("/release/"))
            to: release/
    \(extra)
    """
  }

  @Test func summaryRequestsCountsEveryRequestSentListingsIncluded() throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer(autoindex: [.init(location: "/release/", folder: "release")])
    defer { nginx.stop() }
    for number in 0..<5 { nginx.put("release/file-\(number).txt", Array("file \(number)\n".utf8)) }
    fixture.trustCA(of: nginx)
    fixture.manifest(Self.indexManifest(nginx))
    var result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    let sent = nginx.requests().count
    var summary = try fixture.summary()
    // The listing page and 5 files.
    #expect(sent == 6)
    #expect(summary["requests"] as? Int == sent, "\(summary) against \(sent) in nginx's log")
    #expect(summary["descriptor_requests"] as? Int == 1, "\(summary)")
    let finished = fixture.events().last { $0["event"] as? String == "session_finished" }
    #expect((finished?["summary"] as? [String: Any])?["requests"] as? Int == sent, "\(finished ?? [:])")

    // A night with nothing new: only the (conditional) listing requests are sent, and counted.
    result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    let again = nginx.requests().count - sent
    summary = try fixture.summary()
    #expect(again > 0)
    #expect(summary["requests"] as? Int == again, "\(summary) against \(again) in nginx's log")
    #expect(summary["descriptor_requests"] as? Int == again, "\(summary)")
  }

  @Test func failuresOfOneCauseAreOneLineAndReportDiffSaysThemOnce() throws {
    let fixture = try RunFixture()
    let names = (0..<6).map { "f\($0).bin" }
    var tasks = ""
    for name in names { tasks += "      - download: BASE/\(name)\n" }
    tasks += "      - download: BASE/lone.bin\n"
    fixture.manifest(
      """
      version: 1
      defaults:
        retry: {attempts: 1}
      sessions:
        main:
          tasks:
      \(tasks)
      """)
    for name in names { fixture.server.route("/" + name, .status(404)) }
    fixture.server.route("/lone.bin", .status(410))
    var result = try fixture.run()
    #expect(result.status != 0)
    let failedLines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("failed") }
    #expect(failedLines.count == 2, "\(result.stderr)")
    #expect(
      failedLines.contains {
        $0.hasPrefix("failed    6 tasks  http-404: ") && $0.hasSuffix("(f0.bin, f1.bin, f2.bin and 3 more)")
      },
      "\(result.stderr)")
    #expect(failedLines.contains { $0.hasPrefix("failed    lone.bin  http-410") }, "\(result.stderr)")
    // The report keeps every task.
    let report = try fixture.tasks()
    #expect(names.allSatisfy { report[$0]?["outcome"] as? String == "failed" }, "\(report)")
    try FileManager.default.copyItem(
      atPath: fixture.folder.path + "/report.json", toPath: fixture.folder.path + "/night1.json")

    for name in names { fixture.server.route("/" + name, .file(FileResource(body: Array(name.utf8)))) }
    result = try fixture.run()
    #expect(result.status != 0)
    let diff = try BinaryRunner.run(["report", "diff", "night1.json", "report.json"], in: fixture.folder.path)
    let lines = diff.stdout.split(separator: "\n")
    #expect(
      lines.contains {
        $0.hasPrefix("~ 6 tasks: failed (http-404: ") && $0.hasSuffix("→ completed (f0.bin, f1.bin, f2.bin and 3 more)")
      },
      "\(diff.stdout)")
    #expect(!lines.contains { $0.hasPrefix("~ f3.bin") }, "\(diff.stdout)")
    let json = try BinaryRunner.run(
      ["report", "diff", "--json", "night1.json", "report.json"], in: fixture.folder.path)
    let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
    #expect((object?["changes"] as? [Any])?.count == 6, "\(json.stdout)")
  }

  @Test func planTotalsUseTheSizesAListingGives() throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer(autoindex: [.init(location: "/release/", folder: "release")])
    defer { nginx.stop() }
    for number in 1...3 {
      nginx.put("release/file-\(number).bin", Array(repeating: UInt8(number), count: number * 1000))
    }
    fixture.trustCA(of: nginx)
    fixture.manifest(Self.indexManifest(nginx))
    let plan = try BinaryRunner.run(["plan", "manifest.yaml", "--json"], in: fixture.folder.path)
    #expect(plan.status == 0, "\(plan.stderr)")
    let object = try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any]
    let space = (object?["space"] as? [[String: Any]])?.first
    #expect(space?["expected_bytes"] as? Int == 6000, "\(space ?? [:])")
    #expect(space?["unknown_files"] as? Int == 0, "\(space ?? [:])")
    let text = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path)
    #expect(!text.stdout.contains("of unknown size"), "\(text.stdout)")
  }

  @Test func aListedSizeIsNoPinAFileOfAnotherSizeIsTaken() throws {
    let fixture = try RunFixture()
    // The listing says 1000 bytes; the file has 1500 now (it changed after the page was made).
    let page = """
      <html><head><title>Index of /release/</title></head><body><h1>Index of /release/</h1><hr><pre><a href="../">../</a>
      <a href="a.bin">a.bin</a>                                              05-Mar-2024 10:20                1000
      </pre><hr></body></html>

      """
    fixture.server.route("/release/", .file(FileResource(body: Array(page.utf8), contentType: "text/html")))
    let body = TestData.pseudoRandomBytes(count: 1500, seed: 389)
    fixture.server.route("/release/a.bin", .file(FileResource(body: body)))
    fixture.manifest(
      """
      version: 1
      sessions:
        mirror:
          dest: out
          retry: {attempts: 1}
          tasks:
            - index: BASE/release/
              to: release/
      """)
    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path)
    #expect(plan.stdout.contains("space: 1000 B to write in out"), "\(plan.stdout)\(plan.stderr)")
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.holds("out/release/a.bin", body))
  }
}
