import Foundation
import TestSupport
import Testing

/// A suite is published whole or not at all: its index files and roots are placed together once
/// every one has come and been checked, roots upstream no longer publishes are removed, and a
/// root that cannot be fetched or verified keeps the suite as the mirror had it.
@Suite(.serialized) struct AptPublishTests {
  typealias Served = AptMirrorTests.Served

  /// Every file below `dists/SUITE/` of the mirror, with its bytes.
  static func dists(_ served: Served, _ suite: String) -> [String: [UInt8]] {
    let root = served.run.folder.path + "/mirror/dists/\(suite)"
    var found: [String: [UInt8]] = [:]
    let walker = FileManager.default.enumerator(atPath: root)
    while let path = walker?.nextObject() as? String {
      if let bytes = FileManager.default.contents(atPath: root + "/" + path), !path.hasSuffix("/") {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isFolder), !isFolder.boolValue {
          found[path] = Array(bytes)
        }
      }
    }
    return found
  }

  /// An index variant that is not read before planning fails its download: none of the suite's
  /// new index files is placed, its roots stay, the other suite is published.
  @Test(arguments: ["missing", "tampered"])
  func anIndexFailingItsDownloadPublishesNothingOfItsSuite(_ how: String) throws {
    let served = try Served(try AptRepositoryFixture(components: ["main"]))
    served.manifest()
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let before = Self.dists(served, "stable")
    #expect(!before.isEmpty)

    try served.repository.update(changing: ["pkg0"])
    try served.sync()
    if how == "missing" {
      let gz = try #require(served.repository.byHashPath("main/binary-amd64/Packages.gz", of: "stable"))
      for path in [gz, "dists/stable/main/binary-amd64/Packages.gz"] { unlink(served.nginx.root + "/debian/" + path) }
    } else {
      // The served copies hold other bytes of the same size than the Release names: found when
      // the run checks them (upstream's own files stay good, for the next night).
      let gz = try #require(served.repository.byHashPath("main/binary-amd64/Packages.gz", of: "stable"))
      for path in [gz, "dists/stable/main/binary-amd64/Packages.gz"] {
        let file = served.nginx.root + "/debian/" + path
        var bytes = Array(FileManager.default.contents(atPath: file) ?? Data())
        bytes[bytes.count / 2] ^= 0xFF
        #expect(FileManager.default.createFile(atPath: file, contents: Data(bytes)))
      }
    }
    result = try served.run.run()
    #expect(result.status != 0)
    let tasks = try served.run.tasks()
    let code = (tasks["mirror/dists/stable/InRelease"]?["error"] as? [String: Any])?["code"] as? String
    #expect(code == "dependency", "\(tasks["mirror/dists/stable/InRelease"] ?? [:])")
    let after = Self.dists(served, "stable")
    // Nothing of stable changed in place: no index of tonight under last night's InRelease.
    #expect(Set(after.keys) == Set(before.keys), "\(Set(after.keys).symmetricDifference(before.keys))")
    #expect(after.allSatisfy { before[$0.key] == $0.value }, "a file of dists/stable/ changed")
    #expect(served.mirrored("dists/testing/InRelease") == served.repository.read("dists/testing/InRelease"))
    // The new pool files are there (pool first), and a later night publishes the suite.
    try served.sync()
    result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(served.mirrored("dists/stable/InRelease") == served.repository.read("dists/stable/InRelease"))
  }

  /// Upstream stops publishing its InRelease (Release and Release.gpg only): the mirror's old
  /// InRelease, which clients read first, is removed when the new roots are placed.
  @Test func anInReleaseUpstreamNoLongerPublishesIsRemoved() throws {
    let served = try Served(try AptRepositoryFixture(suites: ["stable"], components: ["main"]))
    served.manifest()
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(served.mirrored("dists/stable/InRelease") != nil)
    try served.repository.update(changing: ["pkg0"])
    served.repository.remove("dists/stable/InRelease")
    try served.sync()
    result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(served.mirrored("dists/stable/InRelease") == nil)
    #expect(served.mirrored("dists/stable/Release") == served.repository.read("dists/stable/Release"))
    #expect(served.mirrored("dists/stable/Release.gpg") == served.repository.read("dists/stable/Release.gpg"))
  }

  /// Beside a good InRelease, a Release.gpg gpgv does not verify: the suite fails `signature`
  /// and stays as it was (no new InRelease beside an old Release).
  @Test func aReleasePairGpgvDoesNotVerifyKeepsTheSuite() throws {
    let served = try Served(try AptRepositoryFixture(suites: ["stable"], components: ["main"]))
    served.manifest()
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let before = Self.dists(served, "stable")
    try served.repository.update(changing: ["pkg0"])
    let stranger = try OpenPGPKeys()
    let data = stranger.folder.write(
      "release", String(decoding: served.repository.read("dists/stable/Release") ?? [], as: UTF8.self))
    try stranger.run([
      "--local-user", OpenPGPKeys.test, "--armor", "--output", stranger.folder.path + "/release.gpg", "--detach-sign",
      data,
    ])
    served.repository.write(
      "dists/stable/Release.gpg",
      Array(FileManager.default.contents(atPath: stranger.folder.path + "/release.gpg") ?? Data()))
    try served.sync()
    result = try served.run.run()
    #expect(result.status != 0)
    let failure = try AptHostileTests.error(served, AptHostileTests.id(served, "dists/stable/Release"))
    #expect(failure.code == "signature", "\(failure)")
    let after = Self.dists(served, "stable")
    #expect(after.allSatisfy { before[$0.key] == $0.value } && Set(after.keys) == Set(before.keys))
  }

  /// A root upstream answers 500 for (on every attempt): the night fails and the suite stays.
  @Test func aRootUpstreamDoesNotGiveKeepsTheSuite() throws {
    let repository = try AptRepositoryFixture(suites: ["stable"], components: ["main"])
    let flag = repository.folder.path + "/fail-release"
    let served = try Served(
      repository,
      directives: "location = /debian/dists/stable/Release { if (-f \(flag)) { return 500; } }")
    served.manifest()
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let before = Self.dists(served, "stable")
    try repository.update(changing: ["pkg0"])
    try served.sync()
    #expect(FileManager.default.createFile(atPath: flag, contents: Data()))
    result = try served.run.run()
    #expect(result.status != 0)
    let failure = try AptHostileTests.error(served, AptHostileTests.id(served, "dists/stable/Release"))
    #expect(failure.code == "descriptor" && failure.message.contains("500"), "\(failure)")
    let after = Self.dists(served, "stable")
    #expect(after.allSatisfy { before[$0.key] == $0.value } && Set(after.keys) == Set(before.keys))
  }

  /// An architecture dropped from the manifest, in a session without prune: the new Release still
  /// lists its indexes with new digests, so the old copies go when the suite is published (pool
  /// files stay: nothing prunes them); a file the user put there is left alone.
  @Test func anArchitectureDroppedTakesItsIndexesWithItEvenWithoutPrune() throws {
    let served = try Served(try AptRepositoryFixture(suites: ["stable"], components: ["main"]))
    served.manifest()
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let arm = served.repository.pool.keys.filter { $0.hasSuffix("_arm64.deb") }
    let manifest = try #require(served.run.folder.read("manifest.yaml"))
    served.run.folder.write("manifest.yaml", manifest.replacingOccurrences(of: "[amd64, arm64]", with: "[amd64]"))
    served.run.folder.write("mirror/dists/stable/main/binary-arm64/notes.txt", "the user's\n")
    try served.repository.update(changing: ["pkg0"])
    try served.sync()
    result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    for name in ["Packages", "Packages.gz", "Packages.xz"] {
      #expect(served.mirrored("dists/stable/main/binary-arm64/\(name)") == nil, "\(name) goes with its Release")
    }
    #expect(served.run.folder.read("mirror/dists/stable/main/binary-arm64/notes.txt") == "the user's\n")
    #expect(served.mirrored("dists/stable/InRelease") == served.repository.read("dists/stable/InRelease"))
    #expect(!arm.isEmpty && arm.allSatisfy { served.mirrored($0) != nil })
  }
}
