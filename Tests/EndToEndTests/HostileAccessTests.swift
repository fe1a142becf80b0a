import Foundation
import TestServer
import TestSupport
import Testing

/// The access feature attacked beyond curl's CVE table: S3 listing pages from a hostile server
/// (a continuation token that never ends, a key listed twice), `${file:}` on a FIFO or a device,
/// a netrc file with a huge line, proxy credentials from the environment in `plan`, `validate`
/// and errors, a password near libcurl's error messages, and SigV4 keys with `+`, `%2F` and
/// non-ASCII letters against moto, which checks every signature.
@Suite(.serialized) struct HostileAccessTests {
  static let password = "ha-secret-pw-8c2e"

  /// A ListObjectsV2 page of `keys` (each `(key, size)`), truncated with `token` when given.
  static func listing(_ keys: [(String, Int)], token: String?) -> Response {
    var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult>"
    xml += "<Name>bucket</Name><Prefix>pre/</Prefix><KeyCount>\(keys.count)</KeyCount>"
    for (key, size) in keys {
      xml += "<Contents><Key>\(key)</Key><Size>\(size)</Size><ETag>\"e-\(key.count)\"</ETag></Contents>"
    }
    xml += "<IsTruncated>\(token == nil ? "false" : "true")</IsTruncated>"
    if let token { xml += "<NextContinuationToken>\(token)</NextContinuationToken>" }
    xml += "</ListBucketResult>"
    return Response(status: 200, headers: ["Content-Type": "application/xml"], body: Array(xml.utf8))
  }

  /// A session signing with made-up keys (the test server checks none) whose task is `index:` of
  /// the test server's `bucket/pre/`.
  static func bucketManifest() -> String {
    """
    version: 1
    sessions:
      s3:
        retry: {attempts: 1}
        aws_sigv4: {provider: "aws:amz:us-east-1:s3", access_key: AKIDHOSTILE, secret_key: "${SECRET}"}
        tasks:
          - index: BASE/bucket/pre/
            to: out/
    """
  }

  /// The ListObjectsV2 requests the server got.
  static func listRequests(_ server: TestHTTPServer) -> [RecordedRequest] {
    server.requests(for: "/bucket").filter { ($0.query ?? "").contains("list-type=2") }
  }

  @Test func aListingThatRepeatsItsContinuationTokenIsNotFollowedForever() throws {
    let fixture = try RunFixture()
    let body = FileResource.versionBytes(31, length: 100)
    // Every page, whatever the token asked for, says more follow after "loop-token".
    fixture.server.route("/bucket", handler: { _ in Self.listing([("pre/k.bin", 100)], token: "loop-token") })
    fixture.server.route("/bucket/pre/k.bin", .file(body, etag: .strong("k")))
    fixture.manifest(Self.bucketManifest())
    let started = Date()
    let outcome = try fixture.run(environment: ["SECRET": Self.password], timeout: 120)
    #expect(Date().timeIntervalSince(started) < 60, "a token loop is stopped, not followed 10,000 times")
    #expect(Self.listRequests(fixture.server).count <= 3, "\(Self.listRequests(fixture.server).count) pages asked")
    #expect(outcome.status != 0, "a listing that loops is not a complete listing: \(outcome.stderr.prefix(2000))")
    #expect(fixture.holds("out/k.bin", body), "the key listed is fetched once: \(outcome.stderr.prefix(2000))")
    #expect(fixture.server.requests(for: "/bucket/pre/k.bin").count == 1)
    let report = fixture.folder.read("report.json") ?? ""
    #expect(report.contains("continuation token"), "the report says why the listing stopped")
  }

  @Test func aListingThatCyclesThroughTwoTokensIsNotFollowedForever() throws {
    let fixture = try RunFixture()
    // t1 -> t2 -> t1 -> ...: each page a different token from the one asked for.
    fixture.server.route(
      "/bucket",
      handler: { request in
        let asked = (request.query ?? "").contains("continuation-token=t1")
        return Self.listing([], token: asked ? "t2" : "t1")
      })
    fixture.manifest(Self.bucketManifest())
    let started = Date()
    let outcome = try fixture.run(environment: ["SECRET": Self.password], timeout: 120)
    #expect(Date().timeIntervalSince(started) < 60)
    #expect(Self.listRequests(fixture.server).count <= 4, "\(Self.listRequests(fixture.server).count) pages asked")
    #expect(outcome.status != 0, "\(outcome.stderr.prefix(2000))")
  }

  @Test func aKeyListedTwiceIsOneObject() throws {
    let fixture = try RunFixture()
    let body = FileResource.versionBytes(32, length: 100)
    fixture.server.route(
      "/bucket",
      handler: { request in
        if (request.query ?? "").contains("continuation-token=p2") {
          return Self.listing([("pre/d.bin", 100)], token: nil)
        }
        return Self.listing([("pre/d.bin", 100), ("pre/d.bin", 100)], token: "p2")
      })
    fixture.server.route("/bucket/pre/d.bin", .file(body, etag: .strong("d")))
    fixture.manifest(Self.bucketManifest())
    let outcome = try fixture.run(environment: ["SECRET": Self.password])
    #expect(outcome.status == 0, "\(outcome.stderr.prefix(3000))")
    #expect(fixture.holds("out/d.bin", body))
    #expect(fixture.server.requests(for: "/bucket/pre/d.bin").count == 1)
  }

  @Test func aSecretFileThatIsAFIFOOrADeviceIsAManifestErrorAtOnce() throws {
    let fixture = try RunFixture()
    #expect(mkfifo(fixture.folder.path + "/pipe", 0o600) == 0)
    for (file, expected) in [("pipe", "is not a regular file"), ("/dev/zero", "is not a regular file")] {
      fixture.manifest(
        ProxyTests.manifest(
          ["auth: {user: u, password: \"${file:\(file)}\"}"], tasks: ProxyTests.download("BASE/a.bin", to: "a.bin")))
      let started = Date()
      let validate = try ProxyTests.batchdl(["validate", "manifest.yaml"], in: fixture)
      let run = try ProxyTests.run(fixture)
      #expect(Date().timeIntervalSince(started) < 20, "\(file): nothing waits on the file")
      #expect(validate.status == 2 && run.status == 2, "\(file): \(validate.output)")
      #expect(validate.stderr.contains("manifest.yaml:4:"), "\(validate.output)")
      #expect(validate.stderr.contains(expected), "\(file): \(validate.output)")
    }
    #expect(fixture.server.requests.isEmpty)
  }

  @Test func aNetrcFileWithAHugeLineIsReadWithinBoundsAndItsErrorsStayShort() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .echoHeaders)
    // A 900 KB word where a keyword belongs: the error names the line, not the whole word.
    let huge = String(repeating: "w", count: 900_000)
    fixture.folder.write("netrc", "machine 127.0.0.1 login u password \(Self.password) \(huge)\n")
    fixture.manifest(ProxyTests.manifest(["netrc: netrc"], tasks: ProxyTests.download("BASE/a.bin", to: "a.bin")))
    let started = Date()
    let validate = try ProxyTests.batchdl(["validate", "manifest.yaml"], in: fixture)
    #expect(Date().timeIntervalSince(started) < 20)
    #expect(validate.status == 2, "\(validate.output.prefix(500))")
    #expect(validate.stderr.contains("netrc file 'netrc', line 1"), "\(validate.stderr.prefix(500))")
    #expect(validate.output.count < 4_000, "the error holds \(validate.output.count) characters")
    #expect(!validate.output.contains(Self.password))
    // A password with a space, unquoted: the word after it is unknown, and it is part of a secret.
    fixture.folder.write("netrc", "machine 127.0.0.1 login u password first-half second-half-4e1\n")
    let split = try ProxyTests.batchdl(["validate", "manifest.yaml"], in: fixture)
    #expect(split.status == 2)
    #expect(!split.output.contains("second-half-4e1"), "a word after a password may be the rest of it: \(split.output)")
  }

  @Test func proxyCredentialsFromTheEnvironmentNeverShow() throws {
    let fixture = try RunFixture()
    let refused = try RefusedPort()
    fixture.server.route("/a.bin", .file(FileResource.versionBytes(33, length: 100), etag: .strong("a")))
    fixture.manifest(ProxyTests.manifest([], tasks: ProxyTests.download("BASE/a.bin", to: "a.bin")))
    let envPassword = "env-proxy-pw-0b7d"
    let encoded = "env%2Dproxy%2Dpw%2D0b7d"
    var outputs: [String] = []
    for value in [
      "http://envuser:\(envPassword)@127.0.0.1:\(refused.port)",
      "http://envuser:\(encoded)@127.0.0.1:\(refused.port)",
      "ftp://envuser:\(envPassword)@127.0.0.1:\(refused.port)",
      "http://envuser:\(envPassword)@no-such-proxy.invalid:3128",
      "http://envuser:\(envPassword)@[::1",
    ] {
      let environment = ["http_proxy": value]
      for command in [["validate", "manifest.yaml"], ["plan", "manifest.yaml"]] {
        outputs.append(try ProxyTests.batchdl(command, in: fixture, environment: environment).output)
      }
      outputs.append(try ProxyTests.run(fixture, environment: environment).output)
      outputs.append(fixture.folder.read("report.json") ?? "")
      outputs.append(fixture.folder.read("events.jsonl") ?? "")
    }
    let leaks = fixture.leaks(of: [envPassword, encoded, "envuser"], outputs: outputs)
    #expect(leaks.isEmpty, "\(leaks)\n\(outputs.joined(separator: "\n---\n").prefix(4000))")
  }

  @Test func anAuthPasswordNeverShowsInAnErrorMessage() throws {
    let fixture = try RunFixture()
    let refused = try RefusedPort()
    // Passwords with characters a URL or a header would change: each spelling is checked.
    let secret = "pw with/sp@ce+%41-e7f"
    let encoded = "pw%20with%2Fsp%40ce%2B%2541-e7f"
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          auth: {user: erin, password: "${PW}"}
          tasks:
            - download: http://127.0.0.1:\(refused.port)/a.bin
              to: a.bin
            - download: http://no-such-host.invalid/b.bin
              to: b.bin
            - download: http://erin:${PWURL}@127.0.0.1:\(refused.port)/c.bin
              to: c.bin
            - download: http://erin:${PWURL}@no-such-host.invalid/d.bin
              to: d.bin
            - download: http://erin:${PWURL}@127.0.0.1:99999/e.bin
              to: e.bin
      """)
    let outcome = try ProxyTests.run(fixture, environment: ["PW": secret, "PWURL": encoded])
    #expect(outcome.status != 0)
    let plan = try ProxyTests.batchdl(
      ["plan", "manifest.yaml"], in: fixture, environment: ["PW": secret, "PWURL": encoded])
    let leaks = fixture.leaks(
      of: [secret, encoded, "sp@ce+%41-e7f", "sp%40ce", AccessTests.basicValue("erin", secret)],
      outputs: [outcome.output, plan.output])
    #expect(leaks.isEmpty, "\(leaks)\n\(outcome.output.prefix(3000))")
  }

  /// SigV4's canonical request encodes each path segment once (`+` as `%2B`, non-ASCII as its
  /// UTF-8 bytes); a URL that already holds `%2F` keeps it as one segment's character. moto
  /// checks every signature: a wrong canonical form is a 403.
  @Test(.enabled(if: MotoServer.isInstalled, Comment(rawValue: MotoServer.missing)))
  func sigv4SignsKeysWithPlusSlashesAndUnicode() throws {
    let keys = ["p+q.bin", "caf\u{E9}.bin", "\u{65E5}\u{672C}/x y.bin", "a=b&c.bin", "t~i_l-d.e.bin"]
    let moto = try MotoServer(objects: keys.map { MotoServer.Object($0, Array("object \($0)\n".utf8)) })
    defer { moto.stop() }
    let fixture = try RunFixture()
    let urls = [
      moto.url("p+q.bin"), moto.url("p%2Bq.bin"), moto.url("caf\u{E9}.bin"), moto.url("caf%C3%A9.bin"),
      moto.url("%E6%97%A5%E6%9C%AC/x%20y.bin"), moto.url("a=b&c.bin"), moto.url("t~i_l-d.e.bin"),
    ]
    let expected = [keys[0], keys[0], keys[1], keys[1], keys[2], keys[3], keys[4]]
    var tasks = ""
    for (index, url) in urls.enumerated() {
      tasks += "      - download: \"\(url)\"\n        to: f\(index).bin\n"
    }
    fixture.manifest(BucketTests.manifest(moto, tasks: tasks))
    let outcome = try fixture.run(environment: BucketTests.environment(moto))
    #expect(outcome.status == 0, "\(outcome.stderr.prefix(3000))")
    for (index, key) in expected.enumerated() {
      #expect(fixture.holds("f\(index).bin", Array("object \(key)\n".utf8)), "\(urls[index])")
    }
  }
}

extension AccessTests {
  /// The value of a Basic `Authorization` header.
  static func basicValue(_ user: String, _ password: String) -> String {
    Data("\(user):\(password)".utf8).base64EncodedString()
  }
}
