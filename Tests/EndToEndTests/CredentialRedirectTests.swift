import Foundation
import TestServer
import TestSupport
import Testing

/// The redirect and credential rules of curl's CVE history (issue 39's table), one test each,
/// run with the built binary against servers that behave as an attacker would: a redirect to
/// another host, another port of the same host, another scheme; a netrc file with entries meant
/// to be inherited; a second proxy; a Location holding credentials. Another port on 127.0.0.1 is
/// another origin, `localhost` and `127.0.0.1` are other hosts, nginx serves TLS.
@Suite(.serialized) struct CredentialRedirectTests {
  static let password = "cr-pass-5e1d77"
  static let token = "cr-bearer-token-a90c"
  static let cookie = "cr-cookie-value-33b1"
  static let body = FileResource.versionBytes(11, length: 12_000)

  /// `batchdl run` with the report, the events and `extra`, the proxy variables of the test's
  /// environment removed and `environment` set.
  static func run(
    _ fixture: RunFixture, _ extra: [String] = [], environment: [String: String] = [:]
  ) throws -> ExternalTool.Outcome {
    try ProxyTests.batchdl(
      ["run", "manifest.yaml", "--report", "report.json", "--events", "events.jsonl", "--progress", "never"] + extra,
      in: fixture, environment: environment)
  }

  static func basic(_ user: String, _ password: String) -> String {
    "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
  }

  /// An nginx over TLS that passes `/rec/NAME` to `server`'s `/NAME` (so that the test server
  /// records every header a request over TLS carried) and redirects `/to-http/NAME` to `server`'s
  /// `/NAME` over plain HTTP.
  static func recordingNginx(in front: TestHTTPServer) throws -> NginxServer {
    try NginxServer(
      serverDirectives: """
            location /rec/ { proxy_pass http://127.0.0.1:\(front.port)/; }
            location ~ ^/to-http/(.*)$ { return 302 http://127.0.0.1:\(front.port)/$1; }

        """)
  }

  // MARK: - CVE-2018-1000007

  /// CVE-2018-1000007: curl sent a custom `Authorization` header to the host a redirect named.
  /// Here to `localhost` on the same port (the same server, another host) and to another server.
  @Test func customAuthorizationIsDroppedOnARedirectToAnotherHost() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    let port = fixture.server.port
    fixture.server.route("/a", .redirect(status: 302, location: "http://localhost:\(port)/a.bin"))
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    fixture.server.route("/b", .redirect(status: 307, location: "http://localhost:\(other.port)/b.bin"))
    other.route("/b.bin", .file(Self.body, etag: .strong("b")))
    fixture.manifest(
      ProxyTests.manifest(
        ["headers: {Authorization: \"Bearer \(Self.token)\"}"],
        tasks: ProxyTests.download("BASE/a", to: "a.bin") + ProxyTests.download("BASE/b", to: "b.bin")))
    let outcome = try Self.run(fixture)
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("a.bin", Self.body) && fixture.holds("b.bin", Self.body))
    #expect(fixture.server.requests(for: "/a").first?.header("authorization") == "Bearer \(Self.token)")
    let sameServer = try #require(fixture.server.requests(for: "/a.bin").first)
    #expect(sameServer.header("authorization") == nil, "localhost is another host than 127.0.0.1")
    let otherServer = try #require(other.requests(for: "/b.bin").first)
    #expect(otherServer.header("authorization") == nil)
    #expect(fixture.leaks(of: [Self.token], outputs: [outcome.output]).isEmpty)
  }

  // MARK: - CVE-2022-27774

  /// CVE-2022-27774: curl sent a URL's `user:password` (and `-u`) to the same host on another
  /// port or scheme. URL user-info, and `auth:`, to another port and to https on the same host.
  @Test func userPasswordIsDroppedOnARedirectToTheSameHostOnAnotherPortOrScheme() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    let nginx = try Self.recordingNginx(in: fixture.server)
    let port = fixture.server.port
    fixture.server.route("/u1", .redirect(status: 302, location: other.url("/u1.bin")))
    fixture.server.route("/u2", .redirect(status: 302, location: nginx.url("/rec/u2.bin")))
    fixture.server.route("/u3", .redirect(status: 302, location: "/u3.bin"))
    fixture.server.route("/t1", .redirect(status: 302, location: other.url("/t1.bin")))
    fixture.server.route("/t2", .redirect(status: 302, location: nginx.url("/rec/t2.bin")))
    for name in ["/u2.bin", "/u3.bin", "/t2.bin"] { fixture.server.route(name, .file(Self.body, etag: .strong("x"))) }
    for name in ["/u1.bin", "/t1.bin"] { other.route(name, .file(Self.body, etag: .strong("y"))) }
    let userURL = "http://ulrich:${PW}@127.0.0.1:\(port)"
    let tasks =
      ProxyTests.download("\(userURL)/u1", to: "u1.bin") + ProxyTests.download("\(userURL)/u2", to: "u2.bin")
      + ProxyTests.download("\(userURL)/u3", to: "u3.bin")
      + ProxyTests.download("BASE/t1", to: "t1.bin") + ["  auth: {user: tess, password: \"${PW}\"}"]
      + ProxyTests.download("BASE/t2", to: "t2.bin") + ["  auth: {user: tess, password: \"${PW}\"}"]
    fixture.manifest(ProxyTests.manifest(["tls: {ca_file: \(nginx.certificates.caCertificate)}"], tasks: tasks))
    let outcome = try Self.run(fixture, environment: ["PW": Self.password])
    #expect(outcome.status == 0, "\(outcome.output)")
    for name in ["u1", "u2", "u3", "t1", "t2"] { #expect(fixture.holds("\(name).bin", Self.body), "\(name)") }
    #expect(fixture.server.requests(for: "/u1").first?.header("authorization") == Self.basic("ulrich", Self.password))
    #expect(fixture.server.requests(for: "/t1").first?.header("authorization") == Self.basic("tess", Self.password))
    #expect(other.requests(for: "/u1.bin").first?.header("authorization") == nil, "another port")
    #expect(other.requests(for: "/t1.bin").first?.header("authorization") == nil, "another port")
    for name in ["/u2.bin", "/t2.bin"] {
      let hop = try #require(fixture.server.requests(for: name).first, "\(name)")
      #expect(hop.header("authorization") == nil, "\(name): another scheme")
      #expect(hop.header("x-forwarded-proto") == nil && hop.header("via") == nil)
    }
    #expect(nginx.requests().filter { $0.uri.hasPrefix("/rec/") }.allSatisfy { $0.authorization == nil })
    // The same origin keeps the URL's own credentials, as libcurl does.
    #expect(
      fixture.server.requests(for: "/u3.bin").first?.header("authorization") == Self.basic("ulrich", Self.password))
    #expect(fixture.leaks(of: [Self.password], outputs: [outcome.output]).isEmpty)
  }

  // MARK: - CVE-2022-27776

  /// CVE-2022-27776: curl sent custom `Authorization` and `Cookie` headers to the same host on
  /// another port or scheme.
  @Test func customAuthorizationAndCookieAreDroppedOnAPortOrSchemeChange() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    let nginx = try Self.recordingNginx(in: fixture.server)
    fixture.server.route("/p", .redirect(status: 302, location: other.url("/p.bin")))
    fixture.server.route("/s", .redirect(status: 302, location: nginx.url("/rec/s.bin")))
    fixture.server.route("/same", .redirect(status: 302, location: "/same.bin"))
    other.route("/p.bin", .file(Self.body, etag: .strong("p")))
    fixture.server.route("/s.bin", .file(Self.body, etag: .strong("s")))
    fixture.server.route("/same.bin", .file(Self.body, etag: .strong("m")))
    fixture.manifest(
      ProxyTests.manifest(
        [
          "headers: {Authorization: \"Bearer ${TOKEN}\", Cookie: \"sid=${COOKIE}\"}",
          "tls: {ca_file: \(nginx.certificates.caCertificate)}",
        ],
        tasks: ProxyTests.download("BASE/p", to: "p.bin") + ProxyTests.download("BASE/s", to: "s.bin")
          + ProxyTests.download("BASE/same", to: "same.bin")))
    let outcome = try Self.run(fixture, environment: ["TOKEN": Self.token, "COOKIE": Self.cookie])
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("p.bin", Self.body) && fixture.holds("s.bin", Self.body))
    let first = try #require(fixture.server.requests(for: "/p").first)
    #expect(first.header("authorization") == "Bearer \(Self.token)" && first.header("cookie") == "sid=\(Self.cookie)")
    let port = try #require(other.requests(for: "/p.bin").first)
    #expect(port.header("authorization") == nil && port.header("cookie") == nil, "\(port.headers)")
    let scheme = try #require(fixture.server.requests(for: "/s.bin").first)
    #expect(scheme.header("authorization") == nil && scheme.header("cookie") == nil, "\(scheme.headers)")
    let same = try #require(fixture.server.requests(for: "/same.bin").first)
    #expect(same.header("authorization") == "Bearer \(Self.token)", "the same origin keeps them")
    #expect(fixture.leaks(of: [Self.token, Self.cookie], outputs: [outcome.output]).isEmpty)
  }

  // MARK: - CVE-2021-22876, CVE-2020-8169

  /// CVE-2021-22876: curl put a URL's credentials in the `Referer` of a redirect's next request;
  /// CVE-2020-8169: part of a password with an `@` went to the DNS server as a host name after a
  /// redirect. batchdl sends no Referer at all; under strace, no system call carries the password
  /// and nothing is sent to port 53.
  @Test func noCredentialsInRefererOrDNSLookupsAfterARedirect() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    let port = fixture.server.port
    fixture.server.route("/r", .redirect(status: 302, location: "/r2"))
    fixture.server.route("/r2", .redirect(status: 302, location: other.url("/r3.bin")))
    fixture.server.route("/q", .redirect(status: 302, location: "http://localhost:\(port)/q.bin"))
    fixture.server.route("/q.bin", .file(Self.body, etag: .strong("q")))
    other.route("/r3.bin", .file(Self.body, etag: .strong("r")))
    // A password with an `@` (percent-encoded, as a URL must write it).
    let secretPart = "dnsleak-pw-71c"
    fixture.manifest(
      ProxyTests.manifest(
        [],
        tasks: ProxyTests.download("http://dora:at%40\(secretPart)@localhost:\(port)/r", to: "r.bin")
          + ProxyTests.download("BASE/q", to: "q.bin") + ["  auth: {user: dora, password: \"at@\(secretPart)\"}"]))
    let arguments = [
      "run", "manifest.yaml", "--report", "report.json", "--events", "events.jsonl", "--progress", "never",
    ]
    let outcome: ExternalTool.Outcome
    let strace = ExternalTool.find("strace")
    if let strace {
      outcome = try ExternalTool.run(
        strace,
        ["-f", "-s", "512", "-e", "trace=connect,sendto,sendmsg,write", "-o", "trace.txt", BinaryRunner.executable]
          + arguments, environment: ProxyTests.noProxyEnvironment, in: fixture.folder.path, timeout: 90)
    } else {
      outcome = try Self.run(fixture)
    }
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("r.bin", Self.body) && fixture.holds("q.bin", Self.body))
    let requests = fixture.server.requests + other.requests
    #expect(requests.count >= 5)
    for request in requests {
      #expect(request.header("referer") == nil, "\(request.path): \(request.headers)")
    }
    #expect(other.requests(for: "/r3.bin").first?.header("authorization") == nil)
    if strace != nil {
      let trace = fixture.folder.read("trace.txt") ?? ""
      #expect(!trace.isEmpty)
      #expect(!trace.contains("htons(53)"), "a DNS query")
      #expect(!trace.contains(secretPart), "the password in a system call's buffer")
    }
    #expect(fixture.leaks(of: [secretPart], outputs: [outcome.output]).isEmpty)
  }

  // MARK: - CVE-2024-11053, CVE-2025-0167

  /// CVE-2024-11053: after a redirect, curl gave the next host's netrc entry (a login without a
  /// password) the first host's password; CVE-2025-0167: the same through a `default` entry.
  /// `AccessTests.netrcCredentialsGoToTheirHostOnlyAndADefaultEntryInheritsNothing` covers a
  /// `default` entry without a login's password and `carol@host`; here each case after a redirect.
  @Test func aNetrcEntryWithoutAPasswordOrADefaultEntryInheritsNothing() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    for name in ["n1", "n2"] {
      fixture.server.route("/\(name)", .redirect(status: 302, location: "http://localhost:\(other.port)/\(name).bin"))
      other.route("/\(name).bin", .file(Self.body, etag: .strong(name)))
    }
    fixture.server.route("/n3", .redirect(status: 302, location: "http://bob@localhost:\(other.port)/n3.bin"))
    other.route("/n3.bin", .file(Self.body, etag: .strong("n3")))
    let first = "machine 127.0.0.1 login alice password \(Self.password)\n"
    fixture.folder.write("target", first + "machine localhost login alice\n")
    fixture.folder.write("default", first + "default login alice\n")
    fixture.folder.write("users", first + "machine localhost login alice password alices-other-pw\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        target:
          netrc: target
          tasks:
            - download: BASE/n1
              to: n1.bin
        fallback:
          netrc: default
          tasks:
            - download: BASE/n2
              to: n2.bin
        users:
          netrc: users
          tasks:
            - download: BASE/n3
              to: n3.bin
      """)
    let outcome = try Self.run(fixture)
    #expect(outcome.status == 0, "\(outcome.output)")
    for name in ["n1", "n2", "n3"] {
      #expect(fixture.holds("\(name).bin", Self.body))
      #expect(
        fixture.server.requests(for: "/\(name)").first?.header("authorization") == Self.basic("alice", Self.password))
      let hop = try #require(other.requests(for: "/\(name).bin").first)
      // `bob@` is the URL's own user: libcurl sends `bob:` (no password), never alice's.
      let sent = hop.header("authorization") ?? ""
      let decoded = String(decoding: Data(base64Encoded: String(sent.dropFirst(6))) ?? Data(), as: UTF8.self)
      #expect(name == "n3" ? decoded == "bob:" : sent.isEmpty, "\(name): \(hop.headers)")
    }
    #expect(fixture.leaks(of: [Self.password, "alices-other-pw"], outputs: [outcome.output]).isEmpty)
  }

  // MARK: - CVE-2025-14524

  /// CVE-2025-14524: curl sent an OAuth2 bearer token on across a redirect to another protocol.
  /// A bearer token in `headers:`, http -> https and https -> http on 127.0.0.1 (the ports differ
  /// too: one server cannot answer both schemes on one port).
  @Test func bearerTokensAreDroppedOnCrossProtocolRedirects() throws {
    let fixture = try RunFixture()
    let nginx = try Self.recordingNginx(in: fixture.server)
    fixture.server.route("/up", .redirect(status: 302, location: nginx.url("/rec/up.bin")))
    fixture.server.route("/up.bin", .file(Self.body, etag: .strong("u")))
    fixture.server.route("/down.bin", .file(Self.body, etag: .strong("d")))
    fixture.manifest(
      ProxyTests.manifest(
        ["headers: {Authorization: \"Bearer ${TOKEN}\"}", "tls: {ca_file: \(nginx.certificates.caCertificate)}"],
        tasks: ProxyTests.download("BASE/up", to: "up.bin")
          + ProxyTests.download(nginx.url("/to-http/down.bin"), to: "down.bin")))
    let outcome = try Self.run(fixture, environment: ["TOKEN": Self.token])
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("up.bin", Self.body) && fixture.holds("down.bin", Self.body))
    #expect(fixture.server.requests(for: "/up").first?.header("authorization") == "Bearer \(Self.token)")
    #expect(fixture.server.requests(for: "/up.bin").first?.header("authorization") == nil, "http -> https")
    #expect(nginx.requests(for: "/to-http/down.bin").first?.authorization == "Bearer \(Self.token)")
    let down = try #require(fixture.server.requests(for: "/down.bin").first)
    #expect(down.header("authorization") == nil, "https -> http")
  }

  // MARK: - CVE-2003-1605

  /// CVE-2003-1605: proxy credentials reached the origin. Through a tinyproxy `CONNECT` tunnel to
  /// nginx, which passes the request to the test server: every header that came through the
  /// tunnel is recorded. (`ProxyTests.proxyCredentialsAreWrittenNowhereAndNeverReachTheOrigin`
  /// checks nginx's `Authorization` and the plain and SOCKS paths.)
  @Test(.enabled(if: ProxyTests.tinyproxy, "tinyproxy is not installed (scripts/setup installs it)"))
  func proxyCredentialsNeverReachTheOriginThroughCONNECT() throws {
    let fixture = try RunFixture()
    let nginx = try Self.recordingNginx(in: fixture.server)
    let credentials = TinyProxy.Credentials(user: ProxyTests.proxyUser, password: ProxyTests.proxyPassword)
    let proxy = try TinyProxy(credentials: credentials, connectPorts: [nginx.port])
    fixture.server.route("/t.bin", .file(Self.body, etag: .strong("t")))
    fixture.manifest(
      ProxyTests.manifest(
        ["proxy: \(proxy.urlWithCredentials)", "tls: {ca_file: \(nginx.certificates.caCertificate)}"],
        tasks: ProxyTests.download(nginx.url("/rec/t.bin"), to: "t.bin")))
    let outcome = try Self.run(fixture)
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("t.bin", Self.body))
    #expect(proxy.requestLines() == ["CONNECT 127.0.0.1:\(nginx.port) HTTP/1.1"], "\(proxy.log())")
    let seen = try #require(fixture.server.requests(for: "/t.bin").first)
    #expect(seen.header("proxy-authorization") == nil && seen.header("authorization") == nil, "\(seen.headers)")
    let leaks = fixture.leaks(
      of: ProxyTests.spellings(user: ProxyTests.proxyUser, password: ProxyTests.proxyPassword),
      outputs: [outcome.output])
    #expect(leaks.isEmpty, "\(leaks)")
  }

  /// CVE-2003-1605, the second half: a redirect from http to https moves the request from
  /// `http_proxy` (with credentials) to `https_proxy` (another proxy, here a test server that
  /// records the `CONNECT` it gets and refuses it). The first proxy's credentials stay with it.
  @Test(.enabled(if: ProxyTests.tinyproxy, "tinyproxy is not installed (scripts/setup installs it)"))
  func proxyCredentialsNeverReachASecondProxyAfterARedirect() throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer()
    nginx.put("t.bin", Self.body)
    let credentials = TinyProxy.Credentials(user: ProxyTests.proxyUser, password: ProxyTests.proxyPassword)
    let first = try TinyProxy(credentials: credentials)
    let second = try TestHTTPServer()
    defer { second.stop() }
    second.route("127.0.0.1:\(nginx.port)", .status(403))
    fixture.server.route("/r", .redirect(status: 302, location: nginx.url("/t.bin")))
    fixture.manifest(
      ProxyTests.manifest(
        ["tls: {ca_file: \(nginx.certificates.caCertificate)}"], tasks: ProxyTests.download("BASE/r", to: "t.bin")))
    let outcome = try Self.run(
      fixture, environment: ["http_proxy": first.urlWithCredentials, "https_proxy": second.baseURL])
    #expect(first.requestLines(naming: fixture.server.url("/r")).count == 1, "\(first.log())")
    let connect = try #require(second.requests.first, "the https hop went to https_proxy: \(outcome.output)")
    #expect(connect.method == "CONNECT", "\(connect)")
    #expect(connect.header("proxy-authorization") == nil, "\(connect.headers)")
    #expect(connect.header("authorization") == nil)
    #expect(outcome.status == 1, "the second proxy refused the tunnel")
    #expect(nginx.requests(for: "/t.bin").isEmpty)
    let leaks = fixture.leaks(
      of: ProxyTests.spellings(user: ProxyTests.proxyUser, password: ProxyTests.proxyPassword),
      outputs: [outcome.output])
    #expect(leaks.isEmpty, "\(leaks)")
  }

  // MARK: - CVE-2016-5420, CVE-2022-27782

  /// CVE-2016-5420 and CVE-2022-27782: curl reused a connection (a TLS session) made with another
  /// client certificate, key or CA. `ConnectionPoolTests.sessionsOfOtherIdentitiesNeverShareAConnection`
  /// (CA, pin, TLS version, HTTP version) and `aWrongKeyPasswordFailsBesideTheRightOneOnTheSameCertificate`
  /// (key password) cover TLS; here the access settings: sessions with other `auth:` users, a
  /// netrc file, a proxy, and none, against one test server that numbers its connections. The
  /// proxy is the test server itself, so a connection shared with the proxied session would show.
  @Test func sessionsWithOtherCredentialsOrProxiesNeverShareAConnection() throws {
    let fixture = try RunFixture()
    let server = fixture.server
    let names = ["plain", "alice", "bob", "netrc", "proxied"]
    for name in names {
      for index in 0..<6 {
        let path = "/\(name)/f\(index).bin"
        let behavior = Behavior.file(FileResource.versionBytes(index + 1, length: 3000), etag: .strong("f\(index)"))
        server.route(path, behavior)
      }
    }
    fixture.folder.write("netrc-file", "machine 127.0.0.1 login nina password \(Self.password)\n")
    let settings = [
      "plain": "", "alice": "auth: {user: alice, password: \"${PW}\"}", "bob": "auth: {user: bob, password: \"${PW}\"}",
      "netrc": "netrc: netrc-file", "proxied": "proxy: \(server.baseURL)",
    ]
    var yaml = "version: 1\nsessions:\n"
    for name in names {
      yaml += "  \(name):\n    network: {max_concurrent: 2}\n"
      if let line = settings[name], !line.isEmpty { yaml += "    \(line)\n" }
      yaml += "    tasks:\n"
      // The proxied session's host exists only for the proxy (the test server, which answers a
      // request in absolute form as its own): it cannot be fetched but through it.
      let base = name == "proxied" ? "http://proxied.invalid" : "BASE"
      for index in 0..<6 {
        yaml += "      - download: \(base)/\(name)/f\(index).bin\n        to: \(name)/f\(index).bin\n"
      }
    }
    fixture.manifest(yaml)
    let outcome = try Self.run(fixture, environment: ["PW": Self.password])
    #expect(outcome.status == 0, "\(outcome.output)")
    for name in names {
      for index in 0..<6 {
        #expect(fixture.holds("\(name)/f\(index).bin", FileResource.versionBytes(index + 1, length: 3000)))
      }
    }
    func session(of request: RecordedRequest) -> String? {
      names.first { request.path.hasPrefix("/\($0)/") }
    }
    var connections: [Int: Set<String>] = [:]
    for request in server.requests {
      guard let name = session(of: request) else { continue }
      connections[request.connectionID, default: []].insert(name)
    }
    #expect(!connections.isEmpty)
    // Connections are reused within a session (else the test would prove nothing).
    #expect(connections.count < server.requests.count, "\(connections.count) connections")
    for (id, sessions) in connections {
      #expect(sessions.count == 1, "connection \(id) carried the requests of \(sessions.sorted())")
    }
    #expect(
      server.requests.filter { session(of: $0) == "proxied" }.allSatisfy { $0.header("host") == "proxied.invalid" })
  }

  // MARK: - CVE-2023-38545

  /// CVE-2023-38545: a host name over 255 bytes made libcurl's SOCKS5 code resolve it locally
  /// (and overflow a buffer). `ProxyTests.socks5hRefusesAHostNameOver255BytesWithoutResolvingIt`
  /// covers a task's URL; here the name comes from a redirect's Location.
  @Test(.enabled(if: ProxyTests.microsocks, "microsocks is not installed (scripts/setup installs it)"))
  func aRedirectToAHostNameOver255BytesThroughSocks5hIsRefused() throws {
    let proxy = try MicroSocks()
    let fixture = try RunFixture()
    let name = Array(repeating: String(repeating: "b", count: 60), count: 5).joined(separator: ".") + ".example"
    fixture.server.route("/r", .redirect(status: 302, location: "http://\(name)/x.bin"))
    fixture.manifest(
      ProxyTests.manifest(
        ["proxy: socks5h://127.0.0.1:\(proxy.port)", "headers: {X-Api-Key: \"${TOKEN}\"}"],
        tasks: ProxyTests.download("BASE/r", to: "x.bin")))
    let outcome = try Self.run(fixture, environment: ["TOKEN": Self.token])
    #expect(outcome.status == 1, "\(outcome.output)")
    #expect(!fixture.folder.exists("x.bin"))
    let error = try #require(try fixture.tasks()["x.bin"]?["error"] as? [String: Any], "\(outcome.output)")
    let message = (error["message"] as? String ?? "").lowercased()
    #expect(message.contains("255") || message.contains("too long"), "\(error)")
    #expect(proxy.connections() == ["127.0.0.1:\(fixture.server.port)"], "\(proxy.log())")
  }

  // MARK: - Report hygiene

  /// Effective and redirect URLs in what batchdl writes hold no credentials: a task URL with
  /// `user:${PW}@`, whose redirect ends at a 404, and a redirect whose Location itself carries
  /// user-info (a server's choice, a secret all the same). Checked in report.json, the events,
  /// `--junit`, the output of `run` and `status`, and the state folder.
  @Test func effectiveAndRedirectURLsInReportsHoldNoCredentials() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    let port = fixture.server.port
    let located = "located-pw-4f02"
    fixture.server.route("/e1", .redirect(status: 302, location: "/e1-missing.bin"))
    fixture.server.route(
      "/e2", .redirect(status: 302, location: "http://mallory:\(located)@127.0.0.1:\(other.port)/e2.bin"))
    fixture.server.route("/e3", .redirect(status: 302, location: "/e3.bin"))
    fixture.server.route("/e3.bin", .file(Self.body, etag: .strong("e3")))
    fixture.manifest(
      ProxyTests.manifest(
        [],
        tasks: ProxyTests.download("http://rita:${PW}@127.0.0.1:\(port)/e1", to: "e1.bin")
          + ProxyTests.download("BASE/e2", to: "e2.bin")
          + ProxyTests.download("http://rita:${PW}@127.0.0.1:\(port)/e3", to: "e3.bin")))
    let outcome = try Self.run(fixture, ["--junit", "junit.xml"], environment: ["PW": Self.password])
    #expect(outcome.status == 1, "\(outcome.output)")
    #expect(fixture.holds("e3.bin", Self.body))
    let status = try ProxyTests.batchdl(["status", "manifest.yaml"], in: fixture, environment: ["PW": Self.password])
    let spellings = [
      Self.password, Self.basic("rita", Self.password), located, Self.basic("mallory", located),
    ]
    var leaks = fixture.leaks(of: spellings, outputs: [outcome.output, status.output])
    let junit = fixture.folder.read("junit.xml") ?? ""
    #expect(!junit.isEmpty)
    leaks += spellings.filter { junit.contains($0) }.map { "junit.xml: \($0)" }
    #expect(leaks.isEmpty, "\(leaks)")
    let report = fixture.folder.read("report.json") ?? ""
    #expect(report.contains("e1-missing") || report.contains("404"), "the failure is reported: \(report.prefix(2000))")
  }
}
