import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest

/// `apt:` entries: what they hold, and every mistake reported at its `LINE:COLUMN` with what to do.
@Suite struct AptManifestTests {
  /// `entry`'s lines are indented by two more spaces (keys of the `- apt:` item).
  static func manifest(_ entry: String, session: String = "") -> String {
    let entry = entry.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }.joined(
      separator: "\n")
    return """
      version: 1
      sessions:
        debian:
          dest: mirror
      \(session)
          tasks:
            - apt: https://deb.example.org/debian
      \(entry)
      """
  }

  @Test func anEntryHoldsItsKeys() throws {
    let manifest = try load(
      Self.manifest(
        """
              suites: [stable, stable/updates]
              components: [main, contrib]
              architectures: [amd64, all]
              sources: true
              keyring: keys/debian.gpg
              keep_removed: 2d
              to: debian/
        """, session: "    prune: true"))
    guard case .apt(let spec) = manifest.sessions.first?.tasks.first else {
      Issue.record("not an apt entry")
      return
    }
    #expect(spec.url == "https://deb.example.org/debian/")
    #expect(spec.suites == ["stable", "stable/updates"] && spec.components == ["main", "contrib"])
    #expect(spec.architectures == ["amd64", "all"] && spec.sources && spec.keyring == "keys/debian.gpg")
    #expect(spec.keepRemoved.milliseconds == 2 * 86_400_000 && spec.to == "debian/")
    #expect(
      spec.url(of: Array("pool/main/a b/x%y_1.0+1~2_amd64.deb".utf8))
        == "https://deb.example.org/debian/pool/main/a%20b/x%25y_1.0+1~2_amd64.deb")
  }

  @Test func missingKeysAreErrorsAtTheEntry() {
    expectMatch(
      manifestProblems(Self.manifest("")),
      [
        Expected("7:9", "needs suites:"), Expected("7:9", "needs components:"),
        Expected("7:9", "needs architectures:"), Expected("7:9", "needs keyring:", "nothing unsigned is mirrored"),
      ])
  }

  @Test(arguments: [
    ("      suites: stable", "8:17", ["suites must be a list"]),
    ("      suites: []", "8:17", ["suites must name one at least"]),
    ("      suites: [\"../x\"]", "8:18", ["'../x'", "climbs out"]),
    ("      suites: [\"a b\"]", "8:18", ["letters, digits"]),
    ("      suites: [stable, stable]", "8:26", ["'stable' is given twice"]),
    ("      components: [\"/main\"]", "8:22", ["absolute"]),
    ("      keyring: https://example.org/key.gpg", "8:18", ["path of an OpenPGP public keyring"]),
    ("      keep_removed: soon", "8:23", ["bad duration 'soon' for keep_removed"]),
    ("      sources: maybe", "8:18", ["sources"]),
    ("      checksums: https://example.org/SHA256SUMS", "8:9", ["checksums", "the signed Release"]),
    ("      include: [\"*.deb\"]", "8:9", ["include", "suites:, components:"]),
  ])
  func aBadKeyIsAnErrorAtItsPlace(_ line: String, _ position: String, _ words: [String]) {
    let complete = [
      "      suites: [stable]", "      components: [main]", "      architectures: [amd64]", "      keyring: k.gpg",
    ]
    let key = line.split(separator: ":").first.map(String.init) ?? ""
    let entry = ([line] + complete.filter { !$0.hasPrefix(key + ":") }).joined(separator: "\n")
    let found = manifestProblems(Self.manifest(entry)).filter { $0.contains("error") }
    #expect(found.count == 1, "\(render(found))")
    var expected = Expected(position)
    expected.words = words
    expectMatch(found, [expected])
  }

  @Test func keepRemovedNeedsTheSessionsPrune() {
    let found = manifestProblems(
      Self.manifest(
        """
              suites: [stable]
              components: [main]
              architectures: [amd64]
              keyring: k.gpg
              keep_removed: 2d
        """))
    expectMatch(found, [Expected("12:23", "keep_removed", "does not prune", "prune: {max_delete")])
  }

  @Test func theURLMustBeHTTPWithoutAQuery() {
    let entry = "      suites: [stable]\n      components: [main]\n      architectures: [amd64]\n      keyring: k.gpg"
    for (url, word) in [
      ("ftp://deb.example.org/debian/", "http or https URL of a repository's root"),
      ("https://deb.example.org/debian/?x=1", "without a query or fragment"),
    ] {
      let yaml = Self.manifest(entry).replacingOccurrences(of: "https://deb.example.org/debian", with: url)
      expectMatch(manifestProblems(yaml), [Expected("7:14", word)])
    }
  }
}
