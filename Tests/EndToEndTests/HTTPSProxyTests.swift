import Foundation
import TestServer
import TestSupport
import Testing

/// `proxy: https://...`: a real HTTPS proxy (nginx's stream module terminating TLS in front of a
/// tinyproxy, `HTTPSProxy`) trusted with the session's `tls.ca_file`. An http origin is sent to it
/// as a whole URL inside TLS; an https origin is a CONNECT inside TLS, TLS in TLS; a proxy whose
/// certificate is not trusted fails before any request is sent through it.
@Suite(
  .serialized,
  .enabled(if: HTTPSProxy.isAvailable, "nginx's stream module or tinyproxy is not installed (scripts/setup)"))
struct HTTPSProxyTests {
  static let body = FileResource.versionBytes(21, length: 16_000)

  @Test func anHTTPOriginIsFetchedThroughAnHTTPSProxy() throws {
    let proxy = try HTTPSProxy(credentials: .init(user: ProxyTests.proxyUser, password: ProxyTests.proxyPassword))
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    fixture.manifest(
      ProxyTests.manifest(
        ["proxy: \(proxy.urlWithCredentials)", "tls: {ca_file: \(proxy.certificates.caCertificate)}"],
        tasks: ProxyTests.download("BASE/a.bin", to: "a.bin")))
    let outcome = try ProxyTests.run(fixture)
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("a.bin", Self.body))
    #expect(
      proxy.tinyproxy.requestLines() == ["GET \(fixture.server.url("/a.bin")) HTTP/1.1"], "\(proxy.tinyproxy.log())")
    let seen = try #require(fixture.server.requests(for: "/a.bin").first)
    #expect(seen.header("via")?.contains("tinyproxy") == true)
    #expect(seen.header("proxy-authorization") == nil)
    let leaks = fixture.leaks(
      of: ProxyTests.spellings(user: ProxyTests.proxyUser, password: ProxyTests.proxyPassword),
      outputs: [outcome.output])
    #expect(leaks.isEmpty, "\(leaks)")
  }

  @Test func anHTTPSOriginIsTunnelledInsideTheProxysTLS() throws {
    let nginx = try NginxServer()
    nginx.put("t.bin", Self.body)
    let proxy = try HTTPSProxy(certificates: nginx.certificates, connectPorts: [nginx.port])
    let fixture = try RunFixture()
    fixture.manifest(
      ProxyTests.manifest(
        ["proxy: \(proxy.url)", "tls: {ca_file: \(nginx.certificates.caCertificate)}"],
        tasks: ProxyTests.download(nginx.url("/t.bin"), to: "t.bin")))
    let outcome = try ProxyTests.run(fixture)
    #expect(outcome.status == 0, "\(outcome.output)")
    #expect(fixture.holds("t.bin", Self.body))
    let lines = proxy.tinyproxy.requestLines()
    #expect(!lines.isEmpty && lines.allSatisfy { $0 == "CONNECT 127.0.0.1:\(nginx.port) HTTP/1.1" }, "\(lines)")
    #expect(nginx.requests(for: "/t.bin").count == 1)
    #expect(nginx.requests(for: "/t.bin").first?.proto == "HTTP/2.0", "HTTP/2 inside the tunnel inside TLS")
  }

  @Test func anHTTPSProxyWhoseCertificateIsNotTrustedFailsWithAClearError() throws {
    // The proxy's certificate is of a CA of its own; the session trusts another one.
    let proxy = try HTTPSProxy()
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(Self.body, etag: .strong("a")))
    fixture.manifest(
      ProxyTests.manifest(
        ["proxy: \(proxy.url)", "tls: {ca_file: \(proxy.certificates.otherCACertificate)}"],
        tasks: ProxyTests.download("BASE/a.bin", to: "a.bin")))
    let outcome = try ProxyTests.run(fixture)
    #expect(outcome.status == 1, "\(outcome.output)")
    #expect(!fixture.folder.exists("a.bin"))
    #expect(proxy.tinyproxy.requestLines().isEmpty, "nothing is sent through an untrusted proxy")
    #expect(fixture.server.requests.isEmpty)
    let error = try #require(try fixture.tasks()["a.bin"]?["error"] as? [String: Any], "\(outcome.output)")
    let message = (error["message"] as? String ?? "").lowercased()
    #expect(message.contains("proxy"), "the message says it is the proxy's certificate: \(error)")
    #expect(message.contains("certificate"), "\(error)")
    #expect(["tls", "proxy"].contains(error["code"] as? String ?? ""), "\(error)")
  }
}
