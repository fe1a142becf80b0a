import Foundation
import TestSupport
import Testing

/// `apt:` against repositories that break the chain: each failure fails alone with a clear code,
/// never places a byte the chain did not vouch for, never writes outside `dest`, and leaves the
/// suite it concerns as the mirror had it.
@Suite(.serialized) struct AptHostileTests {
  typealias Served = AptMirrorTests.Served

  static func error(_ served: Served, _ id: String) throws -> (code: String?, message: String) {
    let task = try served.run.tasks()[id]
    let error = task?["error"] as? [String: Any]
    return (error?["code"] as? String, error?["message"] as? String ?? "")
  }

  /// The id a failure of the repository's document or path `relative` has in the report.
  static func id(_ served: Served, _ relative: String) -> String { served.url + "#" + relative }

  @Test func aReleaseSignedByAKeyTheKeyringLacksPlacesNothing() throws {
    let served = try Served(try AptRepositoryFixture(suites: ["stable"]))
    let stranger = try OpenPGPKeys()
    _ = try ExternalTool.run(
      try #require(ExternalTool.find("cp")), [stranger.keyring, served.run.folder.path + "/keyring.gpg"])
    served.manifest()
    let result = try served.run.run()
    #expect(result.status != 0)
    let failure = try Self.error(served, Self.id(served, "dists/stable/InRelease"))
    #expect(failure.code == "signature", "\(failure)")
    #expect(failure.message.contains("gpgv"), "\(failure)")
    #expect(served.run.files().filter { $0.hasPrefix("mirror/") }.isEmpty, "\(served.run.files())")
    // Nothing past the root was asked for.
    #expect(!served.nginx.requests().contains { $0.uri.contains("/pool/") || $0.uri.contains("Packages") })
  }

  @Test func anExpiredReleaseFailsSignature() throws {
    let served = try Served(
      try AptRepositoryFixture(suites: ["stable"], validUntil: "Sun, 01 Jan 2023 00:00:00 UTC"))
    served.manifest()
    let result = try served.run.run()
    #expect(result.status != 0)
    let failure = try Self.error(served, Self.id(served, "dists/stable/InRelease"))
    #expect(failure.code == "signature" && failure.message.contains("Valid-Until"), "\(failure)")
    #expect(served.run.files().filter { $0.hasPrefix("mirror/") }.isEmpty)
  }

  /// Two repositories both trusted by the keyring: the mirror of the newer one refuses the older.
  @Test func aRollbackToAnOlderReleaseFailsSignatureAndChangesNothing() throws {
    let newer = try AptRepositoryFixture(suites: ["stable"], date: "Sun, 29 Nov 2026 10:00:00 UTC")
    let older = try AptRepositoryFixture(suites: ["stable"], date: "Fri, 27 Nov 2026 10:00:00 UTC")
    let served = try Served(newer)
    let keyring =
      (FileManager.default.contents(atPath: newer.keyring) ?? Data())
      + (FileManager.default.contents(atPath: older.keyring) ?? Data())
    try keyring.write(to: URL(fileURLWithPath: served.run.folder.path + "/keyring.gpg"))
    served.manifest()
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let published = served.mirrored("dists/stable/InRelease")
    #expect(published == newer.read("dists/stable/InRelease"), "the newer InRelease is published")

    try? FileManager.default.removeItem(atPath: served.nginx.root + "/debian")
    _ = try ExternalTool.run(try #require(ExternalTool.find("cp")), ["-a", older.root, served.nginx.root + "/debian"])
    // Another modification time, so that nginx's validators change as a real archive's do.
    _ = try ExternalTool.run(
      try #require(ExternalTool.find("find")),
      [served.nginx.root + "/debian", "-exec", "touch", "-d", "2027-01-01 00:00:00", "{}", "+"])
    result = try served.run.run()
    #expect(result.status != 0)
    let failure = try Self.error(served, Self.id(served, "dists/stable/InRelease"))
    #expect(failure.code == "signature" && failure.message.contains("rollback"), "\(failure)")
    #expect(served.mirrored("dists/stable/InRelease") == published, "the newer InRelease stays")
    #expect(served.mirrored("dists/stable/Release") == newer.read("dists/stable/Release"), "the newer Release stays")
  }

  @Test func anIndexThatDoesNotMatchItsReleaseLineFailsItsSuiteAlone() throws {
    let repository = try AptRepositoryFixture()
    let name = "dists/stable/main/binary-amd64/Packages.xz"
    let original = try #require(repository.read(name))
    let served = try Served(repository)
    // Served bytes (plain path and by-hash copy) that are not the ones the Release names.
    let forged = Array(
      "Package: evil\nFilename: pool/evil.deb\nSize: 1\nSHA256: \(String(repeating: "0", count: 64))\n".utf8)
    for path in [name, "dists/stable/main/binary-amd64/by-hash/SHA256/\(AptRepositoryFixture.sha256(original))"] {
      _ = FileManager.default.createFile(atPath: served.nginx.root + "/debian/" + path, contents: Data(forged))
    }
    served.manifest()
    let result = try served.run.run()
    #expect(result.status != 0)
    let failure = try Self.error(served, Self.id(served, "dists/stable/main/binary-amd64/Packages.xz"))
    #expect(failure.code == "checksum-mismatch", "\(failure)")
    // The other suite is mirrored whole; the failing suite publishes no index and no root.
    #expect(served.mirrored("dists/testing/InRelease") == repository.read("dists/testing/InRelease"))
    #expect(served.mirrored("dists/stable/InRelease") == nil)
    #expect(served.mirrored(name) == nil)
    #expect(!served.run.files().contains { $0.contains("evil") })
  }

  @Test func aReleaseListingAnIndexTheServerLacksFailsDescriptor() throws {
    let repository = try AptRepositoryFixture()
    let name = "dists/stable/contrib/binary-arm64/Packages.xz"
    let bytes = try #require(repository.read(name))
    let served = try Served(repository)
    for path in [name, "dists/stable/contrib/binary-arm64/by-hash/SHA256/\(AptRepositoryFixture.sha256(bytes))"] {
      unlink(served.nginx.root + "/debian/" + path)
    }
    served.manifest()
    let result = try served.run.run()
    #expect(result.status != 0)
    let failure = try Self.error(served, Self.id(served, name))
    #expect(failure.code == "descriptor" && failure.message.contains("404"), "\(failure)")
    #expect(served.mirrored("dists/testing/InRelease") != nil)
    #expect(served.mirrored("dists/stable/InRelease") == nil)
  }

  /// A pool file whose served bytes are not the ones its index names: it fails, nothing of it is
  /// placed, and its suite's indexes and roots wait in vain (the previous copies stay).
  @Test func aPoolFileWithOtherBytesHoldsBackItsSuite() throws {
    let repository = try AptRepositoryFixture()
    let served = try Served(repository)
    let deb = try #require(
      repository.poolBySuite["stable"]?.first { $0.hasSuffix("_amd64.deb") && $0.contains("pkg1") })
    _ = FileManager.default.createFile(atPath: served.nginx.root + "/debian/" + deb, contents: Data("forged\n".utf8))
    served.manifest()
    let result = try served.run.run()
    #expect(result.status != 0)
    let tasks = try served.run.tasks()
    let failed = (tasks["mirror/" + deb]?["error"] as? [String: Any])?["code"] as? String
    #expect(failed == "size-mismatch" || failed == "checksum-mismatch", "\(tasks["mirror/" + deb] ?? [:])")
    #expect(served.mirrored(deb) == nil)
    let release = (tasks["mirror/dists/stable/InRelease"]?["error"] as? [String: Any])?["code"] as? String
    #expect(release == "dependency", "\(tasks["mirror/dists/stable/InRelease"] ?? [:])")
    #expect(served.mirrored("dists/stable/InRelease") == nil)
    #expect(served.mirrored("dists/stable/main/binary-amd64/Packages.xz") == nil)
    #expect(
      served.mirrored("dists/testing/InRelease") == repository.read("dists/testing/InRelease"),
      "the other suite is published")
  }

  /// Upstream cannot be reached: the night fails, nothing in the mirror changes, nothing is pruned.
  @Test func aNightWithUpstreamDownFailsAndChangesNothing() throws {
    let served = try Served(try AptRepositoryFixture(suites: ["stable"]))
    served.manifest(session: "    prune: {max_delete: \"50%\"}")
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let mirror = { served.run.files().filter { $0.hasPrefix("mirror/") }.map { ($0, served.run.bytes($0)) } }
    let before = mirror()
    served.nginx.stop()
    result = try served.run.run()
    #expect(result.status != 0, "\(result.stdout)\(result.stderr)")
    #expect(mirror().map(\.0) == before.map(\.0) && zip(mirror(), before).allSatisfy { $0.1 == $1.1 })
    let failure = try Self.error(served, Self.id(served, "dists/stable/InRelease"))
    #expect(failure.code == "descriptor", "\(failure)")
  }
}
