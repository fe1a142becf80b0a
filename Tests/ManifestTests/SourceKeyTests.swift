import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLSupport

/// `mirrors`, `segments`, `network.min_segment_size` and `metalink:` entries: read, range-checked and
/// reported at FILE:LINE:COLUMN like every other key.
@Suite struct SourceKeyTests {
  @Test func defaultsWhenNoSourceKeyIsGiven() throws {
    let manifest = try load(minimal)
    let session = try #require(manifest.session("main"))
    #expect(session.network.segments == 1)
    #expect(session.network.minSegmentSize == 16 << 20)
    #expect(session.mirrors.isEmpty)
    #expect(session.specs.first?.mirrors.isEmpty == true)
    #expect(session.specs.first?.segments == nil)
  }

  @Test func taskMirrorsAndSegments() throws {
    let manifest = try load(
      """
      version: 1
      defaults:
        network: {segments: 4, min_segment_size: 1MB}
      sessions:
        main:
          network: {segments: 8}
          tasks:
            - download: https://example.org/a.iso
              mirrors:
                - https://m1.example.net/a.iso
                - http://m2.example.net/pub/a.iso?x=${TOKEN}
              segments: 16
      """, environment: ["TOKEN": "t0ken"])
    let session = try #require(manifest.session("main"))
    #expect(session.network.segments == 8)
    #expect(session.network.minSegmentSize == 1 << 20)
    let spec = try #require(session.specs.first)
    #expect(spec.mirrors.map(\.url) == ["https://m1.example.net/a.iso", "http://m2.example.net/pub/a.iso?x=t0ken"])
    #expect(spec.mirrors.first?.mark.line == 10)
    #expect(spec.segments == 16)
    // A ${VAR} in a mirror is a secret, as in the URL.
    #expect(manifest.secrets.contains(Secret(name: "TOKEN", value: "t0ken")))
  }

  @Test func mirrorsRepeatingTheURLOrEachOtherAreLeftOutWithAWarning() throws {
    let yaml = """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.iso
              mirrors:
                - HTTPS://EXAMPLE.org:443/a.iso
                - https://m.example.net/a.iso
                - https://m.example.net/./a.iso
      """
    #expect(
      manifestProblems(yaml) == [])
    let (manifest, warnings) = try ManifestLoader.parse(
      Array(yaml.utf8), path: "/virtual/manifest.yaml", environment: [:])
    #expect(manifest.session("main")?.specs.first?.mirrors.map(\.url) == ["https://m.example.net/a.iso"])
    let found = warnings.map { "\($0.mark.line):\($0.mark.column): \($0.severity.rawValue): \($0.message)" }
    expectMatch(
      found,
      [
        Expected(
          "7:13", "mirror 'HTTPS://EXAMPLE.org:443/a.iso' is the task's own URL; it is left out", severity: "warning"),
        Expected("9:13", "mirror 'https://m.example.net/./a.iso' repeats the mirror at line 8", severity: "warning"),
      ])
  }

  @Test func badMirrorsAreErrorsAtTheirItemWithUserInfoMasked() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.iso
              mirrors:
                - ftp://user:secret@m.example.net/a.iso
                - m.example.net/a.iso
                - https://user:pw@m2.example.net/a b
                - {url: x}
            - download: https://example.org/b.iso
              mirrors: {a: b}
      """,
      [
        Expected("7:13", "mirror: only http and https URLs are allowed, not ftp:"),
        Expected("8:13", "'m.example.net/a.iso' is not a URL"),
        Expected("9:13", "mirror: the URL contains spaces"),
        Expected("10:19", "'x' is not a URL"),
        Expected("12:18", "mirrors must be a list of URLs, found a mapping"),
      ])
    let masked = ManifestFixture.problems(
      "version: 1\nsessions:\n  main:\n    tasks:\n      - download: https://e.org/a\n        mirrors: [\"https://u:secret@x/a b\", \"ftp://u:secret@x/\", \"https://u:secret@/\"]\n"
    )
    #expect(masked.count == 3 && !render(masked).contains("secret"), "\(masked)")
  }

  @Test func aMirrorMayHaveHeadersOfItsOwn() throws {
    let manifest = try load(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.iso
              mirrors:
                - url: https://m1.example.net/a.iso
                  headers: {Authorization: "Bearer ${MIRROR}", X-Plain: yes}
                - https://m2.example.net/a.iso
      """, environment: ["MIRROR": "m1-token"])
    let spec = try #require(manifest.session("main")?.specs.first)
    #expect(spec.mirrors.map(\.url) == ["https://m1.example.net/a.iso", "https://m2.example.net/a.iso"])
    #expect(
      spec.mirrors.first?.headers.map { "\($0.name): \($0.value)" } == [
        "Authorization: Bearer m1-token", "X-Plain: yes",
      ])
    #expect(spec.mirrors.last?.headers.isEmpty == true)
    #expect(manifest.secrets.contains(Secret(name: "MIRROR", value: "m1-token")))
  }

  @Test func aMirrorMappingIsCheckedKeyByKey() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.iso
              mirrors:
                - {headers: {X-A: b}}
                - {url: "https://m.example.net/a.iso", header: {X-A: b}}
                - {url: "https://n.example.net/a.iso", headers: [x]}
                - {url: "https://o.example.net/a.iso", headers: {"X A": b}}
      """,
      [
        Expected("7:13", "a mirror given as a mapping needs 'url:'"),
        Expected("8:50", "unknown key 'header' in a mirror; did you mean 'headers'?"),
        Expected("9:59", "headers must be a mapping (key: value lines), found a list"),
        Expected("10:60", "'X A' is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)"),
      ])
  }

  @Test func mirrorsAndSegmentsApplyToDownloadsOnly() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - data: https://example.org/a.json
              mirrors: [https://m.example.net/a.json]
              segments: 2
            - upload: https://example.org/up
              from: a.bin
              segments: 2
      """,
      [
        Expected("6:9", "mirrors apply to download tasks only; a data task is sent to its URL alone"),
        Expected("7:9", "segments apply to download tasks only; a data task uses one connection"),
        Expected("10:9", "segments apply to download tasks only; a upload task uses one connection"),
      ])
  }

  @Test(
    arguments: [
      ("network: {segments: 0}", "6:25", "network.segments must be from 1 to 64, found 0", "network"),
      ("network: {segments: 65}", "6:25", "network.segments must be from 1 to 64, found 65", "network"),
      (
        "network: {segments: 99999999999999999999}", "6:25", "network.segments must be from 1 to 64, found 9999",
        "network"
      ),
      ("network: {segments: two}", "6:25", "network.segments must be a whole number, found 'two'", "network"),
      (
        "network: {min_segment_size: 512}", "6:33", "network.min_segment_size must be from 1KB to 1024TB, found '512'",
        "network"
      ),
      ("network: {min_segment_size: 1025TB}", "6:33", "network.min_segment_size '1025TB' is too large", "network"),
      ("network: {min_segment_size: lots}", "6:33", "bad size 'lots' for network.min_segment_size", "network"),
      ("network: {segment: 2}", "6:15", "unknown key 'segment' in network", "did you mean 'segments'?"),
      (
        "network: {min_segmnt_size: 2}", "6:15", "unknown key 'min_segmnt_size' in network",
        "did you mean 'min_segment_size'?"
      ),
    ] as [(String, String, String, String)])
  func sessionSegmentSettingsAreRangeChecked(setting: String, position: String, message: String, hint: String) {
    expectProblems(minimal(adding: setting), [Expected(position, message, hint)])
  }

  @Test(
    arguments: [("segments: 0", "6:19", "found 0"), ("segments: 65", "6:19", "found 65")] as [(String, String, String)])
  func taskSegmentsAreRangeChecked(setting: String, position: String, message: String) {
    expectProblems(
      "version: 1\nsessions:\n  main:\n    tasks:\n      - download: https://example.org/a\n        \(setting)\n",
      [Expected(position, "segments must be from 1 to 64", message)])
  }

  @Test func theSegmentBoundsThemselvesAreAccepted() throws {
    let manifest = try load(minimal(adding: "network: {segments: 64, min_segment_size: 1KB}"))
    #expect(manifest.session("main")?.network.segments == 64)
    #expect(manifest.session("main")?.network.minSegmentSize == 1024)
  }

  @Test func unknownTaskKeySuggestsMirrors() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a
              mirror: [https://m.example.net/a]
      """,
      [Expected("6:9", "unknown key 'mirror' in a download task", "did you mean 'mirrors'?")])
  }

  // MARK: - Session mirrors

  @Test func sessionMirrorsMapPrefixesToPrefixes() throws {
    let manifest = try load(
      """
      version: 1
      defaults:
        mirrors:
          "https://ftp.example.org/pub/": ["https://unused.example.net/"]
      sessions:
        main:
          mirrors:
            "https://ftp.example.org/pub/":
              - https://m1.example.net/pub/
              - http://m2.example.net/mirror/example/
            "https://ftp.example.org/pub/linux/": https://linux.example.net/
          tasks:
            - download: https://ftp.example.org/pub/linux/k.tar
        other:
          tasks:
            - download: https://ftp.example.org/pub/a.iso
      """)
    let main = try #require(manifest.session("main"))
    #expect(main.mirrors.map(\.prefix) == ["https://ftp.example.org/pub/", "https://ftp.example.org/pub/linux/"])
    #expect(main.mirrors.first?.mirrors == ["https://m1.example.net/pub/", "http://m2.example.net/mirror/example/"])
    #expect(
      main.mirrorURLs(for: "https://ftp.example.org/pub/a/b.iso") == [
        "https://m1.example.net/pub/a/b.iso", "http://m2.example.net/mirror/example/a/b.iso",
      ])
    // The longest matching prefix wins.
    #expect(main.mirrorURLs(for: "https://ftp.example.org/pub/linux/k.tar") == ["https://linux.example.net/k.tar"])
    #expect(main.mirrorURLs(for: "https://other.example.org/pub/a.iso") == [])
    // A session without `mirrors:` takes the one of `defaults:`.
    #expect(
      manifest.session("other")?.mirrorURLs(for: "https://ftp.example.org/pub/a.iso") == [
        "https://unused.example.net/a.iso"
      ])
  }

  @Test func sessionMirrorPrefixesAreChecked() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          mirrors:
            "https://ftp.example.org/pub": ["https://m.example.net/pub/"]
            "ftp://ftp.example.org/": ["https://m.example.net/"]
            "https://a.example.org/":
              - https://a.example.org/
              - https://b.example.org/x?y=/
              - https://c.example.org/
              - https://c.example.org/
            "https://d.example.org/": []
            "https://e.example.org/": {x: y}
          tasks:
            - download: https://example.org/a
      """,
      [
        Expected("5:7", "mirror prefix 'https://ftp.example.org/pub' must end in '/'"),
        Expected("6:7", "mirror prefix: only http and https URLs are allowed, not ftp:"),
        Expected(
          "8:11", "mirror prefix 'https://a.example.org/' is the prefix it mirrors; it is left out", severity: "warning"
        ),
        Expected("9:11", "mirror prefix 'https://b.example.org/x?y=/' must end in '/' (a folder URL, without ?query"),
        Expected("11:11", "repeats the one at line 10; it is left out", severity: "warning"),
        Expected("12:33", "'https://d.example.org/' lists no mirrors", severity: "warning"),
        Expected("13:33", "the mirrors of 'https://e.example.org/' must be a list of URL prefixes"),
      ])
  }

  @Test func sessionMirrorsMustBeAMapping() {
    expectProblems(
      minimal(adding: "mirrors: [https://m.example.net/]"),
      [Expected("6:14", "mirrors must be a mapping (key: value lines), found a list")])
  }

  // MARK: - Metalink entries

  @Test func metalinkEntryIsReadLikeAList() throws {
    let manifest = try load(
      """
      version: 1
      sessions:
        main:
          tasks:
            - id: base
              download: https://example.org/base
            - metalink: releases/${NAME}.meta4
              to: isos/
              headers: {X-Client: batchdl}
              priority: high
              after: base
            - metalink: https://example.org/all.meta4
      """, environment: ["NAME": "leap"])
    let entries = try #require(manifest.session("main")?.tasks)
    guard case .metalink(let local) = entries[1], case .metalink(let remote) = entries[2] else {
      Issue.record("expected metalink entries, found \(entries)")
      return
    }
    #expect(local.document == "releases/leap.meta4" && !local.isURL)
    #expect(local.documentMark.line == 7 && local.documentMark.column == 19)
    #expect(local.to == "isos/" && local.priority == .high && local.after.map(\.id) == ["base"])
    #expect(local.headers.map(\.name) == ["X-Client"])
    #expect(remote.isURL && remote.document == "https://example.org/all.meta4" && remote.to == nil)
    // A variable in the document's path is a path, not a secret.
    #expect(manifest.secrets.isEmpty)
  }

  @Test func metalinkEntryRefusesKeysTheDocumentAnswers() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - metalink: a.meta4
              kind: data
              method: POST
              sha256: abc
              mirrors: [https://m.example.net/]
              size: 10
              id: x
              too: d/
              segments: 2
      """,
      [
        Expected("6:9", "'kind' is not allowed in a metalink entry: a Metalink document lists downloads only"),
        Expected(
          "7:9", "'method' is not allowed in a metalink entry: the files of a Metalink document are fetched with GET"),
        Expected("8:9", "'sha256' is not allowed in a metalink entry: each file's <hash> elements are checked"),
        Expected("9:9", "'mirrors' is not allowed in a metalink entry: each file's <url> elements are its sources"),
        Expected("10:9", "'size' is not allowed in a metalink entry: each file's <size> is checked"),
        Expected("11:9", "'id' is not allowed in a metalink entry: each file's id is its destination"),
        Expected("12:9", "unknown key 'too' in a metalink entry", "did you mean 'to'?"),
        Expected("13:9", "unknown key 'segments' in a metalink entry"),
      ])
  }

  @Test func metalinkDocumentMustBeAPathOrAnHTTPURL() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - metalink: ftp://example.org/a.meta4
            - metalink: ""
            - metalink: https://user:pw@/a.meta4
            - metalink: a.meta4
              to: ../out/
      """,
      [
        Expected("5:19", "metalink takes a file path or an http or https URL, not ftp:"),
        Expected("6:19", "metalink needs the path or URL of a Metalink document"),
        Expected("7:19", "metalink: "),
        Expected("9:13", "to '../out/' climbs out"),
      ])
    #expect(
      !render(manifestProblems("version: 1\nsessions:\n  main:\n    tasks:\n      - metalink: https://user:pw@/a\n"))
        .contains("pw"))
  }

  @Test func misspelledMetalinkIsSuggested() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - metalnk: a.meta4
      """,
      [
        Expected(
          "5:9", "a task starts with one of data:, download:, upload:, list:, metalink:, index: or apt:",
          "did you mean 'metalink'?")
      ])
  }
}
