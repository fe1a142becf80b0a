import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLPlan
@testable import BatchDLSupport

/// `list:` entries: one task per line of a file of URLs.
@Suite struct ListFileTests {
  static let listManifest = """
    version: 1
    sessions:
      s:
        dest: out
        tasks:
          - list: urls.txt
            to: files/
    """

  @Test func aLineMayGiveSizeAndDigestColumnsAndAQuotedDestination() throws {
    let sha = String(repeating: "ab", count: 32)
    let sha512 = String(repeating: "cd", count: 64)
    let urls = """
      https://a.example/one.iso  one.iso  sha256:\(sha)  size:1024
      https://a.example/two.iso  sha512:\(sha512.uppercased())
      https://a.example/three.iso  "my file.iso"  size:7
      """
    let planned = try planned(Self.listManifest, files: ["urls.txt": urls])
    let plan = planned.plan
    #expect(
      plan.tasks.map { plan.destination(of: $0) } == [
        "out/files/one.iso", "out/files/two.iso", "out/files/my file.iso",
      ])
    let expectations = plan.tasks.map { plan.expectation(of: $0) }
    #expect(expectations[0] == TaskExpectation(size: 1024, digest: ExpectedDigest(algorithm: .sha256, hex: sha)))
    #expect(expectations[1] == TaskExpectation(digest: ExpectedDigest(algorithm: .sha512, hex: sha512)))
    #expect(expectations[2] == TaskExpectation(size: 7))
  }

  @Test func aColumnThatIsNotOneIsAnErrorAtItsColumn() {
    let sha = String(repeating: "ab", count: 32)
    let found = problems(
      Self.listManifest,
      files: [
        "urls.txt": """
        https://a.example/one.iso  my file.iso
        https://a.example/two.iso  two.iso  sha256:abc
        https://a.example/three.iso  three.iso  size:lots
        https://a.example/four.iso  "four.iso
        https://a.example/five.iso  five.iso  sha256:\(sha)  sha512:\(sha)\(sha)
        """
      ])
    expectMatch(
      found,
      [
        Expected("urls.txt:1:31", "'file.iso' is not a column batchdl reads"),
        Expected("urls.txt:2:44", "a sha-256 hash is 64 hexadecimal digits"),
        Expected("urls.txt:3:41", "size: must be a whole number of bytes"),
        Expected("urls.txt:4:29", "no closing"),
        Expected("urls.txt:5:112", "give one sha256: or sha512: per line"),
      ])
  }

  @Test func aDestinationWithAControlCharacterOrPastLinuxLimitsIsRefusedAndShownEscaped() {
    let long = String(repeating: "x/", count: 2100) + "y"
    let found = problems(
      Self.listManifest,
      files: [
        "urls.txt": "https://a.example/one  \"x\u{1B}[31mred\"\nhttps://a.example/two  \"c\u{9B}2J\"\n"
          + "https://a.example/three  \(String(repeating: "n", count: 256))\nhttps://a.example/four  \(long)\n"
      ])
    expectMatch(
      found,
      [
        Expected("urls.txt:1:24", #"'files/x\u{1B}[31mred' contains a control character (U+001B)"#),
        Expected("urls.txt:2:24", "contains a control character (U+009B)"),
        Expected("urls.txt:3:26", "has a name longer than 255 bytes"),
        Expected("urls.txt:4:25", "is longer than 4096 bytes"),
      ])
    #expect(
      !found.joined().unicodeScalars.contains {
        $0.value < 0x20 && $0.value != 0x0A || (0x7F...0x9F).contains($0.value)
      })
  }

  @Test func aDestinationThatNamesTheListsFolderIsAnError() {
    // With `to: files/`, "" or "." made the file take the folder's place.
    let found = problems(
      Self.listManifest,
      files: ["urls.txt": "https://a.example/a \"\"\nhttps://a.example/b .\nhttps://a.example/c \"./\"\n"])
    expectMatch(
      found,
      [
        Expected("urls.txt:1:21", "names the list's folder itself"),
        Expected("urls.txt:2:21", "names the list's folder itself"),
        Expected("urls.txt:3:21", "names the list's folder itself"),
      ])
  }

  @Test func expandsOneTaskPerLine() throws {
    let urls = """
      # nightly mirror
      https://a.example/pub/one.tar.gz

      https://a.example/pub/two.tar.gz   renamed.tar.gz
      \thttps://b.example/three.iso\tiso/three.iso\t
        # an indented comment
      https://b.example/dir/four.bin sub/folder/

      """
    let planned = try planned(Self.listManifest, files: ["urls.txt": urls])
    let plan = planned.plan
    #expect(plan.tasks.count == 4)
    #expect(plan.requests.count == 4)
    #expect(
      plan.tasks.map { plan.destination(of: $0) } == [
        "out/files/one.tar.gz", "out/files/renamed.tar.gz", "out/files/iso/three.iso",
        "out/files/sub/folder/four.bin",
      ])
    #expect(plan.tasks.map { plan.id(of: $0) } == plan.tasks.map { plan.destination(of: $0) ?? "" })
    #expect(plan.tasks.map(\.line) == [2, 4, 5, 7])
    #expect(plan.tasks.allSatisfy { $0.kind == .download && $0.entry == 0 && $0.session == 0 })
    #expect(plan.tasks.map { plan.url(of: $0) }[2] == "https://b.example/three.iso")
    #expect(planned.plan.warnings.isEmpty)
  }

  @Test func windowsLineEndingsAndByteOrderMark() throws {
    let urls = "\u{FEFF}https://a.example/one.bin\r\nhttps://a.example/two.bin  2.bin\r\n"
    let planned = try planned(Self.listManifest, files: ["urls.txt": urls])
    #expect(
      planned.plan.tasks.map { planned.plan.destination(of: $0) } == ["out/files/one.bin", "out/files/2.bin"])
    #expect(planned.orderedURLs == ["https://a.example/one.bin", "https://a.example/two.bin"])
  }

  @Test func listWithoutToUsesTheSessionDest() throws {
    let planned = try planned(
      manifest("- list: lists/urls.txt", dest: "mirror"),
      files: ["lists/urls.txt": "https://a.example/x.bin\nhttps://a.example/y.bin y/z.bin\n"])
    #expect(planned.plan.tasks.map { planned.plan.destination(of: $0) } == ["mirror/x.bin", "mirror/y/z.bin"])
  }

  @Test func dataListAndListSettingsApplyToEveryLine() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          tasks:
            - list: urls.txt
              kind: data
              to: json/
              headers: {Accept: application/json}
              priority: high
            - download: https://a.example/1.json
              to: plain/1.json
      """,
      files: ["urls.txt": "https://a.example/1.json\nhttps://a.example/2.json\n"])
    let plan = planned.plan
    #expect(plan.tasks.count == 3)
    // The manifest task sends no Accept header: another request.
    #expect(plan.requests.count == 3)
    #expect(plan.tasks.prefix(2).allSatisfy { $0.kind == .data })
    #expect(plan.requests.prefix(2).allSatisfy { $0.priority == .high })
    #expect(planned.orderedTasks.prefix(2).flatMap { $0 } == ["json/1.json", "json/2.json"])
  }

  @Test func listAfterAppliesToEveryLine() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://z.example/index.txt
        - list: urls.txt
          after: index.txt
        """),
      files: ["urls.txt": "https://a.example/1\nhttps://b.example/2\n"])
    #expect(planned.orderedURLs.first == "https://z.example/index.txt")
    #expect(planned.plan.requests.filter { $0.dependencies.count == 1 }.count == 2)
  }

  /// Once, and quickly: looking for a suggestion per line made a 5,000-line list take minutes.
  @Test func unknownListAfterIsReportedOnce() {
    let urls = (0..<2_000).map { "https://a.example/dir/file-\($0).bin" }.joined(separator: "\n")
    let start = ContinuousClock.now
    expectProblems(
      manifest(
        """
        - download: https://z.example/index.txt
        - list: urls.txt
          after: index.tx
        """),
      files: ["urls.txt": urls],
      [Expected("7:16", "after: no task has the id 'index.tx'", "did you mean 'index.txt'?")])
    #expect(ContinuousClock.now - start < .seconds(5))
  }

  @Test func badLinesReportFileLineAndColumn() {
    let urls = """
      https://a.example/fine.bin
      not-a-url
        ftp://a.example/file.bin
      https://a.example/dir/
      https://a.example/ok.bin   ../../escape.bin
      https://a.example/abs.bin /etc/passwd
      https://a.example/a%20b
      https://b.example/fine.bin
      """
    expectProblems(
      Self.listManifest, files: ["urls.txt": urls],
      [
        Expected("urls.txt:2:1", "'not-a-url' is not a URL"),
        Expected("urls.txt:3:3", "only http and https URLs are allowed, not ftp:"),
        Expected("urls.txt:4:1", "cannot name the file after the URL"),
        Expected("urls.txt:5:28", "climbs out of its folder"),
        Expected("urls.txt:6:27", "'/etc/passwd' is absolute"),
        Expected("urls.txt:8:1", "two different requests write 'out/files/fine.bin'", "urls.txt:1:1"),
      ])
  }

  @Test func conflictsBetweenListLinesAndManifestTasks() {
    expectProblems(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://z.example/a.bin
            - list: urls.txt
      """,
      files: ["urls.txt": "https://b.example/b.bin\nhttps://a.example/a.bin\nhttps://a.example/c a.bin/c\n"],
      [
        Expected("5:9", "'a.bin' is a file here but a folder for the task at urls.txt:3:1"),
        Expected("urls.txt:2:1", "two different requests write 'a.bin'", "manifest.yaml:5:9"),
      ])
  }

  @Test func repeatedLinesAreMergedWithOneWarning() throws {
    let urls = """
      https://a.example/1.bin
      https://a.example/2.bin
      https://A.example:443/1.bin
      https://a.example/3.bin
      https://a.example/2.bin
      https://a.example/1.bin
      """
    let three = try planned(Self.listManifest, files: ["urls.txt": urls])
    #expect(three.plan.tasks.count == 3)
    #expect(three.plan.mergedDuplicates == 3)
    expectMatch(
      three.warnings,
      [Expected("6:15", "3 lines of urls.txt repeat an earlier task", "were merged", severity: "warning")])

    let once = try planned(Self.listManifest, files: ["urls.txt": "https://a.example/1\nhttps://a.example/1\n"])
    expectMatch(
      once.warnings, [Expected("6:15", "1 line of urls.txt repeats an earlier task", "was merged", severity: "warning")]
    )
  }

  @Test func missingListFileIsReportedAtTheListValue() {
    expectProblems(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://a.example/x
            - list:   missing.txt
              to: files/
      """,
      [Expected("6:17", "cannot read the list file missing.txt", "No such file or directory")])
  }

  @Test func listFileThatIsAFolder() {
    let found = problems(manifest("- list: lists"), files: ["lists/a.txt": "https://a.example/x\n"])
    expectMatch(found, [Expected("5:15", "cannot read the list file lists")])
  }

  @Test func emptyListFileGivesNoTasks() throws {
    let planned = try planned(
      manifest(
        """
        - list: urls.txt
        - download: https://a.example/x
        """),
      files: ["urls.txt": "# nothing yet\n\n"])
    #expect(planned.plan.tasks.count == 1)
  }

  @Test func moreThanFiftyBadLinesAreSummarised() {
    let urls = (1...60).map { "bad-\($0)" }.joined(separator: "\n") + "\nhttps://a.example/fine\n"
    let found = problems(Self.listManifest, files: ["urls.txt": urls])
    #expect(found.count == 51)
    expectMatch(Array(found.prefix(2)), [Expected("urls.txt:1:1", "'bad-1'"), Expected("urls.txt:2:1", "'bad-2'")])
    #expect(found[49].hasPrefix("urls.txt:50:1: error: 'bad-50'"))
    #expect(!found.contains { $0.contains("'bad-51'") })
    expectMatch(
      Array(found.suffix(1)),
      [Expected("urls.txt:61:1", "10 more lines of urls.txt have problems", "only the first 50 are listed")])
  }

  @Test func summaryCountsEveryKindOfProblem() {
    // 50 reported problems, then 3 unnamed, 2 conflicting and 1 escaping line that are only counted.
    var lines = (1...50).map { "bad-\($0)" }
    lines += ["https://a.example/", "https://a.example/dir/", "https://a.example/x/"]
    lines += ["https://a.example/one.bin", "https://b.example/one.bin", "https://c.example/one.bin"]
    lines += ["https://a.example/two.bin ../../two.bin"]
    let found = problems(Self.listManifest, files: ["urls.txt": lines.joined(separator: "\n")])
    #expect(found.count == 51)
    #expect(found.last?.contains("6 more lines of urls.txt have problems") == true, "\(found.last ?? "")")
  }

  @Test func exactlyFiftyBadLinesAreAllListed() {
    let urls = (1...50).map { "bad-\($0)" }.joined(separator: "\n")
    let found = problems(Self.listManifest, files: ["urls.txt": urls])
    #expect(found.count == 50)
    #expect(!found.contains { $0.contains("more lines") })
  }

  @Test func eachListHasItsOwnLimit() {
    let bad = (1...55).map { "bad-\($0)" }.joined(separator: "\n")
    let found = problems(
      manifest(
        """
        - list: one.txt
        - list: two.txt
        """),
      files: ["one.txt": bad, "two.txt": "https://a.example/x\n" + bad])
    #expect(found.count == 102)
    #expect(found.contains { $0.hasPrefix("one.txt:55:1: error: 5 more lines of one.txt") })
    #expect(found.contains { $0.hasPrefix("two.txt:56:1: error: 5 more lines of two.txt") })
  }

  @Test func largeListExpands() throws {
    let urls = (0..<5_000).map { "https://host\($0 % 7).example/file-\($0).bin" }.joined(separator: "\n")
    let planned = try planned(Self.listManifest, files: ["urls.txt": urls])
    #expect(planned.plan.tasks.count == 5_000)
    #expect(planned.plan.requests.count == 5_000)
    #expect(planned.plan.hosts.count == 7)
    #expect(planned.plan.tasks.last.map { planned.plan.destination(of: $0) } == "out/files/file-4999.bin")
  }
}
