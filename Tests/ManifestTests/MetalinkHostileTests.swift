import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLSupport

private let sha256A = String(repeating: "a", count: 64)

/// Reads `text` as the document `doc.meta4`.
private func read(_ text: String) -> MetalinkDocument {
  Metalink.parse(Array(text.utf8), file: "doc.meta4")
}

/// A Metalink 4 document with `files` inside; the first file starts on line 3.
private func document(_ files: String) -> String {
  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + root(files)
}

/// The `<metalink>` element with `files` on the line after its start tag.
private func root(_ files: String) -> String {
  "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n\(files)\n</metalink>\n"
}

/// Whether `text` holds a character a terminal acts on (C0 and C1 controls, DEL).
private func hasControl(_ text: String) -> Bool {
  text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
}

/// Documents from the network written to hurt: forged output, names that look alike, DTDs, deep
/// nesting and huge counts. Each is refused quickly, at its element, without touching the rest.
@Suite struct MetalinkHostileTests {
  // MARK: - Forged output

  @Test func aNameWithANewlineIsShownEscapedAndForgesNoLine() {
    let found = read(
      document(
        "<file name=\"a&#10;m.yaml:1:1: error: forged&#x9B;2K\"><url>https://example.org/a</url></file>"))
    #expect(found.files.isEmpty)
    #expect(found.diagnostics.count == 1)
    let message = found.diagnostics.first?.message ?? ""
    #expect(!message.contains("\n"), "\(message)")
    #expect(!hasControl(message), "\(message)")
    #expect(
      message.hasPrefix(#"file name 'a\nm.yaml:1:1: error: forged\u{9B}2K' contains a control character"#),
      "\(message)")
  }

  @Test(
    arguments: [
      "<url>ftp://example.org/&#10;m.yaml:1:1: error: forged</url><url>https://e.org/a</url>",
      "<url>ftp&#13;&#x9B;1A:x</url><url>https://e.org/a</url>",
      "<url priority=\"1&#10;m.yaml:1:1: error: forged\">https://e.org/a</url>",
      "<metaurl mediatype=\"torrent&#10;m.yaml:1:1: error: forged\">https://e.org/t</metaurl><url>https://e.org/a</url>",
      "<pieces length=\"1&#10;m.yaml:1:1: error: forged\" type=\"sha-256\"></pieces><url>https://e.org/a</url>",
      "<pieces length=\"16384\" type=\"x&#10;forged\"><hash>\(sha256A)</hash></pieces><url>https://e.org/a</url>",
      "<hash type=\"sha-256\">&#x9B;2J\(sha256A)</hash><url>https://e.org/a</url>",
      "<size>1&#10;m.yaml:1:1: error: forged</size><url>https://e.org/a</url>",
      "<size>&#x85;&#x9B;31m</size><url>https://e.org/a</url>",
    ])
  func documentTextIsShownEscapedInEveryMessage(element: String) {
    let found = read(document("<file name=\"f\">\(element)</file>"))
    #expect(!found.diagnostics.isEmpty)
    for diagnostic in found.diagnostics {
      #expect(!hasControl(diagnostic.message), "\(diagnostic.message)")
    }
  }

  @Test func aMetalink3URLTypeIsShownEscaped() {
    let found = read(
      """
      <metalink version="3.0" xmlns="http://www.metalinker.org/"><files><file name="f"><resources>
      <url type="ftp&#10;m.yaml:1:1: error: forged">ftp://e.org/&#10;x</url><url type="http">http://e.org/f</url>
      </resources></file></files></metalink>
      """)
    #expect(found.files.count == 1)
    #expect(found.diagnostics.count == 1)
    #expect(found.diagnostics.allSatisfy { !hasControl($0.message) }, "\(found.diagnostics)")
  }

  @Test func escapingShowsControlsAndLeavesOtherTextAlone() {
    #expect(ShownText.escaped("a\nb\r\tc\u{1B}[0m\u{7F}\u{85}\u{202E}é") == #"a\nb\r\tc\u{1B}[0m\u{7F}\u{85}\u{202E}é"#)
    #expect(ShownText.escaped(String(repeating: "x", count: 100), limit: 10) == "xxxxxxxxxx…")
    #expect(ShownText.escaped("plain/name.iso") == "plain/name.iso")
  }

  // MARK: - Names that look alike

  @Test func nfcAndNFDSpellingsOfANameAreTwoFiles() {
    let nfc = "caf\u{E9}.txt"
    let nfd = "cafe\u{301}.txt"
    #expect(nfc == nfd, "Swift compares them as equal: the reader must not")
    let found = read(
      document(
        "<file name=\"\(nfc)\"><url>https://e.org/1</url></file>\n<file name=\"\(nfd)\"><url>https://e.org/2</url></file>"
      ))
    #expect(found.diagnostics.isEmpty, "\(found.diagnostics)")
    #expect(found.files.map { Array($0.name.utf8) } == [Array(nfc.utf8), Array(nfd.utf8)])
  }

  @Test func theSameBytesTwiceAreStillListedTwice() {
    let nfd = "cafe\u{301}.txt"
    let found = read(
      document(
        "<file name=\"\(nfd)\"><url>https://e.org/1</url></file>\n<file name=\"./\(nfd)\"><url>https://e.org/2</url></file>"
      ))
    #expect(found.files.count == 1)
    #expect(
      found.diagnostics.map(\.message) == ["file '\(nfd)' is listed twice (first at line 3); the second is left out"])
  }

  // MARK: - DTDs, refused by the parser itself

  /// Declarations the parser reports, each before the root element on line 2. (Spelled so that
  /// Foundation survives them: it crashes on some others, see `theByteCheckIsTheGuardAgainstFoundationCrashes`.)
  @Test(
    arguments: [
      ("<!DOCTYPE metalink [<!ELEMENT metalink ANY>]>", "declares the element 'metalink'"),
      ("<!DOCTYPE metalink [<!ATTLIST file name CDATA \"../evil\">]>", "declares the attribute 'name' of <file>"),
      ("<!DOCTYPE metalink [<!NOTATION n PUBLIC \"-//x//n\" \"x\">]>", "declares the notation 'n'"),
    ] as [(String, String)])
  func aDeclarationStopsTheParserAtItsPosition(doctype: String, message: String) {
    let text = "<?xml version=\"1.0\"?>\n\(doctype)\n" + root("<file name=\"a\"><url>https://e.org/a</url></file>")
    let found = Metalink.parseXML(Array(text.utf8), file: "doc.meta4")
    #expect(found.version == nil)
    #expect(found.files.isEmpty)
    #expect(found.diagnostics.count == 1)
    let diagnostic = found.diagnostics.first
    #expect(diagnostic?.mark.line == 2, "\(String(describing: diagnostic))")
    #expect(diagnostic?.message.contains(message) == true, "\(String(describing: diagnostic))")
    #expect(diagnostic?.message.contains("Metalink needs no DTD") == true, "\(String(describing: diagnostic))")
  }

  /// Foundation on Linux crashes (SIGSEGV) on `<!ATTLIST ... #IMPLIED>`, a `<!NOTATION>` without a
  /// public or a system id and an unparsed `<!ENTITY ... SYSTEM ... NDATA>`, before the delegate
  /// hears of them: no document may reach the parser with a DTD. These are refused on the bytes.
  @Test(
    arguments: [
      "<!DOCTYPE metalink [<!ATTLIST file name CDATA #IMPLIED>]>",
      "<!DOCTYPE metalink [<!NOTATION n SYSTEM \"x\">]>",
      "<!DOCTYPE metalink [<!ENTITY u SYSTEM \"x\" NDATA n>]>",
    ])
  func theByteCheckIsTheGuardAgainstFoundationCrashes(doctype: String) {
    let found = read("<?xml version=\"1.0\"?>\n\(doctype)\n" + root(""))
    #expect(found.version == nil)
    #expect(found.diagnostics.first?.message.hasPrefix("the document has a <!DOCTYPE>") == true)
  }

  @Test func anEBCDICDocumentIsRefusedBeforeParsing() throws {
    // <?xml version="1.0"?> then <!DOCTYPE metalink [<!NOTATION n SYSTEM "x">]> and <metalink .../>
    // in EBCDIC (code page 037), which libxml2 detects from its first four bytes: the <!DOCTYPE>
    // passed the check on the bytes, and the <!NOTATION> crashed Foundation.
    let base64 =
      "TG+nlJNApYWZoomWlX5/8Uvwf29uJUxaxNbD4+jXxUCUhaOBk4mVkkC6TFrV1uPB48nW1UCVQOLo4uPF1EB/p39uu24lTJSFo4GTiZWSQKeUk5Wifn+kmZV6iYWjhnqXgZmBlKJ6p5STepWiepSFo4GTiZWSf2FuJQ=="
    let bytes = [UInt8](try #require(Data(base64Encoded: base64)))
    let found = Metalink.parse(bytes, file: "doc.meta4")
    #expect(found.version == nil)
    #expect(
      found.diagnostics.map(\.message) == [
        "the document is not UTF-8 (it looks like EBCDIC): batchdl reads Metalink documents in UTF-8 only"
      ])
  }

  @Test(arguments: ["encoding\n=\n'UTF-32'", "encoding\r\n= \"UTF-16\"", "encoding =\t'ucs-4'"])
  func aDeclaredEncodingIsFoundAcrossLines(declaration: String) {
    let text = "<?xml version=\"1.0\" \(declaration)?>\n" + root("")
    let found = read(text)
    #expect(found.version == nil)
    #expect(
      found.diagnostics.first?.message.hasPrefix("the document declares encoding") == true, "\(found.diagnostics)")
  }

  @Test func entityExpansionIsStoppedByTheParserWithoutTheByteCheck() {
    // "Billion laughs": ten levels of ten references expand to 10^9 copies.
    var text = "<?xml version=\"1.0\"?>\n<!DOCTYPE metalink [\n  <!ENTITY lol \"lol\">\n"
    for level in 1...9 {
      let previous = level == 1 ? "lol" : "lol\(level - 1)"
      text += "  <!ENTITY lol\(level) \"" + String(repeating: "&\(previous);", count: 10) + "\">\n"
    }
    text += "]>\n" + root("<file name=\"&lol9;\"><url>https://example.org/&lol9;</url></file>")
    let found = Metalink.parseXML(Array(text.utf8), file: "doc.meta4")
    #expect(found.version == nil)
    #expect(found.files.isEmpty)
    #expect(found.diagnostics.count == 1)
    // Foundation on Linux does not pass entity declarations to the delegate: libxml2 stops the
    // expansion past its amplification limit, at the reference.
    #expect(found.diagnostics.first?.message.contains("entities") == true, "\(found.diagnostics)")
    #expect(!found.diagnostics.contains { $0.message.contains("lollol") })
  }

  @Test func anExternalEntityIsNeverReadWithoutTheByteCheck() {
    let folder = TemporaryDirectory()
    let secret = folder.write("secret.txt", "TOP-SECRET")
    let text =
      "<?xml version=\"1.0\"?>\n<!DOCTYPE m [<!ENTITY e SYSTEM \"file://\(secret)\">]>\n"
      + root("<file name=\"a\"><url>https://example.org/&e;</url></file>")
    // Foundation never loads it (`externalEntityResolvingPolicy` is `.never`) and does not tell the
    // delegate: the reference stands for nothing.
    let parsed = Metalink.parseXML(Array(text.utf8), file: "doc.meta4")
    #expect(!parsed.files.contains { $0.sources.contains { $0.url.contains("TOP-SECRET") } })
    #expect(!parsed.diagnostics.contains { $0.message.contains("TOP-SECRET") })
    // The check on the bytes refuses the document.
    let found = read(text)
    #expect(found.version == nil)
    #expect(found.files.isEmpty)
  }

  @Test func theByteCheckStillRefusesADoctypeFirst() {
    let text = "<?xml version=\"1.0\"?>\n<!DOCTYPE metalink [<!ELEMENT metalink ANY>]>\n" + root("")
    #expect(
      read(text).diagnostics.map(\.message) == [
        "the document has a <!DOCTYPE>: Metalink needs none, and its entity declarations are refused; remove it"
      ])
  }

  // MARK: - Depth and counts

  @Test func deepNestingIsRefusedAtTheFirstElementTooDeep() {
    let depth = 200_000
    let text =
      "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">"
      + String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth) + "</metalink>"
    let found = read(text)
    #expect(found.version == nil)
    #expect(found.files.isEmpty)
    let rendered = found.diagnostics.map { "\($0.mark.line):\($0.mark.column): \($0.message)" }
    #expect(rendered.count == 1, "\(rendered)")
    // <metalink ...> takes columns 1-50; the 64th <a> is the 65th element open.
    #expect(
      rendered.first?.hasPrefix(
        "1:\(51 + 63 * 3): elements are nested more than \(Metalink.maxDepth) deep") == true,
      "\(rendered)")
  }

  @Test func deepForeignNestingInsideAFileIsRefusedToo() {
    let depth = 100_000
    let text = document(
      "<file name=\"a\" xmlns:x=\"urn:x\"><url>https://e.org/a</url>"
        + String(repeating: "<x:a>", count: depth) + String(repeating: "</x:a>", count: depth) + "</file>")
    let found = read(text)
    #expect(found.version == nil)
    #expect(found.diagnostics.count == 1)
    #expect(found.diagnostics.first?.message.contains("nested more than") == true, "\(found.diagnostics)")
  }

  @Test func nestingWithinTheBoundIsRead() {
    let depth = Metalink.maxDepth - 3
    let text = document(
      "<file name=\"a\"><url>https://e.org/a</url>"
        + String(repeating: "<extra>", count: depth) + String(repeating: "</extra>", count: depth) + "</file>")
    let found = read(text)
    #expect(found.diagnostics.isEmpty, "\(found.diagnostics)")
    #expect(found.files.count == 1)
  }

  @Test func urlsBeyondTheBoundAreIgnoredWithOneWarning() throws {
    let count = 40_000
    var urls = ""
    for index in 0..<count { urls += "<url>https://m\(index).example.org/a</url>" }
    let found = read(document("<file name=\"a\">\(urls)</file>"))
    let file = try #require(found.files.first)
    #expect(file.sources.count == Metalink.maxURLsPerFile)
    #expect(file.sources.last?.url == "https://m\(Metalink.maxURLsPerFile - 1).example.org/a")
    #expect(
      found.diagnostics.map(\.message) == [
        "file 'a' has more than \(Metalink.maxURLsPerFile) <url>s: the rest are ignored"
      ])
  }

  @Test func ignoredURLsCountTowardsTheBound() {
    var urls = ""
    for index in 0..<(Metalink.maxURLsPerFile + 500) { urls += "<url>ftp://m\(index).example.org/a</url>" }
    let found = read(document("<file name=\"a\">\(urls)<url>https://e.org/a</url></file>"))
    // One warning per ignored URL up to the bound, one for the rest, and the file has no source.
    #expect(found.diagnostics.count == Metalink.maxURLsPerFile + 2, "\(found.diagnostics.suffix(2))")
    #expect(found.files.isEmpty)
  }

  @Test func tinyPiecesOfALargerFileAreRefused() {
    // 337 KB describing a 70 KB file in pieces of 1 byte.
    let size = 70_000
    let hashes = String(repeating: "<hash>\(String(repeating: "1", count: 40))</hash>", count: size)
    let found = read(
      document(
        """
        <file name="a"><size>\(size)</size>
          <pieces length="1" type="sha-1">\(hashes)</pieces><url>https://e.org/a</url></file>
        <file name="b"><url>https://e.org/b</url></file>
        """))
    #expect(found.files.map(\.name) == ["b"])
    let rendered = found.diagnostics.map { "\($0.mark.line):\($0.mark.column): \($0.severity): \($0.message)" }
    #expect(
      rendered == [
        "4:3: error: <pieces length=\"1\"> lists more than \(Metalink.maxSmallPieces) pieces shorter than 16384 bytes: pieces that short are for a small file only",
        "3:1: warning: file 'a' is left out because of the errors above",
      ])
  }

  @Test func aFewShortPiecesOfASmallFileAreRead() throws {
    let hashes = String(repeating: "<hash>\(sha256A)</hash>", count: 4)
    let found = read(
      document(
        "<file name=\"a\"><size>1000</size><pieces length=\"256\" type=\"sha-256\">\(hashes)</pieces><url>https://e.org/a</url></file>"
      ))
    #expect(found.diagnostics.isEmpty, "\(found.diagnostics)")
    #expect(try #require(found.files.first?.pieces).hashes.count == 4)
  }
}
