import Testing

@testable import BatchDLManifest

/// The Release reader and the InRelease's signed text, as tables of hostile documents.
@Suite struct AptReleaseTests {
  static let hashA = String(repeating: "a", count: 64)
  static let hashB = String(repeating: "b", count: 64)

  static func release(_ sha256Lines: [String], extra: String = "") -> String {
    """
    Origin: Test
    Suite: stable
    Codename: trixie
    Date: Sat, 28 Nov 2026 10:00:00 UTC
    Valid-Until: Sat, 05 Dec 2026 10:00:00 UTC
    Architectures: amd64 arm64 all
    Components: main contrib
    Acquire-By-Hash: yes
    \(extra)MD5Sum:
     0123456789abcdef0123456789abcdef 10 main/binary-amd64/Packages
    SHA256:

    """ + sha256Lines.map { " \($0)\n" }.joined()
  }

  static func parse(_ text: String) -> Result<AptRelease, AptReleaseProblem> {
    AptRelease.parse(document: Array(text.utf8))
  }

  @Test func readsFieldsAndEntries() throws {
    let text = Self.release([
      "\(Self.hashA) 1234 main/binary-amd64/Packages",
      "\(Self.hashB.uppercased())    99 main/binary-amd64/Packages.xz",
      "\(Self.hashA) 1234 main/binary-amd64/Packages",
    ])
    let release = try Self.parse(text).get()
    #expect(release.suite == "stable")
    #expect(release.codename == "trixie")
    #expect(release.date == 1_795_860_000)
    #expect(release.validUntil == Int64(1_796_464_800))
    #expect(release.architectures == ["amd64", "arm64", "all"])
    #expect(release.components == ["main", "contrib"])
    #expect(release.acquireByHash)
    #expect(
      release.files.map { String(decoding: $0.path, as: UTF8.self) } == [
        "main/binary-amd64/Packages", "main/binary-amd64/Packages.xz",
      ])
    #expect(release.files[1].sha256 == Self.hashB && release.files[1].size == 99)
    #expect(release.refused.isEmpty)
    #expect(release.file(Array("main/binary-amd64/Packages.xz".utf8))?.line == 13)
    #expect(AptDate.format(1_795_860_000) == "Sat, 28 Nov 2026 10:00:00 UTC")
  }

  @Test func fieldNamesIgnoreCaseAndContinuationLinesJoin() throws {
    let text = """
      suite: testing
      ARCHITECTURES: amd64
       i386
      components: main
      acquire-by-hash: no
      sha256: \(Self.hashA) 5 main/i18n/Index
       \(Self.hashB) 6 main/i18n/Translation-en\r
      \t
      """
    let release = try Self.parse(text).get()
    #expect(release.suite == "testing")
    #expect(release.architectures == ["amd64", "i386"])
    #expect(!release.acquireByHash)
    #expect(release.files.count == 2)
  }

  /// Hostile `SHA256` lines: each refused alone, the rest kept.
  @Test(arguments: [
    ("../../etc/passwd", "'..'"),
    ("main/../../x", "'..'"),
    ("/etc/passwd", "absolute"),
    ("main//Packages", "empty segment"),
    ("main/binary-amd64/", "empty segment"),
    ("main/./Packages", "'.' segment"),
    ("main/\u{1B}[31mred", "control character"),
    ("main/a\u{85}b", "control character"),
  ])
  func refusesEscapingPaths(path: String, reason: String) throws {
    let release = try Self.parse(
      Self.release(["\(Self.hashA) 1 \(path)", "\(Self.hashB) 2 main/binary-amd64/Packages.gz"])
    ).get()
    #expect(release.files.map(\.path) == [Array("main/binary-amd64/Packages.gz".utf8)])
    #expect(release.refused.count == 1)
    #expect(release.refused.first?.path == Array(path.utf8))
    #expect(release.refused.first?.reason.contains(reason) == true, "\(release.refused)")
  }

  @Test(arguments: [
    ("\(hashA) 12", "2 words"),
    ("\(hashA)", "1 words"),
    ("\(hashA) 12 main/has space", "white space"),
    ("\(String(repeating: "a", count: 63)) 12 main/x", "64 hexadecimal"),
    ("\(String(repeating: "g", count: 64)) 12 main/x", "64 hexadecimal"),
    ("\(hashA) -12 main/x", "decimal"),
    ("\(hashA) 1e3 main/x", "decimal"),
    ("\(hashA) 99999999999999999999 main/x", "decimal"),
  ])
  func refusesMalformedLines(line: String, reason: String) throws {
    let release = try Self.parse(Self.release([line, "\(Self.hashB) 2 main/ok"])).get()
    #expect(release.files.count == 1)
    #expect(release.refused.count == 1)
    #expect(release.refused.first?.reason.contains(reason) == true, "\(release.refused)")
  }

  @Test func duplicatePathsThatDisagreeAreRefused() throws {
    let release = try Self.parse(
      Self.release([
        "\(Self.hashA) 1 main/binary-amd64/Packages",
        "\(Self.hashB) 2 main/binary-amd64/Packages.gz",
        "\(Self.hashB) 1 main/binary-amd64/Packages",
        "\(Self.hashA) 1 main/binary-amd64/Packages",
        "\(Self.hashB) 2 main/binary-amd64/Packages.gz",
      ])
    ).get()
    #expect(release.files.map(\.path) == [Array("main/binary-amd64/Packages.gz".utf8)])
    #expect(release.file(Array("main/binary-amd64/Packages".utf8)) == nil)
    #expect(release.file(Array("main/binary-amd64/Packages.gz".utf8))?.size == 2)
    #expect(release.refused.count == 2)
    #expect(release.refused.allSatisfy { $0.reason.contains("more than once") })
  }

  /// Whole Releases refused, with the words their message holds.
  @Test(arguments: [
    ("Suite: stable\nMD5Sum:\n 0123456789abcdef0123456789abcdef 1 main/x\n", "no SHA256 field"),
    ("", "no field"),
    ("Suite: a\n\nSuite: b\nSHA256:\n", "more than one paragraph"),
    ("Suite: a\nnot a field\nSHA256:\n", "no field ('Name: value')"),
    (" orphan\nSHA256:\n", "follows no field"),
    ("Suite: a\nSuite: b\nSHA256:\n", "comes twice"),
    ("Date: yesterday\nSHA256:\n", "Date 'yesterday'"),
    ("Date: Sat, 31 Feb 2026 10:00:00 UTC\nSHA256:\n", "Date"),
    ("Date: Sat, 28 Nov 2026 10:00:00 PST\nSHA256:\n", "Date"),
    ("Valid-Until: Sat, 28 Nov 2026 25:00:00 UTC\nSHA256:\n", "Valid-Until"),
  ])
  func refusesWholeRelease(text: String, words: String) {
    guard case .failure(let problem) = Self.parse(text) else {
      Issue.record("accepted: \(text)")
      return
    }
    #expect(problem.message.contains(words), "\(problem)")
  }

  @Test func refusesOverlongLineAndBadNames() throws {
    let long = "Suite: " + String(repeating: "x", count: AptRelease.maxLineBytes + 1) + "\nSHA256:\n"
    guard case .failure(let problem) = Self.parse(long) else {
      Issue.record("accepted a long line")
      return
    }
    #expect(problem.message.contains("longer than"))
    let release = try Self.parse("Components: main ../up a/b\nArchitectures: amd64 x/y\nSHA256:\n").get()
    #expect(release.components == ["main", "a/b"])
    #expect(release.architectures == ["amd64"])
    #expect(release.refused.count == 2)
  }

  @Test(arguments: [
    ("Sat, 28 Nov 2026 10:00:00 UTC", Int64(1_795_860_000)),
    ("28 Nov 2026 10:00:00 GMT", 1_795_860_000),
    ("Sat, 28 Nov 2026 10:00 +0000", 1_795_860_000),
    ("Sat, 28 Nov 2026 12:00:00 +0200", 1_795_860_000),
    ("Thu, 1 Jan 1970 00:00:00 UTC", 0),
    ("Tue, 29 Feb 2028 00:00:00 UTC", 1_835_395_200),
  ])
  func readsDates(text: String, seconds: Int64) {
    #expect(AptDate.seconds(Array(text.utf8)) == seconds)
  }

  @Test(arguments: [
    "Xyz, 28 Nov 2026 10:00:00 UTC", "28 Foo 2026 10:00:00 UTC", "29 Feb 2026 10:00:00 UTC", "28 Nov 26 10:00:00 UTC",
    "28 Nov 2026 10:00:00", "28 Nov 2026 10:00:00 UTC extra",
  ])
  func refusesDates(text: String) {
    #expect(AptDate.seconds(Array(text.utf8)) == nil)
  }

  // MARK: - InRelease

  static let signature = """
    -----BEGIN PGP SIGNATURE-----

    iHUEARYIAB0WIQRXca9hbTsutPq3lmYriFWxo7o0CgUCawsR4AAKCRAriFWxo7o0
    =iqmK
    -----END PGP SIGNATURE-----

    """

  static func clearSigned(_ text: String) -> String {
    "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n" + text + signature
  }

  @Test func signedTextIsWhatGpgvWrites() throws {
    let document = Self.clearSigned("Origin: x   \n- -dash\n- --\nline2\t\r\n\n")
    let text = try AptClearSigned.signedText(of: Array(document.utf8)).get()
    #expect(String(decoding: text.bytes, as: UTF8.self) == "Origin: x\n-dash\n--\nline2\r\n\n")
    #expect(text.firstLine == 4)
  }

  @Test func inReleaseIsReadFromItsSignedText() throws {
    let document = Self.clearSigned(Self.release(["\(Self.hashA) 7 main/binary-amd64/Packages"]))
    let release = try Self.parse(document).get()
    #expect(release.files.first?.line == 15)
    #expect(release.suite == "stable")
  }

  /// Clear-signed documents whose structure is refused.
  @Test(arguments: [
    ("Suite: evil\n" + clearSigned("Suite: x\n"), "does not start"),
    (clearSigned("Suite: x\n") + "Suite: evil\n", "text follows the signature"),
    (clearSigned("Suite: x\n") + clearSigned("Suite: y\n"), "second signed message"),
    ("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\nSuite: x\n", "no signature block"),
    (
      "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\nSuite: x\n-----BEGIN PGP SIGNATURE-----\n\nAAAA\n",
      "no '-----END PGP SIGNATURE-----'"
    ),
    ("-----BEGIN PGP SIGNED MESSAGE-----\n\nSuite: x\n" + signature, "no 'Hash:'"),
    ("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\nCharset: x\n\nSuite: x\n" + signature, "other than 'Hash:'"),
    (clearSigned("Suite: x\n-----BEGIN PGP SIGNED MESSAGE-----\n"), "second signed message starts inside"),
    (clearSigned("Suite: x\n-not escaped\n"), "dash-escape"),
    ("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n", "ends in its armor headers"),
  ])
  func refusesOddClearSigned(document: String, words: String) {
    guard case .failure(let problem) = AptClearSigned.signedText(of: Array(document.utf8)) else {
      Issue.record("accepted: \(document)")
      return
    }
    #expect(problem.message.contains(words), "\(problem)")
    guard case .failure(let whole) = Self.parse(document) else {
      Issue.record("Release accepted: \(document)")
      return
    }
    #expect(whole.message.contains("InRelease is refused"))
  }

  @Test func plainReleaseIsNotClearSigned() {
    #expect(!AptClearSigned.looksClearSigned(Array("Suite: x\n".utf8)))
    #expect(AptClearSigned.looksClearSigned(Array(Self.clearSigned("Suite: x\n").utf8)))
    guard case .failure(let problem) = AptRelease.parse(Array(Self.clearSigned("Suite: x\n").utf8)) else {
      Issue.record("read the armor as a Release")
      return
    }
    #expect(problem.message.contains("clear-signed"))
  }
}
