import Foundation
import TestServer
import TestSupport
import Testing

/// A session's `proxy:` and `no_proxy:` (and, without them, the proxy variables of the
/// environment), through real proxies on 127.0.0.1: tinyproxy for HTTP (plain requests, and HTTPS
/// tunnelled with CONNECT, HTTP/2 inside), microsocks for SOCKS5h. Each proxy's log proves what
/// went through it; proxy credentials are secrets and never reach an origin.
@Suite(.serialized) struct ProxyTests {
  static let tinyproxy = TinyProxy.executable != nil
  static let microsocks = MicroSocks.executable != nil
  static let both = tinyproxy && microsocks

  /// Every proxy variable libcurl or batchdl could read, removed: a test sets the ones it means.
  static let noProxyEnvironment: [String: String?] = [
    "http_proxy": nil, "https_proxy": nil, "all_proxy": nil, "no_proxy": nil, "HTTP_PROXY": nil,
    "HTTPS_PROXY": nil, "ALL_PROXY": nil, "NO_PROXY": nil,
  ]

  /// `batchdl ARGUMENTS` in the fixture's folder with the proxy variables of the test's environment
  /// removed and `environment` set.
  static func batchdl(
    _ arguments: [String], in fixture: RunFixture, environment: [String: String] = [:]
  ) throws -> ExternalTool.Outcome {
    var changes = noProxyEnvironment
    for (name, value) in environment { changes[name] = value }
    return try ExternalTool.run(
      BinaryRunner.executable, arguments, environment: changes, in: fixture.folder.path, timeout: 90)
  }

  /// `batchdl run manifest.yaml --report report.json --events events.jsonl --progress never`.
  static func run(_ fixture: RunFixture, environment: [String: String] = [:]) throws -> ExternalTool.Outcome {
    try batchdl(
      ["run", "manifest.yaml", "--report", "report.json", "--events", "events.jsonl", "--progress", "never"],
      in: fixture, environment: environment)
  }

  /// A manifest of one session `s` with `settings` (YAML lines of the session) and `tasks` (the
  /// task list's lines, from column 0).
  static func manifest(_ settings: [String], tasks: [String]) -> String {
    let lines = (settings + ["retry: {attempts: 1}"]).map { "    " + $0 }.joined(separator: "\n")
    let items = tasks.map { "      " + $0 }.joined(separator: "\n")
    return "version: 1\nsessions:\n  s:\n\(lines)\n    tasks:\n\(items)\n"
  }

  static func download(_ url: String, to: String) -> [String] { ["- download: \(url)", "  to: \(to)"] }

  static let body = FileResource.versionBytes(7, length: 20_000)
  static let other = FileResource.versionBytes(8, length: 20_000)

  @Test(.enabled(if: tinyproxy, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func anHTTPOriginIsFetchedThroughTinyproxy() throws {
    let fixture = try RunFixture()
    let proxy = try TinyProxy()
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    fixture.manifest(Self.manifest(["proxy: \(proxy.url)"], tasks: Self.download("BASE/a.bin", to: "a.bin")))
    let outcome = try Self.run(fixture)
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("a.bin", Self.body))
    #expect(proxy.requestLines(naming: fixture.server.url("/a.bin")).count == 1, "\(proxy.log())")
    let seen = try #require(fixture.server.requests(for: "/a.bin").first)
    #expect(seen.header("via")?.contains("tinyproxy") == true, "the origin saw the proxy's connection")
  }

  @Test(.enabled(if: tinyproxy, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func httpsThroughTinyproxyIsTunnelledWithHTTP2Inside() throws {
    let nginx = try NginxServer()
    let proxy = try TinyProxy(connectPorts: [nginx.port])
    let fixture = try RunFixture()
    var tasks: [String] = []
    for index in 0..<3 {
      nginx.put("f\(index).bin", FileResource.versionBytes(index + 1, length: 8000))
      tasks += Self.download(nginx.url("/f\(index).bin"), to: "f\(index).bin")
    }
    fixture.manifest(
      Self.manifest(
        [
          "proxy: \(proxy.url)", "tls: {ca_file: \(nginx.certificates.caCertificate)}",
          "network: {http_version: 2}",
        ], tasks: tasks))
    let outcome = try Self.run(fixture)
    #expect(outcome.status == 0, "\(outcome.output)")
    for index in 0..<3 {
      #expect(fixture.holds("f\(index).bin", FileResource.versionBytes(index + 1, length: 8000)))
    }
    let tunnels = proxy.requestLines(naming: "127.0.0.1:\(nginx.port)")
    #expect(!tunnels.isEmpty && tunnels.allSatisfy { $0.hasPrefix("CONNECT ") }, "\(proxy.log())")
    let served = nginx.requests().filter { $0.uri.hasPrefix("/f") }
    #expect(served.count == 3)
    #expect(served.allSatisfy { $0.proto == "HTTP/2.0" }, "nginx offers h2: \(served.map(\.proto))")
    #expect(served.allSatisfy { $0.authorization == nil })
  }

  @Test(.enabled(if: microsocks, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func socks5hSendsTheNameToMicrosocks() throws {
    let proxy = try MicroSocks()
    let nginx = try NginxServer()
    nginx.put("t.bin", Self.other)
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    // The names are resolved by the proxy: its log shows the name batchdl sent, not an address.
    let plain = "http://localhost:\(fixture.server.port)/a.bin"
    let tls = "https://localhost:\(nginx.port)/t.bin"
    fixture.manifest(
      Self.manifest(
        ["proxy: \(proxy.url)", "tls: {ca_file: \(nginx.certificates.caCertificate)}"],
        tasks: Self.download(plain, to: "a.bin") + Self.download(tls, to: "t.bin")))
    let outcome = try Self.run(fixture)
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("a.bin", Self.body) && fixture.holds("t.bin", Self.other))
    let connections = Set(proxy.connections())
    #expect(connections == ["localhost:\(fixture.server.port)", "localhost:\(nginx.port)"], "\(proxy.log())")
    #expect(nginx.requests(for: "/t.bin").map(\.proto) == ["HTTP/2.0"])
  }

  @Test(.enabled(if: tinyproxy, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func proxyNoneBypassesAnEnvironmentProxy() throws {
    let refusing = try RefusedPort()
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    let environment = [
      "http_proxy": "http://127.0.0.1:\(refusing.port)", "all_proxy": "http://127.0.0.1:\(refusing.port)",
    ]
    // The environment's proxy is used without `proxy:` (and refuses the connection)...
    fixture.manifest(Self.manifest([], tasks: Self.download("BASE/a.bin", to: "a.bin")))
    let refused = try Self.run(fixture, environment: environment)
    #expect(refused.status == 1, "\(refused.output)")
    #expect(fixture.server.requests(for: "/a.bin").isEmpty)
    // ...and `proxy: none` goes straight to the origin.
    fixture.manifest(Self.manifest(["proxy: none"], tasks: Self.download("BASE/a.bin", to: "a.bin")))
    let direct = try Self.run(fixture, environment: environment)
    #expect(direct.status == 0, "\(direct.output)")
    #expect(fixture.holds("a.bin", Self.body))
    #expect(fixture.server.requests(for: "/a.bin").first?.header("via") == nil)
  }

  @Test(.enabled(if: tinyproxy, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func theEnvironmentProxiesApplyWhenTheManifestNamesNone() throws {
    let httpProxy = try TinyProxy()
    let httpsProxy = try TinyProxy()
    let nginx = try NginxServer()
    nginx.put("t.bin", Self.other)
    let fixture = try RunFixture()
    let direct = try TestHTTPServer()
    defer { direct.stop() }
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    direct.route("/d.bin", .file(Self.other, etag: .strong("d")))
    let bypassed = "http://localhost:\(direct.port)/d.bin"
    fixture.manifest(
      Self.manifest(
        ["tls: {ca_file: \(nginx.certificates.caCertificate)}"],
        tasks: Self.download("BASE/a.bin", to: "a.bin") + Self.download(nginx.url("/t.bin"), to: "t.bin")
          + Self.download(bypassed, to: "d.bin")))
    let outcome = try Self.run(
      fixture,
      environment: ["http_proxy": httpProxy.url, "https_proxy": httpsProxy.url, "no_proxy": "localhost"])
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(
      fixture.holds("a.bin", Self.body) && fixture.holds("t.bin", Self.other) && fixture.holds("d.bin", Self.other))
    #expect(httpProxy.requestLines() == ["GET \(fixture.server.url("/a.bin")) HTTP/1.1"], "\(httpProxy.log())")
    #expect(
      httpsProxy.requestLines().allSatisfy { $0 == "CONNECT 127.0.0.1:\(nginx.port) HTTP/1.1" }
        && !httpsProxy.requestLines().isEmpty, "\(httpsProxy.log())")
    #expect(direct.requests(for: "/d.bin").first?.header("via") == nil, "no_proxy: localhost goes direct")
  }

  @Test(.enabled(if: microsocks, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func theEnvironmentAllProxyReachesASocksProxy() throws {
    let proxy = try MicroSocks()
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    fixture.manifest(Self.manifest([], tasks: Self.download("BASE/a.bin", to: "a.bin")))
    let outcome = try Self.run(fixture, environment: ["all_proxy": proxy.url])
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("a.bin", Self.body))
    #expect(proxy.connections() == ["127.0.0.1:\(fixture.server.port)"], "\(proxy.log())")
  }

  @Test(.enabled(if: tinyproxy, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func noProxyInTheManifestGoesDirect() throws {
    let proxy = try TinyProxy()
    let fixture = try RunFixture()
    let direct = try TestHTTPServer()
    defer { direct.stop() }
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    direct.route("/d.bin", .file(Self.other, etag: .strong("d")))
    fixture.manifest(
      Self.manifest(
        ["proxy: \(proxy.url)", "no_proxy: [localhost]"],
        tasks: Self.download("BASE/a.bin", to: "a.bin")
          + Self.download("http://localhost:\(direct.port)/d.bin", to: "d.bin")))
    let outcome = try Self.run(fixture)
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("a.bin", Self.body) && fixture.holds("d.bin", Self.other))
    #expect(proxy.requestLines() == ["GET \(fixture.server.url("/a.bin")) HTTP/1.1"], "\(proxy.log())")
    #expect(fixture.server.requests(for: "/a.bin").first?.header("via")?.contains("tinyproxy") == true)
    #expect(direct.requests(for: "/d.bin").first?.header("via") == nil)
  }

  /// The manifest's `proxy:` decides alone: the environment's `no_proxy` (here `*`, everything
  /// direct) is not read for it, as `proxy:` stands for all of the environment's proxy settings.
  /// (libcurl reads `no_proxy` even when CURLOPT_PROXY is set, unless CURLOPT_NOPROXY is.)
  @Test(.enabled(if: tinyproxy, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func anEnvironmentNoProxyDoesNotUndoTheManifestsProxy() throws {
    let proxy = try TinyProxy()
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    fixture.manifest(Self.manifest(["proxy: \(proxy.url)"], tasks: Self.download("BASE/a.bin", to: "a.bin")))
    let outcome = try Self.run(fixture, environment: ["no_proxy": "*", "NO_PROXY": "*"])
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(proxy.requestLines() == ["GET \(fixture.server.url("/a.bin")) HTTP/1.1"], "\(proxy.log())")
  }

  static let proxyUser = "proxyuser"
  static let proxyPassword = "proxy-pass-41e9c2"
  static let socksPassword = "socks-pass-8d07aa"

  /// Every spelling of a proxy password that could be written: itself, and inside the Base64 of
  /// a `Proxy-Authorization: Basic` header.
  static func spellings(user: String, password: String) -> [String] {
    [password, Data("\(user):\(password)".utf8).base64EncodedString()]
  }

  @Test(.enabled(if: both, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func proxyCredentialsAreWrittenNowhereAndNeverReachTheOrigin() throws {
    let credentials = TinyProxy.Credentials(user: Self.proxyUser, password: Self.proxyPassword)
    let http = try TinyProxy(credentials: credentials)
    let socks = try MicroSocks(credentials: .init(user: "socksuser", password: Self.socksPassword))
    let nginx = try NginxServer()
    nginx.put("t.bin", Self.other)
    let tunnel = try TinyProxy(credentials: credentials, connectPorts: [nginx.port])
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    fixture.server.route("/s.bin", .file(Self.other, etag: .strong("s")))
    // Written in the manifest itself, as users do: `plan` and `validate` read it too.
    fixture.manifest(
      """
      version: 1
      sessions:
        h:
          proxy: \(http.urlWithCredentials)
          retry: {attempts: 1}
          tasks:
            - download: BASE/a.bin
              to: a.bin
        t:
          proxy: \(tunnel.urlWithCredentials)
          tls: {ca_file: \(nginx.certificates.caCertificate)}
          retry: {attempts: 1}
          tasks:
            - download: \(nginx.url("/t.bin"))
              to: t.bin
        s:
          proxy: \(socks.urlWithCredentials)
          retry: {attempts: 1}
          tasks:
            - download: BASE/s.bin
              to: s.bin
      """)
    let outcome = try Self.run(fixture)
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(
      fixture.holds("a.bin", Self.body) && fixture.holds("t.bin", Self.other) && fixture.holds("s.bin", Self.other))
    #expect(http.requestLines(naming: fixture.server.url("/a.bin")).count == 1, "\(http.log())")
    #expect(!tunnel.requestLines(naming: "127.0.0.1:\(nginx.port)").isEmpty, "\(tunnel.log())")
    #expect(socks.connections() == ["127.0.0.1:\(fixture.server.port)"], "\(socks.log())")
    // The origins never see the proxy's credentials, through a plain request or a tunnel.
    for request in fixture.server.requests {
      #expect(request.header("proxy-authorization") == nil, "\(request.path): \(request.headers)")
      #expect(request.header("authorization") == nil)
    }
    #expect(nginx.requests(for: "/t.bin").allSatisfy { $0.authorization == nil })

    let plan = try Self.batchdl(["plan", "manifest.yaml"], in: fixture)
    let validate = try Self.batchdl(["validate", "manifest.yaml"], in: fixture)
    #expect(validate.status == 0, "\(validate.output)")
    let spellings =
      Self.spellings(user: Self.proxyUser, password: Self.proxyPassword)
      + Self.spellings(user: "socksuser", password: Self.socksPassword)
    let leaks = fixture.leaks(
      of: spellings,
      outputs: [outcome.stdout, outcome.stderr, plan.stdout, plan.stderr, validate.stdout, validate.stderr])
    #expect(leaks.isEmpty, "\(leaks)")
  }

  @Test(.enabled(if: tinyproxy, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func aRefusedProxyPasswordFailsWithoutShowingIt() throws {
    let proxy = try TinyProxy(credentials: .init(user: Self.proxyUser, password: Self.proxyPassword))
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    let wrong = "wrong-proxy-pass-7f31"
    fixture.manifest(
      Self.manifest(
        ["proxy: http://\(Self.proxyUser):\(wrong)@127.0.0.1:\(proxy.port)"],
        tasks: Self.download("BASE/a.bin", to: "a.bin")))
    let outcome = try Self.run(fixture)
    #expect(outcome.status == 1, "\(outcome.output)")
    #expect(!fixture.folder.exists("a.bin"))
    #expect(fixture.server.requests(for: "/a.bin").isEmpty)
    let error = try #require(try fixture.tasks()["a.bin"]?["error"] as? [String: Any])
    // tinyproxy 1.11 answers a wrong password with 401 (a missing one with 407).
    #expect(["http-401", "http-407"].contains(error["code"] as? String ?? ""), "\(error)")
    let leaks = fixture.leaks(
      of: Self.spellings(user: Self.proxyUser, password: wrong), outputs: [outcome.stdout, outcome.stderr])
    #expect(leaks.isEmpty, "\(leaks)")
  }

  @Test(.enabled(if: tinyproxy, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func aRedirectToAnotherOriginKeepsTheSessionProxyAndItsCredentials() throws {
    let credentials = TinyProxy.Credentials(user: Self.proxyUser, password: Self.proxyPassword)
    let proxy = try TinyProxy(credentials: credentials)
    // A second proxy in the environment: a redirect must not move the request to it.
    let second = try TinyProxy()
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    fixture.server.route("/r", .redirect(status: 302, location: other.url("/b.bin")))
    other.route("/b.bin", .file(Self.body, etag: .strong("b")))
    fixture.manifest(
      Self.manifest(["proxy: \(proxy.urlWithCredentials)"], tasks: Self.download("BASE/r", to: "b.bin")))
    let outcome = try Self.run(fixture, environment: ["http_proxy": second.url, "all_proxy": second.url])
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("b.bin", Self.body))
    #expect(proxy.requestLines(naming: fixture.server.url("/r")).count == 1, "\(proxy.log())")
    #expect(proxy.requestLines(naming: other.url("/b.bin")).count == 1, "the redirect's target went through it too")
    #expect(second.requestLines().isEmpty, "\(second.log())")
    let target = try #require(other.requests(for: "/b.bin").first)
    #expect(target.header("proxy-authorization") == nil && target.header("authorization") == nil, "\(target.headers)")
    #expect(target.header("via")?.contains("tinyproxy") == true)
    #expect(fixture.server.requests(for: "/r").first?.header("proxy-authorization") == nil)
    let leaks = fixture.leaks(
      of: Self.spellings(user: Self.proxyUser, password: Self.proxyPassword), outputs: [outcome.stdout, outcome.stderr])
    #expect(leaks.isEmpty, "\(leaks)")
  }

  /// tinyproxy removes `Proxy-Authorization` before it forwards a request, so only a request that
  /// goes direct shows whether batchdl would send it to an origin: a redirect to a `no_proxy` host.
  @Test(.enabled(if: tinyproxy, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func aRedirectToANoProxyHostGoesDirectWithoutTheProxyCredentials() throws {
    let proxy = try TinyProxy(credentials: .init(user: Self.proxyUser, password: Self.proxyPassword))
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    let target = "http://localhost:\(other.port)/b.bin"
    fixture.server.route("/r", .redirect(status: 302, location: target))
    other.route("/b.bin", .file(Self.body, etag: .strong("b")))
    fixture.manifest(
      Self.manifest(
        ["proxy: \(proxy.urlWithCredentials)", "no_proxy: [localhost]"], tasks: Self.download("BASE/r", to: "b.bin")))
    let outcome = try Self.run(fixture)
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("b.bin", Self.body))
    #expect(proxy.requestLines() == ["GET \(fixture.server.url("/r")) HTTP/1.1"], "\(proxy.log())")
    let seen = try #require(other.requests(for: "/b.bin").first)
    #expect(seen.header("via") == nil, "no_proxy holds for a redirect's target")
    #expect(seen.header("proxy-authorization") == nil && seen.header("authorization") == nil, "\(seen.headers)")
  }

  @Test(.enabled(if: microsocks, "tinyproxy or microsocks is not installed (scripts/setup installs them)"))
  func socks5hRefusesAHostNameOver255BytesWithoutResolvingIt() throws {
    let proxy = try MicroSocks()
    let fixture = try RunFixture()
    // 5 labels of 60 bytes and `.example`: 312 bytes, a name SOCKS5 cannot carry (one length byte).
    let name = Array(repeating: String(repeating: "a", count: 60), count: 5).joined(separator: ".") + ".example"
    fixture.manifest(
      Self.manifest(["proxy: \(proxy.url)"], tasks: Self.download("http://\(name)/a.bin", to: "a.bin")))
    // Under strace where it is installed: a local resolve would read /etc/hosts (glibc's getaddrinfo
    // does for any name) or send to port 53.
    let strace = ExternalTool.find("strace")
    let arguments = [
      "run", "manifest.yaml", "--report", "report.json", "--events", "events.jsonl", "--progress", "never",
    ]
    let outcome: ExternalTool.Outcome
    if let strace {
      outcome = try ExternalTool.run(
        strace, ["-f", "-e", "trace=openat,connect,sendto", "-o", "trace.txt", BinaryRunner.executable] + arguments,
        environment: Self.noProxyEnvironment, in: fixture.folder.path, timeout: 90)
    } else {
      outcome = try Self.run(fixture)
    }
    #expect(outcome.status != 0, "\(outcome.output)")
    #expect(!fixture.folder.exists("a.bin"))
    if let error = try fixture.tasks()["a.bin"]?["error"] as? [String: Any] {
      let message = (error["message"] as? String ?? "").lowercased()
      #expect(message.contains("255") || message.contains("too long"), "\(error)")
      #expect(!message.contains("resolve host"), "\(error)")
    } else {
      // Refused as a manifest error before anything is sent: it says why, at its place.
      #expect(outcome.stderr.contains("255") || outcome.stderr.lowercased().contains("too long"), "\(outcome.output)")
    }
    #expect(proxy.connections().isEmpty, "\(proxy.log())")
    if strace != nil {
      let trace = fixture.folder.read("trace.txt") ?? ""
      #expect(!trace.isEmpty)
      #expect(!trace.contains("/etc/hosts"), "a local resolve")
      #expect(!trace.contains("htons(53)"), "a DNS query")
    }
  }
}
