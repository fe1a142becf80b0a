import Foundation
import TestServer
import TestSupport
import Testing

/// Secret headers reach only the origin they were given for: never a host that a document from
/// the network names, nor a mirror on another origin. The other host records every header.
@Suite(.serialized) struct SecretOriginTests {
  static let token = "origin-bound-token-7d3f"

  @Test func aDocumentFromTheNetworkGetsNoSecretSentToTheHostsItNames() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    let body = FileResource.versionBytes(1, length: 20_000)
    let own = FileResource.versionBytes(3, length: 20_000)
    other.route("/f.bin", .file(FileResource(body: body, etag: .strong("f"))))
    fixture.server.route("/g.bin", .file(FileResource(body: own, etag: .strong("g"))))
    fixture.server.route(
      "/doc.meta4",
      .file(
        FileResource(
          text: MetalinkRunTests.document([
            ("f.bin", [other.url("/f.bin")], SHA256Digest.hex(body)),
            ("g.bin", [fixture.server.url("/g.bin")], SHA256Digest.hex(own)),
          ]), contentType: "application/metalink4+xml", etag: .strong("d"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          headers: {Authorization: "Bearer ${TOKEN}", X-Trace: plain}
          tasks:
            - metalink: BASE/doc.meta4
              to: m/
      """)
    let outcome = try fixture.run(environment: ["TOKEN": Self.token])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m/f.bin", body) && fixture.holds("m/g.bin", own))
    let elsewhere = try #require(other.requests(for: "/f.bin").first)
    #expect(elsewhere.header("authorization") == nil, "the document's host named another host")
    #expect(elsewhere.header("x-trace") == "plain", "headers that are not secret still go")
    #expect(fixture.server.requests(for: "/g.bin").first?.header("authorization") == "Bearer \(Self.token)")
    #expect(fixture.server.requests(for: "/doc.meta4").first?.header("authorization") == "Bearer \(Self.token)")
  }

  @Test func aMirrorOnAnotherOriginGetsNoSecret() throws {
    let fixture = try RunFixture()
    let mirror = try TestHTTPServer()
    defer { mirror.stop() }
    let body = FileResource.versionBytes(2, length: 20_000)
    fixture.server.route("/m.bin", .status(503))
    mirror.route("/m.bin", .file(FileResource(body: body, etag: .strong("m"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          headers: {X-Api-Key: "${TOKEN}"}
          tasks:
            - download: BASE/m.bin
              to: m.bin
              mirrors: [\(mirror.url("/m.bin"))]
      """)
    let outcome = try fixture.run(environment: ["TOKEN": Self.token])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m.bin", body))
    #expect(fixture.server.requests(for: "/m.bin").first?.header("x-api-key") == Self.token)
    let asked = try #require(mirror.requests(for: "/m.bin").first)
    #expect(asked.header("x-api-key") == nil)
  }

  @Test func aMirrorGivenHeadersOfItsOwnGetsThemAndOnlyIt() throws {
    let fixture = try RunFixture()
    let mirror = try TestHTTPServer()
    defer { mirror.stop() }
    let body = FileResource.versionBytes(2, length: 20_000)
    fixture.server.route("/m.bin", .status(503))
    mirror.route("/m.bin", .file(FileResource(body: body, etag: .strong("m"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          headers: {X-Api-Key: "${TOKEN}"}
          tasks:
            - download: BASE/m.bin
              to: m.bin
              mirrors:
                - url: \(mirror.url("/m.bin"))
                  headers: {X-Api-Key: "${MIRROR_TOKEN}", X-Mirror: yes}
      """)
    let outcome = try fixture.run(environment: ["TOKEN": Self.token, "MIRROR_TOKEN": "mirror-token-19"])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m.bin", body))
    let first = try #require(fixture.server.requests(for: "/m.bin").first)
    #expect(first.header("x-api-key") == Self.token && first.header("x-mirror") == nil)
    let asked = try #require(mirror.requests(for: "/m.bin").first)
    #expect(asked.header("x-api-key") == "mirror-token-19" && asked.header("x-mirror") == "yes")
    #expect(!(fixture.folder.read("report.json") ?? "").contains("mirror-token-19"))
    #expect(!(fixture.folder.read("events.jsonl") ?? "").contains("mirror-token-19"))
  }

  @Test func segmentsFromAMirrorWithHeadersOfItsOwnCarryThem() throws {
    let fixture = try RunFixture()
    let mirror = try TestHTTPServer()
    defer { mirror.stop() }
    let length = 4 << 20
    let body = FileResource.versionBytes(1, length: length)
    fixture.server.route("/s.bin", .file(.version(1, length: length, rateLimit: 4_000_000)))
    mirror.route("/s.bin", .file(.version(1, length: length, rateLimit: 4_000_000)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          headers: {X-Api-Key: "${TOKEN}"}
          network: {segments: 4, min_segment_size: 256KB, max_connections_per_host: 8}
          tasks:
            - download: BASE/s.bin
              to: s.bin
              sha256: \(SHA256Digest.hex(body))
              mirrors: [{url: "\(mirror.url("/s.bin"))", headers: {X-Api-Key: "${MIRROR_TOKEN}"}}]
      """)
    let outcome = try fixture.run(environment: ["TOKEN": Self.token, "MIRROR_TOKEN": "mirror-token-19"])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("s.bin", body))
    let mirrored = mirror.requests(for: "/s.bin")
    #expect(!mirrored.isEmpty)
    #expect(mirrored.allSatisfy { $0.header("x-api-key") == "mirror-token-19" })
    #expect(fixture.server.requests(for: "/s.bin").allSatisfy { $0.header("x-api-key") == Self.token })
  }

  @Test func aDocumentThatRedirectsToAnotherOriginGetsNoSecretThere() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    let body = FileResource.versionBytes(4, length: 10_000)
    fixture.server.route("/f.bin", .file(FileResource(body: body, etag: .strong("f"))))
    fixture.server.route("/doc.meta4", .redirect(status: 302, location: other.url("/doc.meta4")))
    other.route(
      "/doc.meta4",
      .file(
        FileResource(
          text: MetalinkRunTests.document([("f.bin", [fixture.server.url("/f.bin")], SHA256Digest.hex(body))]),
          contentType: "application/metalink4+xml", etag: .strong("d"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          headers: {X-Api-Key: "${TOKEN}"}
          tasks:
            - metalink: BASE/doc.meta4
              to: m/
      """)
    let outcome = try fixture.run(environment: ["TOKEN": Self.token])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("m/f.bin", body))
    #expect(fixture.server.requests(for: "/doc.meta4").first?.header("x-api-key") == Self.token)
    let redirected = try #require(other.requests(for: "/doc.meta4").first)
    #expect(redirected.header("x-api-key") == nil, "the redirect left the origin")
  }
}
