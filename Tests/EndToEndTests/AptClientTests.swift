import Foundation
import TestSupport
import Testing

/// The harness of the apt checks: the real `apt-get` reads the synthetic repository over nginx
/// (TLS, the test CA), follows an update of it, and its problems are seen (a hash-sum mismatch, a
/// Release signed by another key, an expired Release), so that a check that apt saw none means
/// something.
@Suite struct AptClientTests {
  /// A one-suite repository served at `/` by nginx, and an apt client of it.
  struct Setup {
    let repository: AptRepositoryFixture
    let nginx: NginxServer
    let apt: AptClient

    init() throws {
      repository = try AptRepositoryFixture(suites: ["stable"], components: ["main", "contrib"])
      nginx = try NginxServer(root: repository.root)
      apt = try Self.client(of: nginx, repository)
    }

    /// A new client, with no lists stored.
    static func client(of nginx: NginxServer, _ repository: AptRepositoryFixture) throws -> AptClient {
      try AptClient(
        repository: nginx.url("/"), suites: ["stable"], components: ["main", "contrib"],
        keyring: repository.keyring, caCertificate: nginx.certificates.caCertificate)
    }

    /// Whether each of `files` in `downloads` has the bytes of the pool file at `pool/...`.
    func downloaded(_ files: [String: String]) -> Bool {
      files.allSatisfy { name, poolPath in
        FileManager.default.contents(atPath: apt.downloads + "/" + name).map { Array($0) } == repository.read(poolPath)
      }
    }
  }

  @Test func theClientUpdatesAndDownloadsOverTLSByHash() throws {
    let setup = try Setup()
    let update = try setup.apt.update()
    #expect(update.succeeded, "\(update.output)")
    let uris = setup.nginx.requests().map(\.uri)
    #expect(uris.contains("/dists/stable/InRelease"))
    #expect(
      uris.contains {
        $0.hasPrefix("/dists/stable/main/binary-amd64/by-hash/SHA256/")
      }, "apt follows Acquire-By-Hash: \(uris)")
    #expect(!uris.contains { $0.contains("binary-arm64") || $0.contains("Translation") }, "\(uris)")

    let download = try setup.apt.download(["pkg0", "common"])
    #expect(download.succeeded, "\(download.output)")
    #expect(download.files == ["common_1.0_amd64.deb", "pkg0_1.0-6_amd64.deb"])
    #expect(
      setup.downloaded([
        "common_1.0_amd64.deb": "pool/contrib/c/common/common_1.0_amd64.deb",
        "pkg0_1.0-6_amd64.deb": "pool/contrib/p/pkg0/pkg0_1.0-6_amd64.deb",
      ])
        || setup.downloaded([
          "common_1.0_amd64.deb": "pool/main/c/common/common_1.0_amd64.deb",
          "pkg0_1.0-6_amd64.deb": "pool/main/p/pkg0/pkg0_1.0-6_amd64.deb",
        ]))

    let install = try setup.apt.installDownloadOnly(["pkg1"])
    #expect(install.succeeded, "\(install.output)")
    #expect(install.files == ["pkg1_1.1-6_amd64.deb"])
  }

  @Test func afterAnUpdateTheClientFetchesTheNewVersionAndNotTheRemovedPackage() throws {
    let setup = try Setup()
    #expect(try setup.apt.update().succeeded)
    let oldIndex = try #require(setup.repository.byHashPath("main/binary-amd64/Packages.xz", of: "stable"))
    let oldDate = setup.repository.date

    try setup.repository.update(changing: ["pkg0"], removing: ["pkg1"], adding: ["fresh"])
    #expect(setup.repository.date == "Sat, 28 Nov 2026 10:01:00 UTC" && oldDate != setup.repository.date)
    #expect(setup.repository.read(oldIndex) != nil, "the old by-hash copy stays")
    #expect(setup.repository.byHashPath("main/binary-amd64/Packages.xz", of: "stable") != oldIndex)
    #expect(setup.repository.read("pool/main/p/pkg1/pkg1_1.1-6_amd64.deb") != nil, "the old pool stays")
    #expect(setup.repository.pool["pool/main/p/pkg1/pkg1_1.1-6_amd64.deb"] == nil)
    #expect(setup.repository.pool["pool/main/p/pkg0/pkg0_1.0-6+u1_amd64.deb"] != nil)

    let update = try setup.apt.update()
    #expect(update.succeeded, "\(update.output)")
    let download = try setup.apt.download(["pkg0", "fresh"])
    #expect(download.succeeded, "\(download.output)")
    #expect(download.files == ["fresh_1.0+u1_amd64.deb", "pkg0_1.0-6+u1_amd64.deb"])
    let removed = try setup.apt.download(["pkg1"])
    #expect(removed.status != 0 && removed.files.isEmpty, "\(removed.output)")

    try setup.repository.update(removing: ["pkg0"], deletingOldPool: true)
    #expect(setup.repository.read("pool/main/p/pkg0/pkg0_1.0-6+u1_amd64.deb") == nil)
    #expect(setup.repository.read("pool/main/p/pkg1/pkg1_1.1-6_amd64.deb") == nil)
    #expect(setup.repository.read("pool/main/c/common/common_1.0_amd64.deb") != nil)
    #expect(try setup.apt.update().succeeded)
  }

  @Test func anIndexTamperedAfterSigningIsAHashSumMismatch() throws {
    let setup = try Setup()
    setup.repository.tamper("main/binary-amd64/Packages.xz", of: "stable")
    let update = try setup.apt.update()
    #expect(!update.succeeded && update.status != 0)
    #expect(update.hashSumMismatch, "\(update.output)")
    #expect(!update.signatureProblem && !update.unexpectedSize)
  }

  @Test func aReplacedIndexIsSignedAndItsLengthChangeIsSeen() throws {
    let setup = try Setup()
    let stanza = "Package: odd\nVersion: 1\nArchitecture: amd64\nFilename: pool/main/o/odd.deb\nSize: 3\nSHA256: "
    try setup.repository.replaceIndex(
      "main/binary-amd64/Packages", of: "stable", with: stanza + String(repeating: "0", count: 64) + "\n\n")
    #expect(try setup.apt.update().succeeded)
    // Longer than its Release line says, written after signing; a client with no lists fetches it.
    let path = try #require(setup.repository.byHashPath("main/binary-amd64/Packages.xz", of: "stable"))
    setup.repository.write(path, (setup.repository.read(path) ?? []) + [0])
    let update = try Setup.client(of: setup.nginx, setup.repository).update()
    #expect(update.unexpectedSize, "\(update.output)")
  }

  @Test(arguments: ["another key", "expired"])
  func aReleaseAptRefusesIsSeen(_ kind: String) throws {
    let setup = try Setup()
    if kind == "another key" {
      try setup.repository.update(signedBy: OpenPGPKeys.other)
    } else {
      try setup.repository.update(validUntil: "Sat, 01 Jan 2000 00:00:00 UTC")
    }
    let update = try setup.apt.update()
    #expect(!update.succeeded)
    #expect(kind == "another key" ? update.signatureProblem : update.releaseNotValid, "\(update.output)")
  }
}
