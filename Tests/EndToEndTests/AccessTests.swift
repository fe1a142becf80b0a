import Crypto
import Foundation
import TestServer
import TestSupport
import Testing

/// `auth:`, `netrc:` and `${file:}`: credentials reach the origin they were given for and no
/// other (a redirect to another port, a mirror), never show in a report, an event, the output or
/// the state folder, and a rotated password fetches nothing again. The servers check what they
/// receive.
@Suite(.serialized) struct AccessTests {
  static let password = "s3cret-pw-91f2"

  /// A route that answers 401 with a Basic challenge until the request carries `user:password`.
  static func basicProtected(_ body: [UInt8], user: String, password: String) -> @Sendable (RecordedRequest) -> Response
  {
    let expected = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    return { request in
      guard request.header("authorization") == expected else {
        return Response(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"mirror\""], body: Array("no".utf8))
      }
      return Response(status: 200, headers: ["ETag": "\"b\""], body: body)
    }
  }

  @Test func basicAuthReachesTheURLsOriginAndNotTheHostARedirectLeadsTo() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    let body = FileResource.versionBytes(1, length: 30_000)
    fixture.server.route("/a.bin", handler: Self.basicProtected(body, user: "mirror", password: Self.password))
    fixture.server.route("/moved.bin", .redirect(status: 302, location: other.url("/b.bin")))
    other.route("/b.bin", .file(FileResource(body: body, etag: .strong("o"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          auth: {user: mirror, password: "${PW}"}
          tasks:
            - download: BASE/a.bin
              to: a.bin
            - download: BASE/moved.bin
              to: b.bin
      """)
    let outcome = try fixture.run(environment: ["PW": Self.password])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("a.bin", body) && fixture.holds("b.bin", body))
    let hop = try #require(other.requests(for: "/b.bin").first)
    #expect(hop.header("authorization") == nil, "a redirect to another port is another origin")
    #expect(fixture.server.requests(for: "/moved.bin").first?.header("authorization") != nil)
    let encoded = Data("mirror:\(Self.password)".utf8).base64EncodedString()
    #expect(fixture.leaks(of: [Self.password, encoded], outputs: [outcome.stdout, outcome.stderr]).isEmpty)
  }

  @Test func aWrongPasswordFailsWith401AndARotatedOneFetchesNothingAgain() throws {
    let fixture = try RunFixture()
    let body = FileResource.versionBytes(2, length: 10_000)
    fixture.server.route("/a.bin", handler: Self.basicProtected(body, user: "u1", password: "right-pw-1"))
    let manifest = """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          auth: {user: u1, password: "${PW}"}
          tasks:
            - download: BASE/a.bin
              to: a.bin
      """
    fixture.manifest(manifest)
    let wrong = try fixture.run(environment: ["PW": "wrong-pw-1"])
    #expect(wrong.status == 1)
    #expect(try fixture.tasks()["a.bin"]?["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "http-401")
    #expect(!wrong.stderr.contains("wrong-pw-1"))
    #expect(try fixture.run(environment: ["PW": "right-pw-1"]).status == 0)
    #expect(fixture.holds("a.bin", body))
    // The file server rotates the password: the finished file is not asked for again.
    fixture.server.clearLog()
    let rotated = try fixture.run(environment: ["PW": "rotated-pw-2"])
    #expect(rotated.status == 0, "\(rotated.stderr)")
    #expect(fixture.server.requests(for: "/a.bin").isEmpty)
  }

  @Test func digestAuthAnswersTheServersChallenge() throws {
    let fixture = try RunFixture()
    let body = FileResource.versionBytes(3, length: 5_000)
    fixture.server.route("/d.bin", handler: Self.digestProtected(body, user: "dig", password: Self.password))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          auth: {user: dig, password: "${PW}", scheme: digest}
          tasks:
            - download: BASE/d.bin
              to: d.bin
      """)
    let outcome = try fixture.run(environment: ["PW": Self.password])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("d.bin", body))
    #expect(
      fixture.server.requests(for: "/d.bin").allSatisfy { !($0.header("authorization") ?? "").hasPrefix("Basic") })
  }

  /// RFC 7616 with MD5 and `qop=auth`, checked by the server.
  static func digestProtected(
    _ body: [UInt8], user: String, password: String
  ) -> @Sendable (RecordedRequest) -> Response {
    { request in
      let challenge = Response(
        status: 401, headers: ["WWW-Authenticate": "Digest realm=\"r\", nonce=\"n0nce\", qop=\"auth\", algorithm=MD5"])
      guard let header = request.header("authorization"), header.hasPrefix("Digest ") else { return challenge }
      var fields: [String: String] = [:]
      for part in header.dropFirst(7).split(separator: ",") {
        let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard pair.count == 2 else { continue }
        fields[pair[0]] = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
      }
      func md5(_ text: String) -> String {
        Insecure.MD5.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
      }
      let ha1 = md5("\(user):r:\(password)")
      let ha2 = md5("GET:\(fields["uri"] ?? "")")
      let expected = md5(
        "\(ha1):n0nce:\(fields["nc"] ?? ""):\(fields["cnonce"] ?? ""):\(fields["qop"] ?? ""):\(ha2)")
      guard fields["username"] == user, fields["response"] == expected else { return challenge }
      return Response(status: 200, headers: ["ETag": "\"d\""], body: body)
    }
  }

  @Test func netrcCredentialsGoToTheirHostOnlyAndADefaultEntryInheritsNothing() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    let body = FileResource.versionBytes(4, length: 8_000)
    fixture.server.route("/n.bin", handler: Self.basicProtected(body, user: "alice", password: Self.password))
    fixture.server.route("/away.bin", .redirect(status: 302, location: "http://localhost:\(other.port)/x.bin"))
    other.route("/x.bin", .file(FileResource(body: body, etag: .strong("x"))))
    fixture.folder.write(
      "netrc",
      """
      machine 127.0.0.1 login alice password \(Self.password)
      machine 127.0.0.1 login bob password bobs-own-pw
      default login nobody

      """)
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          netrc: netrc
          tasks:
            - download: BASE/n.bin
              to: n.bin
            - download: BASE/away.bin
              to: away.bin
            - download: http://carol@127.0.0.1:\(fixture.server.port)/c.bin
              to: c.bin
      """)
    fixture.server.route("/c.bin", .echoHeaders)
    let outcome = try fixture.run()
    #expect(fixture.holds("n.bin", body), "\(outcome.stderr)")
    #expect(fixture.holds("away.bin", body))
    let hop = try #require(other.requests(for: "/x.bin").first)
    #expect(hop.header("authorization") == nil, "the default entry has no password: nothing is sent")
    // A URL naming a user gets that user's entry, and carol has none: never alice's password.
    let carol = fixture.server.requests(for: "/c.bin").first?.header("authorization") ?? ""
    let decoded = String(decoding: Data(base64Encoded: String(carol.dropFirst(6))) ?? Data(), as: UTF8.self)
    #expect(!decoded.contains(Self.password) && !decoded.contains("bobs-own-pw"), "\(decoded)")
    #expect(fixture.leaks(of: [Self.password, "bobs-own-pw"], outputs: [outcome.stdout, outcome.stderr]).isEmpty)
  }

  @Test func aPasswordFromAFileIsReadWithoutItsNewlineAndAnUnreadableOneIsAManifestError() throws {
    let fixture = try RunFixture()
    let body = FileResource.versionBytes(5, length: 4_000)
    fixture.server.route("/f.bin", handler: Self.basicProtected(body, user: "filer", password: Self.password))
    fixture.folder.write("pw.txt", Self.password + "\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          auth: {user: filer, password: "${file:pw.txt}"}
          tasks:
            - download: BASE/f.bin
              to: f.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("f.bin", body))
    #expect(fixture.leaks(of: [Self.password], outputs: [outcome.stdout, outcome.stderr]).isEmpty)

    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          auth: {user: filer, password: "${file:missing.txt}"}
          tasks:
            - download: BASE/f.bin
              to: f.bin
      """)
    fixture.server.clearLog()
    let missing = try BinaryRunner.run(["validate", "manifest.yaml"], in: fixture.folder.path)
    #expect(missing.status == 2)
    #expect(missing.stderr.contains("manifest.yaml:4:36: error:"), "\(missing.stderr)")
    #expect(missing.stderr.contains("${file:missing.txt} cannot be read"), "\(missing.stderr)")
    #expect(try fixture.run().status == 2)
    #expect(fixture.server.requests(for: "/f.bin").isEmpty, "nothing is sent before the manifest is valid")
  }

  @Test func badAccessSettingsAreManifestErrorsWithTheirPlace() throws {
    let folder = TemporaryDirectory()
    folder.write(
      "manifest.yaml",
      """
      version: 1
      sessions:
        s:
          auth: {user: u, password: p, scheme: ntlm}
          proxy: "ftp://127.0.0.1:3128"
          netrc: no-such-netrc
          aws_sigv4: {provider: "aws:amz:us-east-1", access_key: a, secret_key: b}
          tasks:
            - download: http://127.0.0.1:9/x
              to: x
      """)
    let result = try BatchDLBinary.validate(in: folder.path)
    #expect(result.status == 2)
    for expected in [
      "manifest.yaml:4:42: error: unknown auth.scheme 'ntlm'",
      "manifest.yaml:5:12: error: bad proxy: unknown proxy scheme 'ftp'",
      "manifest.yaml:6:12: error: netrc file 'no-such-netrc' does not exist",
      "manifest.yaml:7:27: error: aws_sigv4's provider is aws:amz:REGION:SERVICE, e.g. aws:amz:us-east-1:s3; 'aws:amz:us-east-1' has 3 part(s)",
    ] {
      #expect(result.stderr.contains(expected), "\(expected)\n\(result.stderr)")
    }
  }
}

enum BatchDLBinary {
  static func validate(in folder: String, environment: [String: String] = [:]) throws -> BinaryRunner.Outcome {
    try BinaryRunner.run(["validate", "manifest.yaml"], in: folder, environment: environment)
  }
}
