import Foundation
import TestSupport
import Testing

@testable import BatchDLManifest
@testable import BatchDLSupport

private let sha256A = String(repeating: "a", count: 64)
private let sha256B = String(repeating: "b", count: 64)
private let sha512A = String(repeating: "a", count: 128)
private let sha1A = String(repeating: "1", count: 40)
private let md5A = String(repeating: "5", count: 32)

/// Parses `text` as the checksum file `SUMS`.
private func parse(_ text: String) -> ChecksumFile {
  ChecksumFile.parse(Array(text.utf8), file: "SUMS")
}

/// Diagnostics as `LINE:COLUMN: severity: message`.
private func rendered(_ file: ChecksumFile) -> [String] {
  file.diagnostics.map { "\($0.mark.line):\($0.mark.column): \($0.severity.rawValue): \($0.message)" }
}

/// Whether `text` holds a character a terminal acts on (C0 and C1 controls, DEL).
private func hasControl(_ text: String) -> Bool {
  text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
}

/// One line of a checksum file and the entry it gives.
struct ChecksumLineCase: CustomTestStringConvertible, Sendable {
  var line: String
  var name: String
  var algorithm: DigestAlgorithm
  var hex: String
  var testDescription: String { line.debugDescription }
}

/// One hostile line, put between two good ones, and the error it gives at line 2.
struct HostileLineCase: CustomTestStringConvertible, Sendable {
  var line: [UInt8]
  var column: Int
  var words: [String]
  var testDescription: String { String(decoding: line.prefix(60), as: UTF8.self).debugDescription }

  init(_ line: String, column: Int, _ words: String...) {
    self.line = Array(line.utf8)
    self.column = column
    self.words = words
  }

  init(bytes: [UInt8], column: Int, _ words: String...) {
    self.line = bytes
    self.column = column
    self.words = words
  }
}

/// Checksum files as coreutils, BSD and publishers write them, and hostile ones: every line is read
/// on its own, a bad line is an error at its position and only that line is skipped.
@Suite struct ChecksumFileTests {
  // MARK: - Formats

  static let lines: [ChecksumLineCase] = [
    .init(line: "\(sha256A)  a.iso", name: "a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A) *a.iso", name: "a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A)  ./a.iso", name: "a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A) a.iso", name: "a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A)\t a.iso", name: "a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A.uppercased())  a.iso", name: "a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "  \(sha256A)  a.iso", name: "a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A)  pool/main/a.deb", name: "pool/main/a.deb", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A)  ./pool//main/./a.deb", name: "pool/main/a.deb", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A)  my file (1).iso", name: "my file (1).iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A)  caf\u{E9}.iso", name: "caf\u{E9}.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A)  a.iso ", name: "a.iso ", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A)  a\\b.iso", name: "a\\b.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha256A)  *a.iso", name: "*a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\(sha512A)  a.iso", name: "a.iso", algorithm: .sha512, hex: sha512A),
    .init(line: "\(sha1A)  a.iso", name: "a.iso", algorithm: .sha1, hex: sha1A),
    .init(line: "\(md5A)  a.iso", name: "a.iso", algorithm: .md5, hex: md5A),
    // coreutils escapes a name with a backslash, a newline or a carriage return, and marks the line.
    .init(line: "\\\(sha256A)  a\\\\b.iso", name: "a\\b.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\\\(sha256A)  plain.iso", name: "plain.iso", algorithm: .sha256, hex: sha256A),
    // BSD tags (BSD, coreutils --tag, cksum -a sha2).
    .init(line: "SHA256 (a.iso) = \(sha256A)", name: "a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "SHA512 (a.iso) = \(sha512A)", name: "a.iso", algorithm: .sha512, hex: sha512A),
    .init(line: "SHA1 (a.iso) = \(sha1A)", name: "a.iso", algorithm: .sha1, hex: sha1A),
    .init(line: "MD5 (a.iso) = \(md5A)", name: "a.iso", algorithm: .md5, hex: md5A),
    .init(line: "SHA2-256 (a.iso) = \(sha256A)", name: "a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "SHA2-512 (a.iso) = \(sha512A)", name: "a.iso", algorithm: .sha512, hex: sha512A),
    .init(line: "sha256 (a.iso) = \(sha256A.uppercased())", name: "a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "SHA256(a.iso)=\(sha256A)", name: "a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "SHA256 (a (1)) = x.iso) = \(sha256A)  ", name: "a (1)) = x.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "SHA256 (./sub/a.iso) = \(sha256A)", name: "sub/a.iso", algorithm: .sha256, hex: sha256A),
    .init(line: "\\SHA256 (a\\\\b) = \(sha256A)", name: "a\\b", algorithm: .sha256, hex: sha256A),
  ]

  @Test(arguments: lines)
  func aLineGivesItsEntry(_ item: ChecksumLineCase) throws {
    let file = parse("\(item.line)\n")
    #expect(file.diagnostics.isEmpty, "\(rendered(file))")
    let entry = try #require(file.entries.first)
    #expect(file.entries.count == 1)
    #expect(entry.name == item.name)
    #expect(entry.digest == ExpectedDigest(algorithm: item.algorithm, hex: item.hex))
    #expect(entry.isWeak == !item.algorithm.isStrong)
    #expect(entry.mark.line == 1)
  }

  @Test func aPublishedFileMixesFormatsAlgorithmsCommentsAndLineEnds() throws {
    let file = ChecksumFile.parse(
      Array(
        ("\u{FEFF}# SHA256SUMS of release 1.0\r\n"
          + "\r\n"
          + "\(sha256A) *debian.iso\r\n"
          + "   # an indented comment\n"
          + "SHA512 (debian.iso) = \(sha512A)\n"
          + "\(md5A)  debian.iso\n"
          + "\(sha1A)  old/notes.txt\n"
          + "\t\n"
          + "\(sha256B)  ./sub/other.iso").utf8), file: "SUMS")
    #expect(file.diagnostics.isEmpty, "\(rendered(file))")
    #expect(!file.isUnusable && !file.isClearSigned)
    #expect(file.entries.map(\.name) == ["debian.iso", "debian.iso", "debian.iso", "old/notes.txt", "sub/other.iso"])
    #expect(file.entries.map(\.mark.line) == [3, 5, 6, 7, 9])
    let debian = file.entries(named: "debian.iso")
    #expect(debian.map(\.digest.algorithm) == [.sha256, .sha512, .md5])
    #expect(file.entries(named: "old/notes.txt").first?.isWeak == true)
    #expect(file.entries(named: "nothing").isEmpty)
  }

  @Test func longCommentsAndBlankLinesAreSkipped() {
    let comment = "# " + String(repeating: "c", count: ChecksumFile.maxLineBytes)
    let file = parse("\(comment)\n\n   \n\t# note\n\(sha256A)  a.iso\n\n")
    #expect(file.diagnostics.isEmpty, "\(rendered(file))")
    #expect(file.entries.map(\.mark) == [SourceMark(file: "SUMS", line: 5, column: 1)])
  }

  @Test func aRepeatedLineIsDroppedSilently() {
    let file = parse("\(sha256A)  a.iso\n\(sha256A.uppercased()) *./a.iso\nSHA256 (a.iso) = \(sha256A)\n")
    #expect(file.diagnostics.isEmpty, "\(rendered(file))")
    #expect(file.entries.count == 1)
  }

  // MARK: - Hostile lines

  static let hostile: [HostileLineCase] = [
    .init(String(repeating: "x", count: ChecksumFile.maxLineBytes + 1), column: 1, "longer than 16KB"),
    .init(
      "\(sha256A)  " + String(repeating: "n", count: ChecksumFile.maxLineBytes), column: 1, "longer than 16KB"),
    .init(bytes: Array("\(sha256A)  a".utf8) + [0] + Array("b.iso".utf8), column: 68, "NUL byte"),
    .init(bytes: Array("\(sha256A)  caf\u{E9}".utf8) + [0xFF] + Array(".iso".utf8), column: 71, "not UTF-8", "0xFF"),
    .init(bytes: Array("\(sha256A)  a".utf8) + [0xC3, 0x28], column: 68, "not UTF-8", "0xC3"),
    .init(bytes: Array("\(sha256A)  a".utf8) + [0xED, 0xA0, 0x80], column: 68, "not UTF-8"),
    .init("\(sha256A)  /etc/passwd", column: 67, "'/etc/passwd' is absolute"),
    .init("SHA256 (/etc/passwd) = \(sha256A)", column: 9, "'/etc/passwd' is absolute"),
    .init("\(sha256A)  ../secret", column: 67, "'../secret' contains '..'"),
    .init("\(sha256A)  a/../../secret", column: 67, "contains '..'"),
    .init("\(sha256A)  a/../b", column: 67, "contains '..'"),
    .init("\(sha256A)  a/..", column: 67, "contains '..'"),
    .init("\\\(sha256A)  a/\\n/..", column: 68, "contains a control character"),
    .init("\(sha256A)  .", column: 67, "names the folder itself"),
    .init("\(sha256A)  ./", column: 67, "names a folder"),
    .init("\(sha256A)  sub/", column: 67, "names a folder"),
    .init("\(sha256A)  a\u{1B}[2Jb", column: 67, #"'a\u{1B}[2Jb' contains a control character"#),
    .init("\(sha256A)  a\u{9B}2K", column: 67, #"'a\u{9B}2K' contains a control character"#),
    .init("\(sha256A)  a\u{7F}", column: 67, "control character"),
    .init("\(sha256A)  a\rb", column: 67, #"'a\rb' contains a control character"#),
    .init("\\\(sha256A)  a\\nSUMS:1:1: error: forged", column: 68, #"'a\nSUMS:1:1: error: forged'"#, "control"),
    .init("\\\(sha256A)  a\\rb", column: 68, "control character"),
    .init("\\\(sha256A)  a\\tb", column: 69, #"unknown escape '\t'"#),
    .init("\\\(sha256A)  ab\\", column: 70, #"unknown escape '\'"#),
    .init("\(sha256A)  " + String(repeating: "n", count: 256), column: 67, "longer than 255 bytes"),
    .init("abcdef0123456789a  a.iso", column: 1, "17 hexadecimal digits", "64: SHA-256"),
    .init("\(sha256A)0  a.iso", column: 1, "65 hexadecimal digits"),
    .init("\(sha256A)", column: 1, "no file name"),
    .init("\(sha256A)  ", column: 67, "no file name"),
    .init("\(sha256A)z  a.iso", column: 1, "not a checksum line", "found"),
    .init("hello world", column: 1, "not a checksum line", "'hello world'"),
    .init("-----BEGIN PGP SIGNATURE-----", column: 1, "not a checksum line"),
    .init("SHA256 (a.iso = \(sha256A)", column: 8, "no ')' ends the name"),
    .init("SHA256 a.iso) = \(sha256A)", column: 1, "not a checksum line"),
    .init("SHA256 (a.iso) \(sha256A)", column: 14, "expected ' = '"),
    .init("SHA256 (a.iso) = xyz", column: 18, "bad SHA256 hash", "found 'x'"),
    .init("SHA512 (a.iso) = \(sha256A)", column: 18, "bad SHA512 hash", "128 hexadecimal digits, found 64"),
    .init("SHA256 (a.iso) = ", column: 18, "bad SHA256 hash", "found 0"),
    .init("SHA256 (\u{1B}]0;x\u{07}) = \(sha256A)", column: 9, #"'\u{1B}]0;x\u{7}' contains a control character"#),
  ]

  @Test(arguments: hostile)
  func aHostileLineIsOneErrorAtItsPositionAndTheOthersStay(_ item: HostileLineCase) {
    let bytes = Array("\(sha256A)  first.iso\n".utf8) + item.line + Array("\nSHA256 (last.iso) = \(sha256B)\n".utf8)
    let file = ChecksumFile.parse(bytes, file: "SUMS")
    let found = rendered(file)
    #expect(found.count == 1, "\(found)")
    let line = found.first ?? ""
    #expect(line.hasPrefix("2:\(item.column): error: "), "\(line)")
    for word in item.words {
      #expect(line.contains(word), "expected '\(word)' in: \(line)")
    }
    #expect(!hasControl(line), "\(line)")
    #expect(file.entries.map(\.name) == ["first.iso", "last.iso"])
    #expect(!file.isUnusable)
  }

  @Test func aBadHashLeavesItsReadableNameOutWithTheReason() {
    let file = parse(
      """
      SHA256 (a.iso) = 1234
      abcdef0123456789a  b.iso
      \(sha256A)  c.iso
      """)
    #expect(rendered(file).count == 2)
    #expect(file.leftOut.map(\.name) == ["a.iso", "b.iso"])
    #expect(file.leftOut(named: "a.iso")?.message.contains("bad hash") == true)
    #expect(file.leftOut(named: "b.iso")?.message.contains("17 hexadecimal digits") == true)
    #expect(file.leftOut(named: "c.iso") == nil)
  }

  @Test func algorithmsBatchdlDoesNotCheckAreOneWarningEachAndLeaveOnlyTheirNamesOut() {
    let sha384 = String(repeating: "3", count: 96)
    let file = parse(
      """
      BLAKE2b (a.iso) = \(String(repeating: "b", count: 128))
      BLAKE2b (b.iso) = \(String(repeating: "b", count: 128))
      SHA384 (a.iso) = \(sha384)
      \(sha384)  c.iso
      \(sha256A)  a.iso
      """)
    #expect(
      rendered(file) == [
        "1:1: warning: 2 lines give BLAKE2b hashes, which batchdl does not check; they are ignored (the first is here)",
        "3:1: warning: 1 line gives SHA384 hashes, which batchdl does not check; they are ignored (the first is here)",
        "4:1: warning: 1 line gives hashes of 96 hexadecimal digits (SHA-384 or SHA3-384), which batchdl does not check; they are ignored (the first is here)",
      ])
    #expect(!file.hasErrors)
    #expect(file.entries.map(\.name) == ["a.iso"])
    #expect(match(file, "b.iso", "b.iso").message.contains("only a BLAKE2b hash"))
    #expect(match(file, "a.iso", "a.iso").digest?.algorithm == .sha256)
  }

  @Test func twoHashesOfOneAlgorithmForANameLeaveThatNameOut() {
    let file = parse(
      """
      \(sha256A)  a.iso
      SHA512 (a.iso) = \(sha512A)
      \(sha256A)  b.iso
      \(sha256B)  ./a.iso
      \(sha256B)  a.iso
      """)
    #expect(rendered(file).count == 1, "\(rendered(file))")
    #expect(rendered(file).first?.hasPrefix("4:1: error: 'a.iso' has another sha-256 hash at line 1") == true)
    #expect(file.entries.map(\.name) == ["b.iso"])
    guard case .leftOut(let item, .path) = match(file, "a.iso", "a.iso") else {
      Issue.record("a.iso should be left out")
      return
    }
    #expect(item.message.contains("two different sha-256 hashes (lines 1 and 4)"))
  }

  @Test func namesAreComparedByTheirBytes() {
    let nfc = "caf\u{E9}.iso"
    let nfd = "cafe\u{301}.iso"
    let file = parse("\(sha256A)  \(nfc)\n\(sha256B)  \(nfd)\n")
    #expect(file.diagnostics.isEmpty)
    #expect(file.entries(named: nfc).first?.digest.hex == sha256A)
    #expect(file.entries(named: nfd).first?.digest.hex == sha256B)
  }

  /// Debian's Release file (`HASH SIZE PATH` under `SHA256:`) is no checksum file: none of its lines
  /// becomes an entry (none named `SIZE PATH`), each is "not a checksum line".
  @Test func releaseFormatLinesNeverBecomeEntries() {
    let release = """
      Origin: Debian
      SHA256:
       \(sha256A)     71858 main/binary-amd64/Packages
       \(sha256B)  1484322 main/binary-amd64/Packages.gz
       \(sha256A) 1484322 main/binary-amd64/Release
      \(sha256B)    79 main/binary-amd64/Release
      \(sha256B)\t79 Release
      \(sha256A)  2024 notes.txt
      \(sha256A) 2024 notes.md
      """
    let file = parse(release)
    let errors = rendered(file)
    #expect(errors.filter { $0.contains("not a checksum line") }.count == 7, "\(errors)")
    #expect(errors.filter { $0.contains("Debian's Release format") }.count == 5, "\(errors)")
    #expect(errors.first { $0.hasPrefix("3:2: ") }?.contains("Debian's Release format") == true, "\(errors)")
    for name in [
      "71858 main/binary-amd64/Packages", "    71858 main/binary-amd64/Packages",
      "1484322 main/binary-amd64/Packages.gz",
      "1484322 main/binary-amd64/Release", "   79 main/binary-amd64/Release", "79 Release", "Packages", "Release",
    ] {
      #expect(file.entries(named: name).isEmpty && file.leftOut(named: name) == nil, "\(name)")
    }
    // A coreutils line (not indented, its own separator) whose name starts with digits stays a name.
    #expect(file.entries(named: "2024 notes.txt").first?.digest.hex == sha256A)
    #expect(file.entries(named: "2024 notes.md").first?.digest.hex == sha256A)
    var matcher = ChecksumMatcher(file: file)
    #expect(matcher.match(CoveredFile(path: "Packages", fileName: "Packages", identity: "Packages")).entries.isEmpty)
  }

  // MARK: - Bounds

  @Test func aFileLargerThanTheLimitIsRefusedWhole() {
    let bytes = [UInt8](repeating: 0x23, count: ChecksumFile.maxBytes + 1)
    let file = ChecksumFile.parse(bytes, file: "SUMS")
    #expect(file.isUnusable && file.entries.isEmpty)
    #expect(
      rendered(file) == ["1:1: error: the checksum file holds 67108865 bytes, more than 64MB, the most batchdl reads"])
  }

  @Test func aFileWithTooManyLinesIsRefusedWholeAtTheLineOverTheLimit() {
    let text = (1...6).map { "\(sha256A)  f\($0)" }.joined(separator: "\n# comment\n")
    let file = ChecksumFile.parse(Array(text.utf8), file: "SUMS", maxLines: 5)
    #expect(file.isUnusable && file.entries.isEmpty && file.leftOut.isEmpty)
    #expect(
      rendered(file) == [
        "11:1: error: the checksum file has more than 5 checksum lines, the most batchdl reads; it is refused"
      ])
    #expect(!ChecksumFile.parse(Array(text.utf8), file: "SUMS", maxLines: 6).isUnusable)
  }

  @Test func pastAHundredProblemsOneMoreErrorCountsTheRest() {
    let text = (0..<150).map { "bad \($0)" }.joined(separator: "\n") + "\n\(sha256A)  good.iso\n"
    let file = parse(text)
    #expect(file.diagnostics.count == ChecksumFile.maxListedProblems + 1)
    #expect(
      rendered(file).last == "101:1: error: 50 more lines have problems (the first 100 are listed); they are skipped")
    #expect(file.entries.map(\.name) == ["good.iso"])
  }

  @Test func readingAFileChecksItsSizeAndKind() {
    let folder = TemporaryDirectory()
    let path = folder.write("SHA256SUMS", "\(sha256A)  a.iso\n")
    let file = ChecksumFile.read(path: path, display: "SHA256SUMS")
    #expect(file.entries.map(\.name) == ["a.iso"])
    #expect(file.entries.first?.mark.file == "SHA256SUMS")
    let named = SourceMark(file: "m.yaml", line: 4, column: 16)
    let missing = ChecksumFile.read(path: folder.path + "/nothing", named: named)
    #expect(missing.isUnusable)
    #expect(
      missing.diagnostics.map(\.description).first?.hasPrefix("m.yaml:4:16: error: cannot read the checksum file")
        == true)
    let directory = ChecksumFile.read(path: folder.path)
    #expect(directory.diagnostics.first?.message.contains("a folder") == true)
  }

  // MARK: - Clear-signed files

  static let clearSigned = """
    Text before the message is not signed
    \(sha256B)  before.iso
    -----BEGIN PGP SIGNED MESSAGE-----
    Hash: SHA256

    \(sha256A)  a.iso
    - -----BEGIN PGP SIGNED MESSAGE-----
    SHA256 (../b.iso) = \(sha256A)
    -----BEGIN PGP SIGNATURE-----

    iHUEARYIAB0WIQQ=
    -----END PGP SIGNATURE-----
    \(sha256B)  after.iso
    """

  @Test func aClearSignedFileGivesNothingUntilItsSignatureIsChecked() {
    let bytes = Array(Self.clearSigned.utf8)
    #expect(ChecksumFile.isClearSigned(bytes))
    let file = ChecksumFile.parse(bytes, file: "SUMS.asc")
    #expect(file.isClearSigned && file.isUnusable)
    #expect(file.entries.isEmpty && file.leftOut.isEmpty)
    #expect(rendered(file).count == 1)
    #expect(rendered(file).first?.hasPrefix("3:1: error: the checksum file is clear-signed (OpenPGP)") == true)
    #expect(rendered(file).first?.contains("'keyring:'") == true)
    #expect(ChecksumFile.isClearSigned(Array("x\n-----BEGIN PGP SIGNED MESSAGE----- \r\n".utf8)))
    #expect(!ChecksumFile.isClearSigned(Array(" -----BEGIN PGP SIGNED MESSAGE-----\n".utf8)))
    #expect(!ChecksumFile.isClearSigned(Array("\(sha256A)  a.iso\n".utf8)))
  }

  @Test func theSignedTextIsReadWithPositionsInTheOriginal() {
    // What gpgv writes for the message above: its signed text, dash-escapes removed.
    let signed = "\(sha256A)  a.iso\n-----BEGIN PGP SIGNED MESSAGE-----\nSHA256 (../b.iso) = \(sha256A)\n"
    let file = ChecksumFile.parse(
      signedText: Array(signed.utf8), of: Array(Self.clearSigned.utf8), file: "SUMS.asc")
    #expect(!file.isClearSigned && !file.isUnusable)
    #expect(file.entries.map(\.name) == ["a.iso"])
    #expect(file.entries.first?.mark == SourceMark(file: "SUMS.asc", line: 6, column: 1))
    let found = rendered(file)
    #expect(found.count == 2, "\(found)")
    #expect(found.first?.hasPrefix("7:3: error: not a checksum line") == true, "\(found)")
    #expect(found.last?.hasPrefix("8:9: error: file name '../b.iso' contains '..'") == true, "\(found)")
  }

  // MARK: - Matching

  private static let tree = parse(
    """
    \(sha256A)  a.iso
    \(sha256B)  sub/a.iso
    \(sha512A)  pool/main/b.deb
    \(md5A)  pool/main/b.deb
    \(sha256A)  pool/main/b.deb
    \(sha256A)  x/c.iso
    \(sha256B)  y/c.iso
    SHA256 (z/c.iso) = 12
    \(md5A)  weak.txt
    SHA256 (bad/d.iso) = 12
    SHA256 (e.iso) = 12
    \(sha512A)  b.deb
    """)

  /// The match of the one covered file at `path` named `fileName`.
  private func match(_ file: ChecksumFile, _ path: String?, _ fileName: String) -> ChecksumMatch {
    var matcher = ChecksumMatcher(file: file)
    return matcher.match(CoveredFile(path: path, fileName: fileName, identity: path ?? "elsewhere/" + fileName))
  }

  @Test func aTaskIsMatchedByItsPathFirst() {
    let found = match(Self.tree, "sub/a.iso", "a.iso")
    guard case .matched("sub/a.iso", .path, let entries) = found else {
      Issue.record("\(found)")
      return
    }
    #expect(entries.map(\.digest.hex) == [sha256B])
    #expect(found.message == "matched 'sub/a.iso' at SUMS:2:1 by its path")
    let several = match(Self.tree, "pool/main/b.deb", "b.deb")
    #expect(several.entries.map(\.digest.algorithm) == [.sha256, .sha512, .md5])
    #expect(several.digest?.algorithm == .sha256)
  }

  @Test func aTaskWhosePathIsNotListedIsMatchedByABareNameOnly() {
    let found = match(Self.tree, "debian/pool/main/b.deb", "b.deb")
    guard case .matched("b.deb", .fileName, let entries) = found else {
      Issue.record("\(found)")
      return
    }
    #expect(entries.map(\.digest.algorithm) == [.sha512])
    #expect(found.message == "matched 'b.deb' at SUMS:12:1 by its file name")
    guard case .matched(_, .fileName, _) = match(Self.tree, nil, "b.deb") else {
      Issue.record("a task without a path is matched by a bare name")
      return
    }
    // A name with a folder matches its path only, never a file of that name elsewhere.
    #expect(match(Self.tree, "w/c.iso", "c.iso") == .none(file: "SUMS", path: "w/c.iso", fileName: "c.iso"))
    #expect(match(Self.tree, "sub/x/c.iso", "c.iso").entries.isEmpty)
  }

  @Test func aBareNameSeveralCoveredFilesHaveIsAmbiguous() {
    var matcher = ChecksumMatcher(
      file: Self.tree,
      covering: [
        CoveredFile(path: "a.iso", fileName: "a.iso", identity: "a.iso"),
        CoveredFile(path: "other/a.iso", fileName: "a.iso", identity: "other/a.iso"),
      ])
    // "a.iso" is the path of one of them: that one is matched by it.
    guard
      case .matched("a.iso", .path, _) = matcher.match(CoveredFile(path: "a.iso", fileName: "a.iso", identity: "a.iso"))
    else {
      Issue.record("a.iso by path")
      return
    }
    let other = matcher.match(CoveredFile(path: "other/a.iso", fileName: "a.iso", identity: "other/a.iso"))
    guard case .ambiguous("SUMS", "other/a.iso", "a.iso", let entry) = other else {
      Issue.record("\(other)")
      return
    }
    #expect(entry.mark.line == 1)
    #expect(
      other.message
        == "SUMS lists no 'other/a.iso', and its bare name 'a.iso' at line 1 names several of the files it covers: which one is meant is ambiguous (a checksum file names such a file by its path)"
    )
    // The same file covered twice (two tasks of one URL) is one file.
    var once = ChecksumMatcher(file: Self.tree)
    once.cover(CoveredFile(path: "other/a.iso", fileName: "a.iso", identity: "other/a.iso"))
    guard
      case .matched("a.iso", .fileName, _) = once.match(
        CoveredFile(path: "other/a.iso", fileName: "a.iso", identity: "other/a.iso"))
    else {
      Issue.record("one file covered twice")
      return
    }
  }

  @Test func aTaskTheFileDoesNotListIsNone() {
    let found = match(Self.tree, "e/nothing.iso", "nothing.iso")
    #expect(found == .none(file: "SUMS", path: "e/nothing.iso", fileName: "nothing.iso"))
    #expect(found.message == "SUMS lists no 'e/nothing.iso', and no bare name 'nothing.iso'")
    #expect(found.digest == nil && found.entries.isEmpty)
    #expect(match(Self.tree, nil, "nothing.iso").message == "SUMS lists no entry by path; no bare name 'nothing.iso'")
  }

  @Test func aNameLeftOutIsTheAnswerWithItsReason() {
    let byPath = match(Self.tree, "bad/d.iso", "d.iso")
    guard case .leftOut(let item, .path) = byPath else {
      Issue.record("\(byPath)")
      return
    }
    #expect(item.mark.line == 10)
    #expect(byPath.message.hasPrefix("SUMS:10:1: 'bad/d.iso' (matched by its path) has no usable hash: "))
    guard case .leftOut(_, .fileName) = match(Self.tree, "elsewhere/e.iso", "e.iso") else {
      Issue.record("e.iso by name")
      return
    }
    #expect(match(Self.tree, "elsewhere/d.iso", "d.iso").rule == nil)
  }

  @Test func aWeakOnlyEntryIsFlagged() {
    let found = match(Self.tree, "weak.txt", "weak.txt")
    #expect(found.digest?.algorithm == .md5)
    #expect(found.entries.first?.isWeak == true)
  }

  @Test func aMessageShowsHostileNamesEscaped() {
    let found = match(Self.tree, "a\nSUMS:1:1: error: forged", "x\u{1B}[2J")
    #expect(!hasControl(found.message), "\(found.message)")
  }

  @Test func matchesOfSeveralFilesCombine() {
    let first = parse("\(sha256A)  a.iso\n")
    let second = parse("SHA512 (a.iso) = \(sha512A)\n\(sha256A)  a.iso\n")
    let third = parse("\(sha256B)  a.iso\n")
    let none = parse("\(sha256A)  other.iso\n")
    let matches = [none, first, second].map { match($0, "a.iso", "a.iso") }
    let combined = ChecksumMatch.combine(matches)
    #expect(combined?.entries.map(\.digest.algorithm) == [.sha256, .sha512])
    guard case .disagreement = ChecksumMatch.combine([first, third].map { match($0, "a.iso", "a.iso") })
    else {
      Issue.record("two files that disagree")
      return
    }
    let leftOut = match(parse("SHA256 (a.iso) = 1\n"), "a.iso", "a.iso")
    #expect(ChecksumMatch.combine([match(none, "a.iso", "a.iso"), leftOut]) == leftOut)
    #expect(ChecksumMatch.combine([]) == nil)
    // A name found by path wins over a bare name found by file name in another file.
    let byName = match(third, nil, "a.iso")
    #expect(byName.rule == .fileName)
    #expect(ChecksumMatch.combine([byName, match(first, "a.iso", "a.iso")])?.digest?.hex == sha256A)
    #expect(ChecksumMatch.combine([byName, leftOut]) == leftOut)
    #expect(ChecksumMatch.combine([byName, match(none, "a.iso", "a.iso")]) == byName)
  }

  static let relativePaths: [(url: String, checksums: String, path: String?)] = [
    ("https://h.example/pub/a.iso", "https://h.example/pub/SHA256SUMS", "a.iso"),
    ("https://h.example/pub/iso/a%20b.iso", "https://h.example/pub/SHA256SUMS", "iso/a b.iso"),
    ("https://h.example/pub/caf%C3%A9.iso", "https://h.example/pub/SUMS", "caf\u{E9}.iso"),
    ("https://h.example/pub/a.iso?download=1#top", "https://h.example/pub/SUMS?x=1", "a.iso"),
    ("https://h.example/pub/a.iso", "https://h.example/SUMS", "pub/a.iso"),
    ("https://h.example/pub/a.iso", "https://h.example/pub/", "a.iso"),
    ("https://h.example/pub/a.iso", "https://other.example/pub/SUMS", nil),
    ("http://h.example/pub/a.iso", "https://h.example/pub/SUMS", nil),
    ("https://h.example:8443/pub/a.iso", "https://h.example/pub/SUMS", nil),
    ("https://h.example/other/a.iso", "https://h.example/pub/SUMS", nil),
    ("https://h.example/pubx/a.iso", "https://h.example/pub/SUMS", nil),
    ("https://h.example/pub/", "https://h.example/pub/SUMS", nil),
    ("https://h.example/pub/a%2Fb.iso", "https://h.example/pub/SUMS", nil),
    ("https://h.example/pub/a%00b.iso", "https://h.example/pub/SUMS", nil),
    ("https://h.example/pub/a%0Ab.iso", "https://h.example/pub/SUMS", nil),
    ("https://h.example/pub/a%FFb.iso", "https://h.example/pub/SUMS", nil),
    ("https://h.example/pub/%2E%2E/a.iso", "https://h.example/pub/SUMS", nil),
    ("not a url", "https://h.example/pub/SUMS", nil),
  ]

  @Test(arguments: relativePaths)
  func aURLsPathIsRelativeToTheChecksumFilesFolder(_ item: (url: String, checksums: String, path: String?)) {
    #expect(ChecksumFile.relativePath(ofURL: item.url, checksumURL: item.checksums) == item.path)
  }
}
