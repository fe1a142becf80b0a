import Foundation
import TestServer
import TestSupport
import Testing

/// The transfer paths against a real nginx over TLS with HTTP/2, as users meet most servers: each
/// path (a list of small files, resume, retries after a reset stream and after GOAWAY, segments,
/// mirrors, revalidation, content identity) crosses h2 at least once. The CA is made for the test
/// and trusted through the session's `tls.ca_file`.
@Suite(.serialized) struct HTTP2TransferTests {
  /// The session lines that trust the server's throw-away CA.
  static func trust(_ nginx: NginxServer) -> String {
    "tls: {ca_file: \(nginx.certificates.caCertificate)}"
  }

  /// A manifest of one session `s` that trusts `nginx`, with `settings` (one YAML line each, e.g.
  /// `network: {max_concurrent: 16}`) and `tasks` (the task list's lines, from column 0).
  static func manifest(trusting nginx: NginxServer, _ settings: [String] = [], tasks: String) -> String {
    let lines = ([trust(nginx)] + settings).map { "    " + $0 }.joined(separator: "\n")
    let items = tasks.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n")
    return "version: 1\nsessions:\n  s:\n\(lines)\n    tasks:\n\(items)\n"
  }

  /// The task list of one download of `url` to `to`.
  static func download(_ url: String, to: String) -> String { "- download: \(url)\n  to: \(to)" }

  /// The task list of `smallFiles`' list, into `files/`.
  static let smallFileList = "- list: urls.txt\n  to: files/"

  /// `count` files of 4 KiB on `nginx` as `files/fNNN`, and a list file naming them.
  static func smallFiles(_ count: Int, on nginx: NginxServer, in fixture: RunFixture) -> [String: [UInt8]] {
    var files: [String: [UInt8]] = [:]
    var lines = ""
    for index in 0..<count {
      let name = "f\(index)"
      let bytes = FileResource.versionBytes(index + 1, length: 4096)
      nginx.put("files/" + name, bytes)
      files[name] = bytes
      lines += nginx.url("/files/" + name) + " " + name + "\n"
    }
    fixture.folder.write("urls.txt", lines)
    return files
  }

  @Test func manySmallFilesGoOverMultiplexedStreams() throws {
    let nginx = try NginxServer()
    let fixture = try RunFixture()
    let files = Self.smallFiles(400, on: nginx, in: fixture)
    fixture.manifest(
      Self.manifest(trusting: nginx, ["dest: out/", "network: {max_concurrent: 16}"], tasks: Self.smallFileList))
    let outcome = try fixture.run(["--timings"])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    for (name, bytes) in files { #expect(fixture.holds("out/files/" + name, bytes), "\(name)") }
    let requests = nginx.requests()
    #expect(requests.count == 400)
    #expect(requests.allSatisfy { $0.proto == "HTTP/2.0" })
    // The requests waited for the first connection to say it multiplexes, and went as its streams.
    #expect(Set(requests.map(\.connection)).count == 1)
    let tasks = try fixture.tasks()
    #expect(tasks.count == 400)
    #expect(tasks.values.allSatisfy { $0["protocol"] as? String == "HTTP/2" })
    let responses = fixture.events().filter { $0["event"] as? String == "response" }
    #expect(responses.count == 400)
    #expect(responses.allSatisfy { $0["protocol"] as? String == "HTTP/2" })
  }

  @Test func theProtocolIsReportedWithTimingsOnly() throws {
    let nginx = try NginxServer()
    nginx.put("a.bin", FileResource.versionBytes(1, length: 1000))
    let fixture = try RunFixture()
    fixture.manifest(Self.manifest(trusting: nginx, tasks: Self.download(nginx.url("/a.bin"), to: "a.bin")))
    #expect(try fixture.run().status == 0)
    #expect(
      try fixture.tasks()["a.bin"]?["protocol"] == nil, "a report without --timings diffs the same over h1 and h2")
  }

  @Test func httpVersionAsksForOneProtocol() throws {
    let nginx = try NginxServer()
    nginx.put("a.bin", FileResource.versionBytes(1, length: 1000))
    for (version, expected) in [("1.1", "HTTP/1.1"), ("2", "HTTP/2.0"), ("auto", "HTTP/2.0")] {
      let fixture = try RunFixture()
      fixture.manifest(
        Self.manifest(
          trusting: nginx, ["network: {http_version: \(version)}"],
          tasks: Self.download(nginx.url("/a.bin"), to: "a.bin")))
      let outcome = try fixture.run(["--timings"])
      #expect(outcome.status == 0, "\(outcome.stderr)")
      #expect(nginx.requests().last?.proto == expected, "http_version \(version)")
    }
    let plain = try NginxServer(http2: false)
    plain.put("a.bin", FileResource.versionBytes(1, length: 1000))
    let fixture = try RunFixture()
    fixture.manifest(Self.manifest(trusting: plain, tasks: Self.download(plain.url("/a.bin"), to: "a.bin")))
    #expect(try fixture.run(["--timings"]).status == 0)
    #expect(plain.requests().last?.proto == "HTTP/1.1", "auto falls back to HTTP/1.1 when the server offers no h2")
    #expect(try fixture.tasks()["a.bin"]?["protocol"] as? String == "HTTP/1.1")
  }

  @Test func http2WithPriorKnowledgeToAnHTTP1ServerSaysWhatToSet() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: 1000)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          network: {http_version: 2}
          tasks:
            - download: BASE/a.bin
              to: a.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1)
    #expect(!fixture.folder.exists("a.bin"))
    let error = try #require(try fixture.tasks()["a.bin"]?["error"] as? [String: Any])
    #expect((error["message"] as? String)?.contains("use auto or 1.1") == true, "\(error)")
  }

  @Test func requestsWaitingForAStreamAreNotIdle() throws {
    // The server allows 2 streams on its one connection (the session's cap) and sends each file in
    // about a second: the requests libcurl holds back meanwhile have sent nothing, and their idle
    // limit (half a second) starts when they start.
    let nginx = try NginxServer(serverDirectives: "http2_max_concurrent_streams 2;\nlimit_rate 400k;")
    let fixture = try RunFixture()
    var lines = ""
    for index in 0..<4 {
      nginx.put("s/f\(index)", FileResource.versionBytes(index + 1, length: 400_000))
      lines += nginx.url("/s/f\(index)") + "\n"
    }
    fixture.folder.write("urls.txt", lines)
    fixture.manifest(
      Self.manifest(
        trusting: nginx,
        [
          "dest: out/", "timeouts: {request: 500ms}", "retry: {attempts: 1}",
          "network: {max_connections_per_host: 1, max_concurrent: 8}",
        ], tasks: "- list: urls.txt\n  to: files/"))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
    for index in 0..<4 {
      #expect(fixture.holds("out/files/f\(index)", FileResource.versionBytes(index + 1, length: 400_000)))
    }
    #expect(Set(nginx.requests().map(\.connection)).count == 1, "one connection, the session's cap")
  }

  @Test func anotherSessionsHTTP2DoesNotLiftASessionsCap() throws {
    // `modern` learns the host speaks HTTP/2; `legacy` asks for HTTP/1.1 with 1 connection: it
    // keeps one request at a time.
    let nginx = try NginxServer()
    let fixture = try RunFixture()
    nginx.put("a.bin", FileResource.versionBytes(9, length: 1000))
    var tasks = ""
    for index in 0..<6 {
      nginx.put("l/f\(index)", FileResource.versionBytes(index + 20, length: 50_000))
      tasks += "      - download: \(nginx.url("/l/f\(index)"))\n        to: legacy/f\(index)\n        after: [a.bin]\n"
    }
    fixture.manifest(
      """
      version: 1
      sessions:
        modern:
          \(Self.trust(nginx))
          tasks:
            - download: \(nginx.url("/a.bin"))
              to: a.bin
        legacy:
          \(Self.trust(nginx))
          network: {http_version: 1.1, max_connections_per_host: 1, max_concurrent: 8}
          tasks:
      \(tasks)
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
    let legacy = nginx.requests().filter { $0.uri.hasPrefix("/l/") }
    #expect(legacy.count == 6 && legacy.allSatisfy { $0.proto == "HTTP/1.1" })
    #expect(Set(legacy.map(\.connection)).count == 1, "one connection at a time, reused")
  }

  /// `count` small files from an nginx that ends each connection with GOAWAY after `every`
  /// requests, fetched `streams` at a time with `attempts` tries each.
  func goaway(
    every: Int, count: Int, streams: Int, attempts: Int
  ) throws -> (
    nginx: NginxServer, fixture: RunFixture, files: [String: [UInt8]], outcome: BinaryRunner.Outcome
  ) {
    let nginx = try NginxServer(serverDirectives: "keepalive_requests \(every);")
    let fixture = try RunFixture()
    let files = Self.smallFiles(count, on: nginx, in: fixture)
    fixture.manifest(
      Self.manifest(
        trusting: nginx,
        ["dest: out/", "retry: {attempts: \(attempts), backoff: 10ms}", "network: {max_concurrent: \(streams)}"],
        tasks: Self.smallFileList))
    return (nginx, fixture, files, try fixture.run())
  }

  @Test func aServerThatEndsConnectionsWithGoawayCostsNoTask() throws {
    // nginx sends GOAWAY after 7 requests on a connection: streams opened past it are refused.
    let (nginx, fixture, files, outcome) = try goaway(every: 7, count: 120, streams: 16, attempts: 2)
    #expect(outcome.status == 0, "\(outcome.stderr)")
    for (name, bytes) in files { #expect(fixture.holds("out/files/" + name, bytes), "\(name)") }
    let requests = nginx.requests().filter { $0.status == 200 }
    #expect(Set(requests.map(\.uri)).count == 120)
    #expect(Set(requests.map(\.connection)).count >= 120 / 7)
    #expect(try fixture.summary()["failed"] as? Int == 0)
  }

  @Test func goawayUnderLoadCostsNoTaskWithoutRetries() throws {
    // 64 streams at once, a GOAWAY every 3 requests, and no retry allowed: the requests past the
    // last stream a connection took are sent again without an attempt charged.
    let (_, fixture, files, outcome) = try goaway(every: 3, count: 300, streams: 64, attempts: 1)
    #expect(outcome.status == 0, "\(outcome.stderr)")
    for (name, bytes) in files { #expect(fixture.holds("out/files/" + name, bytes), "\(name)") }
  }

  @Test func aResetStreamCostsARetryOfThatRequestOnly() throws {
    // nginx in front of the test server, whose answer for /b.bin breaks off once: nginx resets
    // that stream (RST_STREAM) while the other streams of the connection go on.
    let fixture = try RunFixture()
    let backend = fixture.server
    let body = FileResource.versionBytes(7, length: 2_000_000)
    // Sent in a trickle: when the backend sent its first MB and broke off at once, nginx could reset
    // the stream before its response head went out, a request lost before any of its response,
    // which batchdl sends again whole.
    backend.route(
      "/b.bin",
      .file(
        FileResource(
          body: body, etag: .strong("b7"), dropAfter: 1_000_000, dropTimes: 1,
          trickle: Trickle(chunkBytes: 64 << 10, interval: 0.01))))
    let nginx = try NginxServer(
      serverDirectives: """
            location /proxied/ {
              proxy_pass \(backend.baseURL)/;
              proxy_buffering off;
              proxy_http_version 1.1;
            }
        """)
    let files = Self.smallFiles(30, on: nginx, in: fixture)
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: out/
          \(Self.trust(nginx))
          retry: {attempts: 3, backoff: 10ms}
          tasks:
            - download: \(nginx.url("/proxied/b.bin"))
              to: b.bin
            - list: urls.txt
              to: files/
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("out/b.bin", body))
    for (name, bytes) in files { #expect(fixture.holds("out/files/" + name, bytes), "\(name)") }
    let backendRequests = backend.requests(for: "/b.bin")
    #expect(backendRequests.count == 2)
    // The retry continued from what the reset stream had delivered, guarded by the ETag.
    #expect((rangeOffset(backendRequests.last) ?? 0) > 0)
    #expect(backendRequests.last?.header("if-range") == "\"b7\"")
    let retried = Set(
      fixture.events().filter { $0["event"] as? String == "retrying" }.compactMap { $0["task"] as? String })
    #expect(retried == ["out/b.bin"])
    for name in files.keys { #expect(nginx.requests(for: "/files/" + name).count == 1) }
  }

  /// A 1.5 MB file nginx sends at 512 KB/s, interrupted once a checkpoint holds 300 KB.
  func interruptedDownload() throws -> (NginxServer, RunFixture, [UInt8]) {
    let nginx = try NginxServer(serverDirectives: "location /slow/ { limit_rate 512k; }")
    let body = FileResource.versionBytes(3, length: 1_500_000)
    nginx.put("slow/big.bin", body)
    let fixture = try RunFixture()
    fixture.manifest(Self.manifest(trusting: nginx, tasks: Self.download(nginx.url("/slow/big.bin"), to: "big.bin")))
    let status = try fixture.interrupt(signal: SIGTERM, after: 300_000)
    #expect(status == 3)
    #expect(!fixture.folder.exists("big.bin"))
    return (nginx, fixture, body)
  }

  @Test func anInterruptedDownloadResumesWithIfRange() throws {
    let (nginx, fixture, body) = try interruptedDownload()
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("big.bin", body))
    let last = try #require(nginx.requests(for: "/slow/big.bin").last)
    #expect(last.proto == "HTTP/2.0")
    #expect(last.status == 206)
    #expect(last.ifRange == nginx.etag(of: "slow/big.bin"))
    let offset = Int(last.range?.dropFirst("bytes=".count).split(separator: "-").first ?? "") ?? 0
    #expect(offset >= 300_000)
    #expect(try fixture.tasks()["big.bin"]?["resumed_from"] as? Int == offset)
  }

  @Test func aFileReplacedUpstreamIsFetchedWholeNotSpliced() throws {
    let (nginx, fixture, _) = try interruptedDownload()
    let replaced = FileResource.versionBytes(4, length: 1_500_000)
    nginx.put("slow/big.bin", replaced)
    // Another second, so that nginx's ETag (mtime and size) changes too.
    let later = Date().addingTimeInterval(5)
    try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: nginx.root + "/slow/big.bin")
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("big.bin", replaced))
    let last = try #require(nginx.requests(for: "/slow/big.bin").last)
    #expect(last.status == 200, "If-Range with the old ETag gets the whole new file")
    #expect(try fixture.tasks()["big.bin"]?["resumed_from"] as? Int == 0)
  }

  @Test func aLargeFileIsFetchedAsRangesOverStreams() throws {
    let nginx = try NginxServer()
    let body = FileResource.versionBytes(5, length: 24 << 20)
    nginx.put("big.bin", body)
    let fixture = try RunFixture()
    fixture.manifest(
      Self.manifest(
        trusting: nginx, ["network: {segments: 4, min_segment_size: 4MB}"],
        tasks: Self.download(nginx.url("/big.bin"), to: "big.bin") + "\n  sha256: \(SHA256Digest.hex(body))"))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("big.bin", body))
    let requests = nginx.requests(for: "/big.bin")
    #expect(requests.filter { $0.status == 206 }.count >= 2, "\(requests.map { "\($0.status) \($0.range ?? "")" })")
    #expect(requests.allSatisfy { $0.proto == "HTTP/2.0" })
  }

  @Test func aMirrorOverHTTP2TakesOverFromAFailingSource() throws {
    let nginx = try NginxServer()
    let body = FileResource.versionBytes(6, length: 200_000)
    nginx.put("m.bin", body)
    let fixture = try RunFixture()
    fixture.server.route("/m.bin", .status(503))
    fixture.manifest(
      Self.manifest(
        trusting: nginx, ["retry: {attempts: 1}"],
        tasks: Self.download("BASE/m.bin", to: "m.bin") + "\n  mirrors: [\(nginx.url("/m.bin"))]"))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m.bin", body))
    #expect(nginx.requests(for: "/m.bin").map(\.proto) == ["HTTP/2.0"])
    let failed = fixture.events().filter { $0["event"] as? String == "source_failed" }
    #expect(failed.map { $0["url"] as? String } == [fixture.server.url("/m.bin")])
  }

  @Test func aBadPieceIsRepairedFromAMirrorOverHTTP2() throws {
    let nginx = try NginxServer()
    nginx.put("b.bin", PieceTests.body)
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(PieceTests.corrupt(PieceTests.inPieceThree)))
    fixture.folder.write(
      "doc.meta4", PieceTests.document(urls: [fixture.server.url("/a.bin"), nginx.url("/b.bin")]))
    fixture.manifest(
      Self.manifest(trusting: nginx, ["retry: {attempts: 2, backoff: 10ms}"], tasks: "- metalink: doc.meta4\n  to: m/"))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m/f.bin", PieceTests.body))
    let repaired = nginx.requests(for: "/b.bin")
    #expect(repaired.map(\.range) == ["bytes=786432-1048575"], "only piece 3 is asked again")
    #expect(repaired.allSatisfy { $0.status == 206 && $0.proto == "HTTP/2.0" })
  }

  @Test func aRefreshRevalidatesAndFetchesOnlyWhatChanged() throws {
    let nginx = try NginxServer()
    let first = FileResource.versionBytes(8, length: 50_000)
    nginx.put("r.bin", first)
    let fixture = try RunFixture()
    fixture.manifest(Self.manifest(trusting: nginx, tasks: Self.download(nginx.url("/r.bin"), to: "r.bin")))
    #expect(try fixture.run().status == 0)
    let etag = nginx.etag(of: "r.bin")
    let again = try fixture.run(["--refresh"])
    #expect(again.status == 0, "\(again.stderr)")
    let revalidation = try #require(nginx.requests(for: "/r.bin").last)
    #expect(revalidation.status == 304)
    #expect(revalidation.ifNoneMatch == etag)
    #expect(try fixture.tasks()["r.bin"]?["outcome"] as? String == "unchanged")
    let second = FileResource.versionBytes(9, length: 60_000)
    nginx.put("r.bin", second)
    try FileManager.default.setAttributes(
      [.modificationDate: Date().addingTimeInterval(5)], ofItemAtPath: nginx.root + "/r.bin")
    #expect(try fixture.run(["--refresh"]).status == 0)
    #expect(nginx.requests(for: "/r.bin").last?.status == 200)
    #expect(fixture.holds("r.bin", second))
    #expect(try fixture.tasks()["r.bin"]?["outcome"] as? String == "completed")
  }

  @Test func newConnectionsResumeTheSessionsTLSSession() throws {
    // One request per connection over HTTP/1.1: every request after the first connections'
    // handshakes should resume a TLS session rather than make a full handshake.
    let nginx = try NginxServer(serverDirectives: "keepalive_requests 1;")
    let fixture = try RunFixture()
    _ = Self.smallFiles(12, on: nginx, in: fixture)
    fixture.manifest(
      Self.manifest(
        trusting: nginx, ["dest: out/", "network: {http_version: 1.1, max_concurrent: 2}"], tasks: Self.smallFileList))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    let requests = nginx.requests()
    #expect(Set(requests.map(\.connection)).count == 12)
    #expect(requests.filter(\.sessionReused).count >= 9, "\(requests.map(\.sessionReused))")
  }
}
