import Foundation
import TestSupport
import Testing

@testable import BatchDL

/// `tls:` and `network.http_version`: what is carried to the session, where each mistake is
/// reported, and that the key's password is a secret however it is written.
@Suite struct TLSSettingsManifestTests {
  static let files = [
    "certs/ca.pem": "ca", "certs/client.pem": "cert", "certs/client.key": "key", "certs/server.pub": "pub",
    "cas/0000.0": "ca",
  ]
  static let pin = "sha256//" + Data(repeating: 7, count: 32).base64EncodedString()

  @Test func everyKeyIsCarriedToTheSessionWithItsPathMadeAbsolute() throws {
    let (folder, result) = ManifestFixture.plan(
      """
      version: 1
      defaults:
        tls: {ca_file: certs/ca.pem, min_version: 1.2}
        network: {http_version: 1.1}
      sessions:
        a:
          tls:
            ca_path: cas
            client_cert: certs/client.pem
            client_key: certs/client.key
            key_password: "${KEY_PASSWORD}"
            pinned_pubkey: "\(Self.pin)"
            min_version: "1.3"
          network: {http_version: 2}
          tasks:
            - download: https://example.org/a.bin
        b:
          tls: {pinned_pubkey: certs/server.pub}
          tasks:
            - download: https://example.org/b.bin
        c:
          network: {http_version: auto}
          tasks:
            - download: https://example.org/c.bin
      """, files: Self.files, environment: ["KEY_PASSWORD": "hunter22"])
    let plan = try result.get()
    let root = folder.path
    let a = try #require(plan.manifest.session("a"))
    #expect(a.tls.caFile == root + "/certs/ca.pem", "a session's tls keys override the defaults' one by one")
    #expect(a.tls.caPath == root + "/cas")
    #expect(a.tls.clientCert == root + "/certs/client.pem")
    #expect(a.tls.clientKey == root + "/certs/client.key")
    #expect(a.tls.keyPassword == "hunter22")
    #expect(a.tls.pinnedPublicKey == Self.pin)
    #expect(a.tls.minVersion == .tls1_3)
    #expect(a.network.httpVersion == .http2)
    let b = try #require(plan.manifest.session("b"))
    #expect(b.tls.caFile == root + "/certs/ca.pem")
    #expect(b.tls.pinnedPublicKey == root + "/certs/server.pub")
    #expect(b.tls.minVersion == .tls1_2)
    #expect(b.network.httpVersion == .http1_1)
    #expect(try #require(plan.manifest.session("c")).network.httpVersion == .auto)
    #expect(plan.manifest.secrets.contains { $0.value == "hunter22" })
  }

  @Test func aClientCertificateKeyAndPasswordAreInheritedTogetherOrNotAtAll() throws {
    let (folder, result) = ManifestFixture.plan(
      """
      version: 1
      defaults:
        tls: {client_cert: certs/client.pem, client_key: certs/client.key, key_password: "p4ssword"}
      sessions:
        inherits:
          tasks:
            - download: https://example.org/a.bin
        own:
          tls: {client_cert: certs/ca.pem, ca_file: certs/ca.pem}
          tasks:
            - download: https://example.org/b.bin
      """, files: Self.files)
    let plan = try result.get()
    let inherits = try #require(plan.manifest.session("inherits")).tls
    #expect(inherits.clientKey == folder.path + "/certs/client.key" && inherits.keyPassword == "p4ssword")
    let own = try #require(plan.manifest.session("own")).tls
    #expect(own.clientCert == folder.path + "/certs/ca.pem")
    #expect(own.clientKey == nil && own.keyPassword == nil, "never another certificate's key or password")
  }

  @Test func sessionsThatTrustOrPresentOtherThingsNeverShareARequest() throws {
    let (_, result) = ManifestFixture.plan(
      """
      version: 1
      sessions:
        plain:
          tasks:
            - download: https://example.org/a.bin
              to: plain/a.bin
        client:
          tls: {client_cert: certs/client.pem, client_key: certs/client.key}
          tasks:
            - download: https://example.org/a.bin
              to: client/a.bin
        same-client:
          tls: {client_cert: certs/client.pem, client_key: certs/client.key}
          tasks:
            - download: https://example.org/a.bin
              to: same/a.bin
        insecure:
          insecure: true
          tasks:
            - download: https://example.org/a.bin
              to: insecure/a.bin
        other-password:
          tls: {client_cert: certs/client.pem, client_key: certs/client.key, key_password: "${OTHER}"}
          tasks:
            - download: https://example.org/a.bin
              to: other/a.bin
        http1:
          network: {http_version: 1.1}
          tasks:
            - download: https://example.org/a.bin
              to: http1/a.bin
      """, files: Self.files, environment: ["OTHER": "another-password"])
    let plan = try result.get()
    #expect(
      plan.requests.count == 5,
      "one request each for no settings, the client certificate, insecure, another key password, HTTP/1.1")
    let identity = try #require(plan.manifest.session("other-password")?.connectionIdentity(relativeTo: "/"))
    #expect(!identity.contains("another-password"), "the password is never in a request's identity")
  }

  @Test func aFIFOOrADeviceIsRefusedWhereAFileIsRead() throws {
    // libcurl opens these at each handshake on the thread that runs every transfer: a FIFO would
    // block the whole run.
    let folder = TemporaryDirectory()
    #expect(mkfifo(folder.path + "/ca.fifo", 0o600) == 0)
    try FileManager.default.createDirectory(atPath: folder.path + "/cas", withIntermediateDirectories: true)
    folder.write("cas/0000.0", "ca")
    #expect(mkfifo(folder.path + "/cas/1111.0", 0o600) == 0)
    let path = folder.write(
      "manifest.yaml",
      """
      version: 1
      sessions:
        a:
          tls: {ca_file: ca.fifo}
          tasks:
            - download: https://example.org/a.bin
        b:
          tls: {ca_path: cas, client_cert: /dev/zero}
          tasks:
            - download: https://example.org/b.bin
      """)
    do {
      _ = try ManifestCheck.plan(path: path)
      Issue.record("the manifest was accepted")
    } catch {
      let found = error.diagnostics.map { "\($0.mark.line):\($0.mark.column): \($0.message)" }
      #expect(found.contains("4:20: tls.ca_file 'ca.fifo' is a FIFO (named pipe), not a regular file"), "\(found)")
      #expect(
        found.contains(
          "8:20: tls.ca_path 'cas' holds '1111.0', a FIFO (named pipe): a CA folder holds regular files only"),
        "\(found)")
      #expect(found.contains("8:38: tls.client_cert '/dev/zero' is a character device, not a regular file"), "\(found)")
    }
  }

  @Test func pinsAreGivenToLibcurlAsTheyWereChecked() throws {
    let (_, result) = ManifestFixture.plan(
      """
      version: 1
      sessions:
        a:
          tls: {pinned_pubkey: " \(Self.pin) ; \(Self.pin) "}
          tasks:
            - download: https://example.org/a.bin
      """)
    #expect(try result.get().manifest.session("a")?.tls.pinnedPublicKey == "\(Self.pin);\(Self.pin)")
  }

  @Test func aWrittenPasswordIsASecretToo() throws {
    let (_, result) = ManifestFixture.plan(
      """
      version: 1
      sessions:
        a:
          tls: {client_cert: certs/client.pem, key_password: "literal-pass"}
          tasks:
            - download: https://example.org/a.bin
      """, files: Self.files)
    let plan = try result.get()
    #expect(plan.manifest.secrets.contains { $0.value == "literal-pass" })
    var listing = ""
    PlanListing(plan: plan).writeJSON(to: &listing)
    #expect(!listing.contains("literal-pass"))
  }

  @Test func eachMistakeIsReportedWhereItIs() {
    let problems = ManifestFixture.problems(
      """
      version: 1
      sessions:
        a:
          tls:
            ca_file: certs/missing.pem
            ca_path: certs/ca.pem
            client_cert: certs
            pinned_pubkey: "sha256//tooshort"
            min_version: 1.1
            ca_fil: x
          network: {http_version: 3}
          tasks:
            - download: https://example.org/a.bin
        b:
          tls: {client_key: certs/client.key, key_password: x}
          tasks:
            - download: https://example.org/b.bin
        c:
          tls: {key_password: "${PASSWORD}"}
          tasks:
            - download: https://example.org/c.bin
        d:
          tls: {ca_file: /nonexistent/ca.pem, min_version: "1.20"}
          tasks:
            - download: https://example.org/d.bin
      """, files: Self.files, environment: ["PASSWORD": "secret"])
    let expected = [
      "5:16: error: tls.ca_file 'certs/missing.pem' does not exist (a relative path is read from the manifest's folder)",
      "6:16: error: tls.ca_path 'certs/ca.pem' is not a folder: give a folder of CA certificates (or a file in tls.ca_file)",
      "7:20: error: tls.client_cert 'certs' is a folder, not a file",
      "8:22: error: bad tls.pinned_pubkey 'sha256//tooshort': give sha256// and the Base64 of the SHA-256 of the server's public key (several separated by ';'), or a public key file (PEM or DER)",
      "9:20: error: unknown tls.min_version '1.1': expected 1.2 or 1.3 (older versions of TLS are not accepted)",
      "11:29: error: unknown network.http_version '3': expected one of auto, 1.1, 2; did you mean '2'?",
      "15:10: error: tls.client_key without tls.client_cert: give the certificate the key belongs to",
      "19:10: error: tls.key_password without tls.client_key or tls.client_cert: it is the password of the client key",
      "23:20: error: tls.ca_file '/nonexistent/ca.pem' does not exist",
      "23:54: error: unknown tls.min_version '1.20': expected 1.2 or 1.3 (older versions of TLS are not accepted)",
    ]
    for line in expected { #expect(problems.contains(line), "\(line)\n\(problems.joined(separator: "\n"))") }
    #expect(problems.contains { $0.hasPrefix("10:7: error: unknown key 'ca_fil' in tls") && $0.contains("ca_file") })
    #expect(!problems.joined().contains("secret"), "a password is never echoed")
  }
}
