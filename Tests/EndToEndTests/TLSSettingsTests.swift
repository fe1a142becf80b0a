import Foundation
import TestServer
import TestSupport
import Testing

/// A session's `tls:` settings against a real nginx whose certificate a throw-away CA issued:
/// nothing is trusted that the system's store or the session does not trust, a pin is a pin, a
/// client certificate is presented with its key's password, and that password goes nowhere else.
@Suite(.serialized) struct TLSSettingsTests {
  /// Runs one download of `/a.bin` from `nginx` with `tls` as the session's settings line.
  func download(from nginx: NginxServer, tls: String, extra: String = "") throws -> (RunFixture, BinaryRunner.Outcome) {
    nginx.put("a.bin", FileResource.versionBytes(1, length: 5000))
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          \(tls)
          retry: {attempts: 1}
      \(extra)
          tasks:
            - download: \(nginx.url("/a.bin"))
              to: a.bin
      """)
    return (fixture, try fixture.run())
  }

  func error(_ fixture: RunFixture) throws -> [String: Any] {
    try #require(try fixture.tasks()["a.bin"]?["error"] as? [String: Any])
  }

  @Test func aPrivateCAIsTrustedOnlyThroughCAFile() throws {
    let nginx = try NginxServer()
    let (untrusting, refused) = try download(from: nginx, tls: "")
    #expect(refused.status == 1)
    #expect(!untrusting.folder.exists("a.bin"))
    let failure = try error(untrusting)
    #expect(failure["code"] as? String == "tls")
    #expect((failure["message"] as? String)?.contains("tls.ca_file") == true, "\(failure)")
    #expect(refused.output.contains("tls.ca_file"), "the failure line says what to set")

    let (trusting, accepted) = try download(from: nginx, tls: "tls: {ca_file: \(nginx.certificates.caCertificate)}")
    #expect(accepted.status == 0, "\(accepted.stderr)")
    #expect(trusting.holds("a.bin", FileResource.versionBytes(1, length: 5000)))

    let (other, wrongCA) = try download(
      from: nginx, tls: "tls: {ca_file: \(nginx.certificates.otherCACertificate)}")
    #expect(wrongCA.status == 1)
    #expect(try error(other)["code"] as? String == "tls")
  }

  @Test func aCAFolderIsTrustedThroughCAPath() throws {
    let nginx = try NginxServer()
    // OpenSSL finds a CA in a folder by its subject hash: HASH.0.
    let folder = nginx.folder.path + "/capath"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let hash = try ExternalTool.run(
      "/usr/bin/openssl", ["x509", "-hash", "-noout", "-in", nginx.certificates.caCertificate]
    ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    try FileManager.default.copyItem(atPath: nginx.certificates.caCertificate, toPath: folder + "/\(hash).0")
    let (fixture, outcome) = try download(from: nginx, tls: "tls: {ca_path: \(folder)}")
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("a.bin", FileResource.versionBytes(1, length: 5000)))
  }

  @Test func aPinnedPublicKeyMustBeTheServers() throws {
    let nginx = try NginxServer()
    let ca = nginx.certificates.caCertificate
    let (_, byHash) = try download(
      from: nginx, tls: "tls: {ca_file: \(ca), pinned_pubkey: \"\(nginx.certificates.serverPin)\"}")
    #expect(byHash.status == 0, "\(byHash.stderr)")
    let (_, byFile) = try download(
      from: nginx, tls: "tls: {ca_file: \(ca), pinned_pubkey: \(nginx.certificates.serverPublicKey)}")
    #expect(byFile.status == 0, "\(byFile.stderr)")
    let (wrong, refused) = try download(
      from: nginx, tls: "tls: {ca_file: \(ca), pinned_pubkey: \"\(nginx.certificates.otherPin)\"}")
    #expect(refused.status == 1)
    #expect(!wrong.folder.exists("a.bin"))
    let failure = try error(wrong)
    #expect(failure["code"] as? String == "tls")
    #expect((failure["message"] as? String)?.contains("tls.pinned_pubkey") == true, "\(failure)")
  }

  @Test func aServerBelowMinVersionIsRefused() throws {
    let nginx = try NginxServer(serverDirectives: "ssl_protocols TLSv1.2;")
    let ca = nginx.certificates.caCertificate
    let (_, twelve) = try download(from: nginx, tls: "tls: {ca_file: \(ca), min_version: 1.2}")
    #expect(twelve.status == 0, "\(twelve.stderr)")
    let (refused, thirteen) = try download(from: nginx, tls: "tls: {ca_file: \(ca), min_version: \"1.3\"}")
    #expect(thirteen.status == 1)
    #expect(try error(refused)["code"] as? String == "tls")
    #expect((try error(refused)["message"] as? String)?.contains("tls.min_version") == true)
  }

  @Test func aClientCertificateIsPresentedAndItsPasswordStaysSecret() throws {
    let nginx = try NginxServer(clientCertificates: true)
    let certificates = nginx.certificates
    let ca = certificates.caCertificate
    let (without, refused) = try download(from: nginx, tls: "tls: {ca_file: \(ca)}")
    #expect(refused.status == 1)
    #expect(!without.folder.exists("a.bin"))
    #expect(nginx.requests().last?.status == 400, "nginx answers 400 to a request without a certificate")

    let client = "client_cert: \(certificates.clientCertificate), client_key: \(certificates.clientKey)"
    let (fixture, outcome) = try download(
      from: nginx, tls: "tls: {ca_file: \(ca), \(client), key_password: \"\(certificates.clientKeyPassword)\"}")
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("a.bin", FileResource.versionBytes(1, length: 5000)))
    #expect(nginx.requests().last?.status == 200)
    let plan = try BinaryRunner.run(["plan", "manifest.yaml", "--json"], in: fixture.folder.path)
    #expect(plan.status == 0, "\(plan.stderr)")
    #expect(fixture.leaks(of: [certificates.clientKeyPassword], outputs: [outcome.output, plan.output]) == [])

    let (badPassword, wrong) = try download(
      from: nginx, tls: "tls: {ca_file: \(ca), \(client), key_password: not-the-password}")
    #expect(wrong.status == 1)
    #expect(try error(badPassword)["code"] as? String == "tls")
    #expect(!wrong.output.contains("not-the-password"))
  }

  @Test func aMetalinkDocumentByURLIsFetchedWithTheSessionsTrust() throws {
    // The descriptor is fetched over HTTPS too: the same CA, the same protocol.
    let nginx = try NginxServer()
    let body = FileResource.versionBytes(2, length: 20_000)
    nginx.put("files/one.bin", body)
    let document = """
      <?xml version="1.0" encoding="UTF-8"?>
      <metalink xmlns="urn:ietf:params:xml:ns:metalink">
        <file name="one.bin">
          <size>\(body.count)</size>
          <hash type="sha-256">\(SHA256Digest.hex(body))</hash>
          <url>\(nginx.url("/files/one.bin"))</url>
        </file>
      </metalink>
      """
    nginx.put("one.meta4", Array(document.utf8))
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tls: {ca_file: \(nginx.certificates.caCertificate)}
          tasks:
            - metalink: \(nginx.url("/one.meta4"))
              to: mirror/
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("mirror/one.bin", body))
    #expect(nginx.requests(for: "/one.meta4").map(\.proto) == ["HTTP/2.0"])
  }
}

extension TLSSettingsTests {
  @Test func aDocumentFetchedUnderOneSessionsTrustIsNotAnothers() throws {
    // `lax` trusts anything; `strict` trusts another CA than the server's: one fetch each, and
    // strict never uses lax's copy, in this run or the next.
    let nginx = try NginxServer()
    let body = FileResource.versionBytes(5, length: 5000)
    nginx.put("f.bin", body)
    nginx.put(
      "doc.meta4",
      Array(MetalinkRunTests.document([("f.bin", [nginx.url("/f.bin")], SHA256Digest.hex(body))]).utf8))
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        lax:
          insecure: true
          tasks:
            - metalink: \(nginx.url("/doc.meta4"))
              to: lax/
        strict:
          retry: {attempts: 1}
          tls: {ca_file: \(nginx.certificates.otherCACertificate)}
          tasks:
            - metalink: \(nginx.url("/doc.meta4"))
              to: strict/
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1)
    #expect(fixture.holds("lax/f.bin", body))
    #expect(!fixture.folder.exists("strict/f.bin"))
    #expect(nginx.requests(for: "/doc.meta4").count == 1, "strict's fetch failed its handshake: nginx logs none")
    let failed = try #require(try fixture.tasks()[nginx.url("/doc.meta4")]?["error"] as? [String: Any])
    #expect((failed["message"] as? String)?.contains("tls.ca_file") == true, "\(failed)")
    let again = try fixture.run()
    #expect(again.status == 1)
    #expect(!fixture.folder.exists("strict/f.bin"), "and no stored copy of lax's is used for strict")
  }
}
