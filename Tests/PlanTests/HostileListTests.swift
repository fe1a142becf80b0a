import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLSupport

/// List files that are not files, that never end or that pass the limits, and messages that quote
/// credentials from the manifest or its list files.
@Suite struct HostileListTests {
  static func lines(_ count: Int) -> String {
    (0..<count).map { "https://a.example/\($0).bin\n" }.joined()
  }

  func readAll(_ path: String, limits: LineReader.Limits) throws(FileProblem) -> [String] {
    var lines: [String] = []
    let reader = try LineReader(path: path, limits: limits)
    try reader.forEachLine { lines.append(String(decoding: $0, as: UTF8.self)) }
    return lines
  }

  @Test func devicesAndFIFOsAreRefusedAtTheListKey() throws {
    let folder = TemporaryDirectory()
    let fifo = folder.path + "/urls.fifo"
    #expect(mkfifo(fifo, 0o600) == 0)
    for (name, kind) in [
      ("/dev/zero", "a character device"), (fifo, "a FIFO (named pipe)"), ("/dev/null", "a character device"),
    ] {
      let found = problems(manifest("- list: \(name)"))
      expectMatch(found, [Expected("5:15", "cannot read the list file \(name): it is \(kind), not a regular file")])
    }
  }

  @Test func aMetalinkDocumentThatIsAFIFOIsRefusedEvenWithAWriter() throws {
    // A writer holding the FIFO open made validate wait for it.
    let folder = TemporaryDirectory()
    let fifo = folder.path + "/doc.meta4"
    #expect(mkfifo(fifo, 0o600) == 0)
    let reader = open(fifo, O_RDONLY | O_NONBLOCK)
    let writer = open(fifo, O_WRONLY | O_NONBLOCK)
    defer {
      close(writer)
      close(reader)
    }
    #expect(writer >= 0)
    let document = Metalink.read(path: fifo, display: "doc.meta4")
    #expect(document.version == nil)
    #expect(
      document.diagnostics.map(\.message) == [
        "cannot read the Metalink document: it is a FIFO (named pipe), not a regular file"
      ])
  }

  @Test func readerStopsAtEachLimit() throws {
    let folder = TemporaryDirectory()
    let path = folder.write("urls.txt", Self.lines(10))
    let generous = LineReader.Limits(bytes: 1 << 20, lines: 100, lineBytes: 100)
    #expect(try readAll(path, limits: generous).count == 10)
    #expect(try readAll(path, limits: LineReader.Limits(bytes: 1 << 20, lines: 10, lineBytes: 100)).count == 10)
    #expect(throws: FileProblem.self) {
      try readAll(path, limits: LineReader.Limits(bytes: 1 << 20, lines: 9, lineBytes: 100))
    }
    #expect(throws: FileProblem.self) {
      try readAll(path, limits: LineReader.Limits(bytes: 100, lines: 100, lineBytes: 100))
    }
    do {
      _ = try readAll(path, limits: LineReader.Limits(bytes: 1 << 20, lines: 100, lineBytes: 20))
      Issue.record("a line over the limit was read")
    } catch {
      #expect(error.reason.hasPrefix("line 1 is longer than 20"), "\(error.reason)")
    }
  }

  @Test func readerKeepsLinesAcrossItsBuffer() throws {
    // Lines of every length around the reader's 256 KiB buffer, the last without a line break.
    let folder = TemporaryDirectory()
    var text = ""
    var expected: [String] = []
    for length in [1, 262_140, 262_150, 0, 70_000, 300_000, 5] {
      let line = String(repeating: "x", count: length)
      expected.append(line)
      text += line + "\r\n"
    }
    text.removeLast()  // "\r\n" is one Character
    let path = folder.write("long.txt", text)
    let read = try readAll(path, limits: LineReader.Limits(bytes: 1 << 30, lines: 100, lineBytes: 1 << 20))
    #expect(read.map(\.count) == expected.map(\.count))
  }

  @Test func listLinesAreCountedPastTheLimitAsAnError() throws {
    let folder = TemporaryDirectory()
    let path = folder.write("urls.txt", Self.lines(3))
    #expect(throws: FileProblem.self) {
      try readAll(path, limits: LineReader.Limits(bytes: 1 << 20, lines: 2, lineBytes: 100))
    }
    #expect(LineReader.Limits.listFile.lines >= 1_000_000)
    #expect(LineReader.Limits.listFile.bytes >= 100 << 20)
  }

  @Test func unknownAfterMasksUserInfo() {
    let found = problems(
      manifest(
        """
        - download: https://a.example/x
          after: "http://u:SECRET@a.example/y"
        """))
    expectMatch(found, [Expected("6:16", "after: no task has the id 'http://<redacted>@a.example/y'")])
    #expect(!found.joined(separator: "\n").contains("SECRET"))
  }

  @Test func listLineProblemsMaskUserInfo() {
    let found = problems(
      manifest("- list: urls.txt"),
      files: ["urls.txt": "ftp://u:SECRET@a.example/x\nhttp://u:SECRET@a.exa mple/x\n"])
    expectMatch(found, [Expected("urls.txt:1:1", "only http and https URLs are allowed")])
    #expect(!found.joined(separator: "\n").contains("SECRET"))
  }

  @Test func userInfoIsMaskedWhereverAURLStandsInAText() {
    let cases: [(String, String)] = [
      ("after: no task has the id 'http://u:p@h/x'", "after: no task has the id 'http://<redacted>@h/x'"),
      ("'https://u:p@h' and 'http://a@b?c@d'", "'https://<redacted>@h' and 'http://<redacted>@b?c@d'"),
      ("http://u:p@ss@h:8080#f", "http://<redacted>@h:8080#f"),
      ("no url here: a@b", "no url here: a@b"),
      ("http://h/p@q", "http://h/p@q"),
      ("http://<redacted>@h/", "http://<redacted>@h/"),
    ]
    for (text, masked) in cases {
      #expect(Redactor.maskUserInfo(in: text) == masked)
    }
    #expect(
      Redactor(secrets: [Secret(name: "T", value: "abcd1234")]).text("x://u:p@h/abcd1234") == "x://<redacted>@h/${T}")
  }
}
