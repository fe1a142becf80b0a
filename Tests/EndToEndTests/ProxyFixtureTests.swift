import Foundation
import TestServer
import TestSupport
import Testing

/// The proxies the access tests run batchdl through (TestSupport's TinyProxy and MicroSocks), tried
/// with the curl command line first: each carries requests where the tests say it does, its log
/// shows them, and credentials set on it are required.
@Suite(.serialized) struct ProxyFixtureTests {
  static let curlPath = ExternalTool.find("curl")
  static let tinyproxy = TinyProxy.executable != nil && curlPath != nil
  static let microsocks = MicroSocks.executable != nil && curlPath != nil

  /// The proxy variables of the test's own environment, removed: curl goes where `-x` says only.
  static let noProxyEnvironment: [String: String?] = [
    "http_proxy": nil, "https_proxy": nil, "all_proxy": nil, "no_proxy": nil, "HTTP_PROXY": nil,
    "HTTPS_PROXY": nil, "ALL_PROXY": nil, "NO_PROXY": nil,
  ]

  /// Runs `curl -sS -o OUT -w '%{http_code} %{http_version}' arguments...`; returns the outcome and
  /// what it wrote to OUT.
  func curl(_ arguments: [String]) throws -> (ExternalTool.Outcome, String) {
    let folder = TemporaryDirectory()
    let out = folder.path + "/body"
    let outcome = try ExternalTool.run(
      try #require(Self.curlPath),
      ["-sS", "--max-time", "20", "-o", out, "-w", "%{http_code} %{http_version}"] + arguments,
      environment: Self.noProxyEnvironment, timeout: 30)
    return (outcome, (try? String(contentsOfFile: out, encoding: .utf8)) ?? "")
  }

  @Test(.enabled(if: tinyproxy, "tinyproxy or curl is not installed (scripts/setup installs them)"))
  func tinyproxyForwardsAPlainRequestToTheTestServer() throws {
    let server = try TestHTTPServer()
    defer { server.stop() }
    server.route("/a.txt", .text("through the proxy\n"))
    let proxy = try TinyProxy()
    let (outcome, body) = try curl(["-x", proxy.url, server.url("/a.txt")])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(outcome.stdout == "200 1.1")
    #expect(body == "through the proxy\n")
    #expect(proxy.requestLines(naming: server.url("/a.txt")).count == 1, "\(proxy.log())")
    // The origin saw tinyproxy's connection: it adds its Via header.
    let seen = try #require(server.requests(for: "/a.txt").first)
    #expect(seen.header("via")?.contains("tinyproxy") == true, "\(seen.headers)")
  }

  @Test(.enabled(if: tinyproxy, "tinyproxy or curl is not installed (scripts/setup installs them)"))
  func tinyproxyTunnelsTLSWithHTTP2ToNginx() throws {
    let nginx = try NginxServer()
    nginx.put("a.bin", FileResource.versionBytes(1, length: 5000))
    // CONNECT allowed to nginx's port only.
    let proxy = try TinyProxy(connectPorts: [nginx.port])
    let (outcome, _) = try curl([
      "-x", proxy.url, "--cacert", nginx.certificates.caCertificate, "--http2", nginx.url("/a.bin"),
    ])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(outcome.stdout == "200 2", "HTTP/2 inside the tunnel")
    #expect(
      proxy.requestLines(naming: "127.0.0.1:\(nginx.port)").first?.hasPrefix("CONNECT ") == true, "\(proxy.log())")
    #expect(nginx.requests(for: "/a.bin").map(\.proto) == ["HTTP/2.0"])

    // Another port is refused by the ConnectPort list: nothing reaches nginx.
    let other = try TinyProxy(connectPorts: [nginx.port == 443 ? 444 : 443])
    let (refused, _) = try curl(["-x", other.url, "--cacert", nginx.certificates.caCertificate, nginx.url("/a.bin")])
    #expect(refused.status != 0)
    #expect(nginx.requests(for: "/a.bin").count == 1)
  }

  @Test(.enabled(if: tinyproxy, "tinyproxy or curl is not installed (scripts/setup installs them)"))
  func tinyproxyRequiresItsCredentials() throws {
    let server = try TestHTTPServer()
    defer { server.stop() }
    server.route("/a.txt", .text("secret\n"))
    let proxy = try TinyProxy(credentials: .init(user: "proxyuser", password: "proxy-pass-7731"))
    let (without, _) = try curl(["-x", proxy.url, server.url("/a.txt")])
    #expect(without.stdout.hasPrefix("407 "), "\(without.output)")
    #expect(server.requests(for: "/a.txt").isEmpty)
    let (wrong, _) = try curl(["-x", "http://proxyuser:nope@127.0.0.1:\(proxy.port)", server.url("/a.txt")])
    // tinyproxy 1.11 answers a wrong password with 401 (a missing one with 407): refused either way.
    #expect(wrong.stdout.hasPrefix("401 ") || wrong.stdout.hasPrefix("407 "), "\(wrong.output)")
    #expect(server.requests(for: "/a.txt").isEmpty)
    let (with, body) = try curl(["-x", proxy.urlWithCredentials, server.url("/a.txt")])
    #expect(with.stdout == "200 1.1", "\(with.output)")
    #expect(body == "secret\n")
    // The origin never sees the proxy's credentials.
    let seen = try #require(server.requests(for: "/a.txt").first)
    #expect(seen.header("proxy-authorization") == nil, "\(seen.headers)")
  }

  @Test(.enabled(if: microsocks, "microsocks or curl is not installed (scripts/setup installs them)"))
  func microsocksResolvesTheNameItIsSent() throws {
    let server = try TestHTTPServer()
    defer { server.stop() }
    server.route("/a.txt", .text("through socks\n"))
    let proxy = try MicroSocks()
    // socks5h: curl sends the name `localhost`, microsocks resolves it (the test server listens on
    // 127.0.0.1 only; the fixture test takes what localhost resolves to there).
    let (outcome, body) = try curl(["-x", proxy.url, "http://localhost:\(server.port)/a.txt"])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(body == "through socks\n")
    #expect(proxy.connections() == ["localhost:\(server.port)"], "\(proxy.log())")

    let nginx = try NginxServer()
    nginx.put("a.bin", FileResource.versionBytes(1, length: 5000))
    let (tls, _) = try curl(["-x", proxy.url, "--cacert", nginx.certificates.caCertificate, nginx.url("/a.bin")])
    #expect(tls.stdout == "200 2", "\(tls.output)")
    #expect(proxy.connections().last == "127.0.0.1:\(nginx.port)")
  }

  @Test(.enabled(if: microsocks, "microsocks or curl is not installed (scripts/setup installs them)"))
  func microsocksRequiresItsCredentials() throws {
    let server = try TestHTTPServer()
    defer { server.stop() }
    server.route("/a.txt", .text("secret\n"))
    let proxy = try MicroSocks(credentials: .init(user: "socksuser", password: "socks-pass-5521"))
    let (without, _) = try curl(["-x", proxy.url, server.url("/a.txt")])
    // curl's CURLE_PROXY (97): no authentication method was acceptable.
    #expect(without.status == 97, "\(without.output)")
    #expect(server.requests(for: "/a.txt").isEmpty)
    #expect(proxy.connections().isEmpty)
    let (with, body) = try curl(["-x", proxy.urlWithCredentials, server.url("/a.txt")])
    #expect(with.status == 0, "\(with.output)")
    #expect(body == "secret\n")
    #expect(proxy.connections() == ["127.0.0.1:\(server.port)"])
  }
}
