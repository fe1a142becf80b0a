import Foundation
import TestSupport
import Testing

/// `apt:` as a hostile upstream and a week of nights would try it: documents that name what no
/// mirror may hold, roots with text around them, Releases that contradict themselves, runs killed
/// midway, failing nights between keep_removed and prune, secrets in the repository's URL.
@Suite(.serialized) struct AptReviewTests {
  typealias Served = AptMirrorTests.Served

  /// A manifest like `Served.manifest` with another keyring path, URL or `to:`.
  static func manifest(
    _ served: Served, keyring: String = "keyring.gpg", url: String? = nil, extra: String = "", session: String = ""
  ) {
    served.manifest(extra: extra, session: session, keyring: keyring, url: url)
  }

  /// Rewrites the Release of `suite` with `transform` and signs it again (InRelease, Release.gpg).
  static func resign(_ repository: AptRepositoryFixture, _ suite: String, _ transform: (String) -> String) throws {
    let release = transform(String(decoding: repository.read("dists/\(suite)/Release") ?? [], as: UTF8.self))
    repository.write("dists/\(suite)/Release", Array(release.utf8))
    let signed = try repository.keys.clearSign("\(suite)-resigned", release)
    repository.write("dists/\(suite)/InRelease", Array(signed.utf8))
    let detached = try repository.keys.signDetached("\(suite)-resigned-detached", release, extra: ["--armor"])
    repository.write(
      "dists/\(suite)/Release.gpg", Array(FileManager.default.contents(atPath: detached.signature) ?? Data()))
  }

  static func code(_ served: Served, _ relative: String) throws -> String? {
    try AptHostileTests.error(served, AptHostileTests.id(served, relative)).code
  }

  /// Files of the run's folder outside `mirror/` that a run may write.
  static let ownFiles: Set<String> = ["manifest.yaml", "keyring.gpg", "ca.pem", "report.json", "events.jsonl"]

  // MARK: - Documents

  /// A Packages index whose stanzas name a path outside the mirror, the suite's own InRelease,
  /// batchdl's state folder and partial files, and one path twice with other digests: each fails
  /// alone (`descriptor`), nothing is written outside `mirror/`, the suite is withheld, the other
  /// suite is published.
  @Test func stanzasNamingForbiddenPathsFailAloneAndWithholdTheirSuite() throws {
    let repository = try AptRepositoryFixture()
    let evil = Array("evil\n".utf8)
    let other = Array("other\n".utf8)
    func stanza(_ name: String, _ path: String, _ bytes: [UInt8]) -> String {
      "Package: \(name)\nFilename: \(path)\nSize: \(bytes.count)\nSHA256: \(AptRepositoryFixture.sha256(bytes))\n\n"
    }
    let paths = [
      "../../outside", "dists/stable/InRelease", ".batchdl/state.sqlite", "pool/main/e/evil.deb.batchdl-part",
    ]
    var text = paths.enumerated().map { stanza("evil\($0)", $1, evil) }.joined()
    text += stanza("dup", "pool/main/d/dup.deb", evil) + stanza("dup", "pool/main/d/dup.deb", other)
    try repository.replaceIndex("main/binary-amd64/Packages", of: "stable", with: text)
    for path in ["pool/main/e/evil.deb.batchdl-part", "pool/main/d/dup.deb"] { repository.write(path, evil) }
    let served = try Served(repository)
    served.manifest()
    let result = try served.run.run()
    #expect(result.status != 0)
    for path in paths + ["pool/main/d/dup.deb"] {
      let ids = try served.run.tasks().keys.sorted()
      #expect(try Self.code(served, path) == "descriptor", "\(path): \(ids)")
    }
    #expect(served.mirrored("dists/stable/InRelease") == nil, "the suite is withheld")
    #expect(served.mirrored("dists/stable/main/binary-amd64/Packages.xz") == nil)
    #expect(served.mirrored("dists/testing/InRelease") == repository.read("dists/testing/InRelease"))
    #expect(served.mirrored("pool/main/d/dup.deb") == nil)
    let outside = served.run.files().filter {
      !$0.hasPrefix("mirror/") && !$0.hasPrefix(".batchdl/") && !Self.ownFiles.contains($0)
    }
    #expect(outside.isEmpty, "\(outside)")
    #expect(!served.run.files().contains { $0.contains("batchdl-part") || $0.hasPrefix("mirror/.batchdl") })
  }

  /// A stanza naming a file batchdl keeps (here the keyring, kept inside the mirror as many
  /// mirrors publish it) is left out by the planner; its suite must be withheld too (its index
  /// names a file the mirror does not hold), and the keyring stays.
  @Test func aStanzaNamingTheKeyringInsideTheMirrorWithholdsItsSuite() throws {
    let repository = try AptRepositoryFixture()
    let forged = Array("not a keyring\n".utf8)
    let text =
      "Package: keyring\nFilename: keys/archive.gpg\nSize: \(forged.count)\nSHA256: \(AptRepositoryFixture.sha256(forged))\n\n"
    try repository.replaceIndex("main/binary-amd64/Packages", of: "stable", with: text)
    repository.write("keys/archive.gpg", forged)
    let served = try Served(repository)
    let keyring = try #require(FileManager.default.contents(atPath: repository.keyring))
    try FileManager.default.createDirectory(
      atPath: served.run.folder.path + "/mirror/keys", withIntermediateDirectories: true)
    try keyring.write(to: URL(fileURLWithPath: served.run.folder.path + "/mirror/keys/archive.gpg"))
    Self.manifest(served, keyring: "mirror/keys/archive.gpg")
    let result = try served.run.run()
    #expect(result.status != 0)
    #expect(served.mirrored("keys/archive.gpg") == Array(keyring), "the keyring is not replaced")
    #expect(served.mirrored("dists/stable/InRelease") == nil, "the suite naming a file it cannot hold is withheld")
    #expect(served.mirrored("dists/stable/main/binary-amd64/Packages.xz") == nil)
    #expect(served.mirrored("dists/testing/InRelease") == repository.read("dists/testing/InRelease"))
  }

  /// Two pool paths that are the NFC and the NFD spelling of one name are two files on Linux: both
  /// are mirrored with their own bytes, and the suite is published.
  @Test func poolNamesInNFCAndNFDAreTwoFiles() throws {
    let repository = try AptRepositoryFixture(suites: ["stable"], components: ["main"])
    let composed = "pool/main/c/caf\u{E9}_1.0_amd64.deb"
    let decomposed = "pool/main/c/cafe\u{301}_1.0_amd64.deb"
    #expect(!Array(composed.utf8).elementsEqual(Array(decomposed.utf8)))
    var text = ""
    for (number, path) in [composed, decomposed].enumerated() {
      let bytes = Array("deb \(number)\n".utf8)
      repository.write(path, bytes)
      text +=
        "Package: cafe\(number)\nFilename: \(path)\nSize: \(bytes.count)\nSHA256: \(AptRepositoryFixture.sha256(bytes))\n\n"
    }
    try repository.replaceIndex("main/binary-amd64/Packages", of: "stable", with: text)
    let served = try Served(repository)
    served.manifest()
    let result = try served.run.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(served.mirrored(composed) == Array("deb 0\n".utf8))
    #expect(served.mirrored(decomposed) == Array("deb 1\n".utf8))
    #expect(served.mirrored("dists/stable/InRelease") == repository.read("dists/stable/InRelease"))
  }

  /// A signed Release that lists one index twice with different digests: that suite fails
  /// (`descriptor`) and is withheld, the night fails; the other suite is published.
  @Test func aReleaseListingAPathTwiceWithOtherDigestsFailsItsSuite() throws {
    let repository = try AptRepositoryFixture()
    try Self.resign(repository, "stable") { release in
      release.replacingOccurrences(
        of: "SHA256:\n",
        with: "SHA256:\n \(String(repeating: "ab", count: 32)) 1234 main/binary-amd64/Packages.xz\n")
    }
    let served = try Served(repository)
    served.manifest()
    let result = try served.run.run()
    #expect(result.status != 0, "\(result.stdout)")
    #expect(served.mirrored("dists/stable/InRelease") == nil, "the suite is withheld")
    #expect(served.mirrored("dists/testing/InRelease") == repository.read("dists/testing/InRelease"))
    let codes = try served.run.tasks().filter { $0.key.contains("dists/stable/") }.compactMap {
      ($0.value["error"] as? [String: Any])?["code"] as? String
    }
    #expect(codes.contains("descriptor"), "\(codes)")
  }

  /// A server that answers for `stable` with another suite's signed tree (its InRelease, signed by
  /// the trusted key and newer, and its indexes): apt warns of a conflicting distribution; the
  /// mirror must not publish testing's packages as stable.
  @Test func anotherSuitesSignedReleaseServedInItsPlaceFailsSignature() throws {
    let repository = try AptRepositoryFixture(suites: ["stable", "testing"], components: ["main"])
    try repository.update(suites: ["testing"], changing: ["pkg0"])
    let served = try Served(repository)
    let root = served.nginx.root + "/debian/dists/"
    try FileManager.default.removeItem(atPath: root + "stable")
    _ = try ExternalTool.run(try #require(ExternalTool.find("cp")), ["-a", root + "testing", root + "stable"])
    served.manifest()
    let result = try served.run.run()
    #expect(result.status != 0, "\(result.stdout)")
    let failure = try AptHostileTests.error(served, AptHostileTests.id(served, "dists/stable/InRelease"))
    #expect(failure.code == "signature", "\(failure)")
    #expect(served.mirrored("dists/stable/InRelease") == nil)
    #expect(served.mirrored("dists/testing/InRelease") == repository.read("dists/testing/InRelease"))
  }

  /// A signed Release that gives an index a huge size: the fetch is bounded, the index fails its
  /// Release line, nothing of the suite is published.
  @Test func aReleaseGivingAnIndexAHugeSizeFailsWithoutAGiantAllocation() throws {
    let repository = try AptRepositoryFixture(suites: ["stable", "testing"], components: ["main"])
    let name = "main/binary-amd64/Packages.xz"
    let bytes = try #require(repository.read("dists/stable/" + name))
    let size = String(bytes.count)
    let padded = String(repeating: " ", count: max(0, 9 - size.count)) + size
    try Self.resign(repository, "stable") { release in
      release.replacingOccurrences(
        of: " \(AptRepositoryFixture.sha256(bytes)) \(padded) \(name)",
        with: " \(AptRepositoryFixture.sha256(bytes)) 999999999999999 \(name)")
    }
    let served = try Served(repository)
    served.manifest()
    let result = try served.run.run()
    #expect(result.status != 0)
    #expect(try Self.code(served, "dists/stable/" + name) == "checksum-mismatch")
    #expect(served.mirrored("dists/stable/InRelease") == nil)
    #expect(served.mirrored("dists/testing/InRelease") == repository.read("dists/testing/InRelease"))
  }

  /// An xz index that decompresses past a ratio of 1:1000 fails `descriptor`.
  @Test func anXzBombFailsDescriptor() throws {
    let repository = try AptRepositoryFixture(suites: ["stable", "testing"], components: ["main"])
    try repository.replaceIndex(
      "main/binary-amd64/Packages", of: "stable", with: String(repeating: "\n", count: 24 << 20))
    let served = try Served(repository)
    // As on Debian's mirrors, the uncompressed index is not served: the .xz is what is read.
    let plain = "dists/stable/main/binary-amd64/Packages"
    let byHash = try #require(repository.byHashPath("main/binary-amd64/Packages", of: "stable"))
    for path in [plain, byHash] { unlink(served.nginx.root + "/debian/" + path) }
    served.manifest()
    let result = try served.run.run()
    #expect(result.status != 0)
    let failure = try AptHostileTests.error(
      served, AptHostileTests.id(served, "dists/stable/main/binary-amd64/Packages.xz"))
    #expect(failure.code == "descriptor", "\(failure)")
    #expect(served.mirrored("dists/stable/InRelease") == nil)
    #expect(served.mirrored("dists/testing/InRelease") == repository.read("dists/testing/InRelease"))
  }

  /// An InRelease with text before or after its signed part, or an HTML page served with 200 in
  /// its place: the suite fails, nothing of it is placed.
  @Test(arguments: ["before", "after", "html"])
  func aRootThatIsNotExactlyASignedReleaseFails(_ how: String) throws {
    let repository = try AptRepositoryFixture(suites: ["stable", "testing"], components: ["main"])
    let inRelease = try #require(repository.read("dists/stable/InRelease"))
    let extra = Array("SHA256:\n \(String(repeating: "0", count: 64)) 5 main/binary-amd64/Packages\n".utf8)
    switch how {
    case "before": repository.write("dists/stable/InRelease", extra + [0x0A] + inRelease)
    case "after": repository.write("dists/stable/InRelease", inRelease + extra)
    default:
      repository.write("dists/stable/InRelease", Array("<html><body>Welcome to our mirror</body></html>\n".utf8))
    }
    let served = try Served(repository)
    served.manifest()
    let result = try served.run.run()
    #expect(result.status != 0)
    let code = try Self.code(served, "dists/stable/InRelease")
    #expect(code == "signature" || code == "descriptor", "\(String(describing: code))")
    #expect(!served.run.files().contains { $0.hasPrefix("mirror/dists/stable/") })
    #expect(served.mirrored("dists/testing/InRelease") == repository.read("dists/testing/InRelease"))
  }

  // MARK: - Nights

  /// A run killed while the pool of an update trickles in, then run again: the killed run leaves
  /// the previous repository published, the next one converges on the new one.
  @Test(arguments: [SIGKILL, SIGTERM])
  func aRunKilledMidUpdateLeavesTheOldRepositoryAndTheNextConverges(_ signal: Int32) throws {
    let served = try Served(
      try AptRepositoryFixture(suites: ["stable"], components: ["main"]),
      directives: "location ~ \"^/debian/pool/.*[+]u1\" { limit_rate 20; limit_rate_after 0; }")
    served.manifest()
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let old = try #require(served.mirrored("dists/stable/InRelease"))
    try served.repository.update(changing: ["pkg0", "pkg2"], adding: ["newpkg"])
    try served.sync()
    let running = try served.run.start()
    usleep(1_500_000)
    #expect(running.isRunning)
    kill(running.processIdentifier, signal)
    running.waitUntilExit()
    #expect(served.mirrored("dists/stable/InRelease") == old, "the old root stays published")
    #expect(
      served.mirrored("dists/stable/main/binary-amd64/Packages.xz")
        == served.mirrored(
          "dists/stable/main/binary-amd64/by-hash/SHA256/"
            + AptRepositoryFixture.sha256(served.mirrored("dists/stable/main/binary-amd64/Packages.xz") ?? [])))
    result = try served.run.run(timeout: 120)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(served.mirrored("dists/stable/InRelease") == served.repository.read("dists/stable/InRelease"))
    for (path, file) in served.repository.pool {
      #expect(served.mirrored(path).map { AptRepositoryFixture.sha256($0) } == file.sha256, "\(path)")
    }
    #expect(!served.run.files().contains { $0.contains("batchdl-part") })
  }

  /// keep_removed passes during a failing night: nothing is pruned that night; the next complete
  /// night prunes.
  @Test func aFailingNightAfterKeepRemovedPassedPrunesNothing() throws {
    let served = try Served(try AptRepositoryFixture(suites: ["stable", "testing"], components: ["main"]))
    served.manifest(extra: "        keep_removed: 1s", session: "    prune: {max_delete: \"50%\"}")
    var result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    let removed = served.repository.poolBySuite["stable"]?.filter { $0.contains("/pkg1/") }.sorted() ?? []
    try served.repository.update(suites: ["stable"], removing: ["pkg1"], deletingOldPool: true)
    try served.sync()
    result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    // testing names pkg1 too (another version): only stable's are removed.
    let gone = removed.filter { path in !(served.repository.poolBySuite["testing"]?.contains(path) ?? false) }
    #expect(!gone.isEmpty)
    for path in gone { #expect(served.mirrored(path) != nil, "\(path) is kept") }
    sleep(2)
    for name in ["InRelease", "Release", "Release.gpg"] { served.repository.remove("dists/testing/" + name) }
    try served.sync()
    result = try served.run.run()
    #expect(result.status != 0)
    for path in gone { #expect(served.mirrored(path) != nil, "\(path) stays on a failing night") }
    try served.repository.update(suites: ["testing"])
    try served.sync()
    result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    for path in gone { #expect(served.mirrored(path) == nil, "\(path) is pruned") }
  }

  /// `validate`, `plan` and `plan --offline` on a fresh folder and after a run: no crash, and
  /// after a run the chain is shown.
  @Test func validateAndPlanOnAFreshFolderAndAfterARun() throws {
    let served = try Served(try AptRepositoryFixture(suites: ["stable"], components: ["main"]))
    served.manifest()
    for arguments in [["validate", "manifest.yaml"], ["plan", "manifest.yaml", "--offline"]] {
      let outcome = try BinaryRunner.run(arguments, in: served.run.folder.path)
      #expect(outcome.status == 0 || outcome.status == 1, "\(arguments): \(outcome.status) \(outcome.stderr)")
      #expect(outcome.stderr.contains("no stored copy") || arguments[0] == "validate", "\(outcome.stderr)")
    }
    let fresh = try BinaryRunner.run(["plan", "manifest.yaml"], in: served.run.folder.path)
    #expect(fresh.status == 0, "\(fresh.stdout)\(fresh.stderr)")
    #expect(fresh.stdout.contains("dists/stable/InRelease: verified"), "\(fresh.stdout)")
    #expect(!served.run.files().contains { $0.hasPrefix("mirror/") }, "plan places nothing")
    let result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    for arguments in [
      ["validate", "manifest.yaml"], ["plan", "manifest.yaml", "--offline"], ["plan", "manifest.yaml"],
    ] {
      let outcome = try BinaryRunner.run(arguments, in: served.run.folder.path)
      #expect(outcome.status == 0, "\(arguments): \(outcome.stdout)\(outcome.stderr)")
      if arguments[0] == "plan" {
        #expect(outcome.stdout.contains("dists/stable/InRelease: verified"), "\(arguments): \(outcome.stdout)")
      }
    }
  }

  /// Two sessions mirroring one repository into the same `dest` and `to:`: the same requests are
  /// merged (each file fetched once), the mirror is whole.
  @Test func twoAptEntriesWithTheSameFolderInTwoSessionsAreMerged() throws {
    let served = try Served(try AptRepositoryFixture(suites: ["stable"], components: ["main"]))
    var sessions = ""
    for name in ["one", "two"] {
      sessions += """
          \(name):
            dest: mirror
            tls: {ca_file: ca.pem}
            tasks:
              - apt: \(served.url)
                suites: [stable]
                components: [main]
                architectures: [amd64]
                keyring: keyring.gpg
                to: debian/

        """
    }
    served.run.manifest("version: 1\nsessions:\n" + sessions)
    let result = try served.run.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(served.mirrored("debian/dists/stable/InRelease") == served.repository.read("dists/stable/InRelease"))
    let debs = served.nginx.requests().filter { $0.uri.hasSuffix(".deb") }.map(\.uri)
    #expect(debs.count == Set(debs).count && !debs.isEmpty, "\(debs)")
  }

  // MARK: - Secrets

  /// A password in the repository's URL reaches the server, never the report, the events, the
  /// state folder or `plan`'s output.
  @Test func aPasswordInTheRepositoryURLStaysSecret() throws {
    let served = try Served(try AptRepositoryFixture(suites: ["stable"], components: ["main"]))
    let password = "Pw4ptS3cr3tXq"
    let url = served.url.replacingOccurrences(of: "https://", with: "https://mirror:\(password)@")
    Self.manifest(served, url: url)
    let result = try served.run.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(served.mirrored("dists/stable/InRelease") != nil)
    #expect(served.nginx.requests().allSatisfy { $0.authorization != nil }, "the credentials are sent")
    var outputs = [result.stdout, result.stderr]
    for arguments in [
      ["plan", "manifest.yaml"], ["plan", "manifest.yaml", "--offline"], ["validate", "manifest.yaml"],
    ] {
      let outcome = try BinaryRunner.run(arguments, in: served.run.folder.path)
      outputs += [outcome.stdout, outcome.stderr]
    }
    #expect(!outputs.contains { $0.contains(password) }, "\(outputs.filter { $0.contains(password) })")
    let root = served.run.folder.path
    let enumerator = FileManager.default.enumerator(atPath: root)
    var leaking: [String] = []
    while let path = enumerator?.nextObject() as? String {
      guard path != "manifest.yaml", let data = FileManager.default.contents(atPath: root + "/" + path) else {
        continue
      }
      if data.range(of: Data(password.utf8)) != nil { leaking.append(path) }
    }
    #expect(leaking.isEmpty, "\(leaking)")
  }
}
