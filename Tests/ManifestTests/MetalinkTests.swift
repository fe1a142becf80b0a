import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLSupport

private let sha256A = String(repeating: "a", count: 64)
private let sha256B = String(repeating: "b", count: 64)
private let sha1 = String(repeating: "1", count: 40)
private let md5 = String(repeating: "5", count: 32)

/// Parses `text` as the document `doc.meta4`.
private func parse(_ text: String) -> MetalinkDocument {
  Metalink.parse(Array(text.utf8), file: "doc.meta4")
}

/// A Metalink 4 document with `files` (each a `<file>` element) inside; the first file starts on line 3.
private func meta4(_ files: String) -> String {
  """
  <?xml version="1.0" encoding="UTF-8"?>
  <metalink xmlns="urn:ietf:params:xml:ns:metalink">
  \(files)
  </metalink>
  """
}

/// Metalink 4 and 3 documents as published (RFC 5854's example, aria2 and mirrorbrain output), and
/// hostile ones: each problem is reported at its element, and only its file is left out.
@Suite struct MetalinkTests {
  @Test func metalink4AsInRFC5854() throws {
    let document = parse(
      """
      <?xml version="1.0" encoding="UTF-8"?>
      <metalink xmlns="urn:ietf:params:xml:ns:metalink">
        <published>2009-05-15T12:23:23Z</published>
        <file name="example.ext">
          <size>14471447</size>
          <identity>Example</identity>
          <version>1.0</version>
          <language>en</language>
          <description>A description of the example file for download.</description>
          <hash type="sha-256">\(sha256A.uppercased())</hash>
          <hash type="md5">\(md5)</hash>
          <url location="de" priority="3">https://ftp.example.com/example.ext</url>
          <url location="fr" priority="1">http://example.com/example.ext</url>
          <url location="de" priority="1">http://example.net/example.ext</url>
          <url>https://last.example.org/example.ext</url>
          <metaurl mediatype="torrent" priority="2">http://example.com/example.ext.torrent</metaurl>
          <pieces length="8388608" type="sha-256">
            <hash>\(sha256A)</hash>
            <hash>\(sha256B)</hash>
          </pieces>
        </file>
        <file name="sub/dir/./other.iso">
          <url>https://example.com/other.iso</url>
        </file>
      </metalink>
      """)
    #expect(document.version == .v4)
    #expect(
      rendered(document) == [
        "16:5: warning: <metaurl> (torrent) is ignored: batchdl fetches the file's http and https <url>s only"
      ])
    #expect(document.files.count == 2)
    let file = try #require(document.files.first)
    #expect(file.name == "example.ext")
    #expect(file.mark == SourceMark(file: "doc.meta4", line: 4, column: 3))
    #expect(file.size == 14_471_447)
    #expect(
      file.sources.map(\.url) == [
        "http://example.com/example.ext", "http://example.net/example.ext", "https://ftp.example.com/example.ext",
        "https://last.example.org/example.ext",
      ])
    #expect(file.sources.map(\.priority) == [1, 1, 3, nil])
    #expect(file.sources.first?.location == "fr")
    #expect(file.sources.first?.mark == SourceMark(file: "doc.meta4", line: 13, column: 5))
    #expect(file.digest == ExpectedDigest(algorithm: .sha256, hex: sha256A))
    #expect(file.hashes.map(\.algorithm) == [.sha256, .md5])
    let pieces = try #require(file.pieces)
    #expect(pieces.length == 8_388_608 && pieces.algorithm == .sha256 && pieces.hashes == [sha256A, sha256B])
    #expect(pieces.count(forSize: 14_471_447) == 2)
    #expect(pieces.range(ofPiece: 1, size: 14_471_447) == 8_388_608..<14_471_447)
    #expect(document.files[1].name == "sub/dir/other.iso")
    #expect(document.files[1].digest == nil && document.files[1].size == nil)
  }

  @Test func metalink3AsMirrorsPublishIt() throws {
    let document = Metalink.parse(
      Array(
        """
        <?xml version="1.0" encoding="utf-8"?>
        <metalink version="3.0" xmlns="http://www.metalinker.org/" generator="MirrorBrain" type="dynamic">
          <files>
            <file name="openSUSE-Leap.iso">
              <size>8000000</size>
              <verification>
                <hash type="md5">\(md5)</hash>
                <hash type="sha1">\(sha1)</hash>
                <hash type="sha256">\(sha256B)</hash>
                <pieces length="4194304" type="sha1">
                  <hash piece="1">\(String(repeating: "2", count: 40))</hash>
                  <hash piece="0">\(sha1)</hash>
                </pieces>
              </verification>
              <resources>
                <url type="ftp" location="us" preference="100">ftp://ftp.example.org/leap.iso</url>
                <url type="http" location="de" preference="90">http://de.example.org/leap.iso</url>
                <url type="https" location="us" preference="100">https://us.example.org/leap.iso</url>
                <url type="bittorrent" preference="100">https://example.org/leap.iso.torrent</url>
                <url type="http">http://any.example.org/leap.iso</url>
              </resources>
            </file>
          </files>
        </metalink>
        """.utf8), file: "leap.metalink")
    #expect(document.version == .v3)
    #expect(
      document.diagnostics.map(\.description) == [
        "leap.metalink:16:9: warning: <url type=\"ftp\"> 'ftp://ftp.example.org/leap.iso' is ignored: batchdl fetches http and https URLs only",
        "leap.metalink:19:9: warning: <url type=\"bittorrent\"> 'https://example.org/leap.iso.torrent' is ignored: batchdl fetches http and https URLs only",
      ])
    let file = try #require(document.files.first)
    #expect(file.name == "openSUSE-Leap.iso" && file.size == 8_000_000)
    #expect(
      file.sources.map(\.url) == [
        "https://us.example.org/leap.iso", "http://de.example.org/leap.iso", "http://any.example.org/leap.iso",
      ])
    #expect(file.hashes.map(\.algorithm) == [.sha256, .sha1, .md5])
    #expect(file.digest?.hex == sha256B)
    // The pieces come in the order of their numbers.
    #expect(file.pieces?.hashes == [sha1, String(repeating: "2", count: 40)])
    #expect(file.pieces?.count(forSize: 8_000_000) == 2)
  }

  @Test func piecesOfAKnownSizeMustAllBeThere() {
    // 4700372992 bytes in pieces of 4194304 make 1121 pieces, not 2.
    let document = Metalink.parse(
      Array(
        """
        <metalink version="3.0" xmlns="http://www.metalinker.org/"><files>
        <file name="a"><size>4700372992</size><verification>
        <pieces length="4194304" type="sha1"><hash piece="0">\(sha1)</hash><hash piece="1">\(sha1)</hash></pieces>
        </verification><resources><url type="http">http://a.example/a</url></resources></file>
        </files></metalink>
        """.utf8), file: "x")
    #expect(document.files.isEmpty)
    #expect(
      rendered(document) == [
        "3:1: error: <pieces> of 'a' lists 2 hashes, but 4700372992 bytes in pieces of 4194304 make 1121; this file is left out"
      ])
  }

  @Test func weakHashesAloneAreUsedWithAWarning() throws {
    let document = parse(
      meta4(
        """
        <file name="old.tar">
          <hash type="sha-1">\(sha1)</hash>
          <hash type="md5">\(md5)</hash>
          <url>https://example.org/old.tar</url>
        </file>
        <file name="md5only.tar"><hash type="md5">\(md5)</hash><url>https://example.org/m</url></file>
        <file name="other.tar"><hash type="sha-384">ab</hash><url>https://example.org/o</url></file>
        """))
    #expect(
      rendered(document) == [
        "3:1: warning: file 'old.tar' has only a sha-1 hash, which is weak: it is checked, but cannot prove the file was not replaced; ask the publisher for sha-256",
        "8:1: warning: file 'md5only.tar' has only a md5 hash, which is weak: it is checked, but cannot prove the file was not replaced; ask the publisher for sha-256",
      ])
    #expect(document.files.map { $0.digest?.algorithm } == [.sha1, .md5, nil])
  }

  @Test func sha512IsPreferredToWeakerOnes() {
    let sha512 = String(repeating: "c", count: 128)
    let document = parse(
      meta4(
        """
        <file name="a"><hash type="md5">\(md5)</hash><hash type="sha-512">\(sha512)</hash><url>https://e.org/a</url></file>
        """))
    #expect(document.diagnostics.isEmpty)
    #expect(document.files.first?.digest == ExpectedDigest(algorithm: .sha512, hex: sha512))
  }

  // MARK: - Hostile names

  @Test(
    arguments: [
      ("/etc/passwd", "file name '/etc/passwd' is absolute"),
      ("../x", "file name '../x' contains '..'"),
      ("a/../../x", "file name 'a/../../x' contains '..'"),
      ("a/../b", "file name 'a/../b' contains '..'"),
      ("..", "file name '..' contains '..'"),
      ("", "<file> has no name"),
      ("dir/", "names a folder"),
      (".", "names the folder itself"),
      ("a&#10;b", "contains a control character"),
    ] as [(String, String)])
  func unsafeNameIsAnErrorAtItsFileAndOnlyThatFileIsLeftOut(name: String, message: String) {
    let document = parse(
      meta4(
        """
        <file name="good-1"><url>https://example.org/1</url></file>
          <file name="\(name)"><url>https://example.org/evil</url></file>
        <file name="good-2"><url>https://example.org/2</url></file>
        """))
    #expect(document.files.map(\.name) == ["good-1", "good-2"])
    #expect(document.diagnostics.count == 1)
    let diagnostic = document.diagnostics.first
    #expect(diagnostic?.severity == .error)
    #expect(diagnostic?.mark == SourceMark(file: "doc.meta4", line: 4, column: 3))
    #expect(diagnostic?.message.contains(message) == true, "\(String(describing: diagnostic))")
    #expect(diagnostic?.message.hasSuffix("; this file is left out") == true)
  }

  @Test func missingNameAttributeIsAnError() {
    let document = parse(meta4("<file><url>https://example.org/1</url></file>"))
    #expect(rendered(document) == ["3:1: error: <file> has no name (name=\"...\"); this file is left out"])
  }

  @Test func aDuplicateNameIsAnErrorOnTheSecond() {
    let document = parse(
      meta4(
        """
        <file name="a.iso"><url>https://one.example/a.iso</url></file>
        <file name="./a.iso"><url>https://two.example/a.iso</url></file>
        """))
    #expect(document.files.map { $0.sources[0].url } == ["https://one.example/a.iso"])
    #expect(
      rendered(document) == ["4:1: error: file 'a.iso' is listed twice (first at line 3); the second is left out"])
  }

  // MARK: - Hostile values

  @Test func aFileWithoutUsableURLsIsLeftOut() {
    let document = parse(
      meta4(
        """
        <file name="none"><hash type="sha-256">\(sha256A)</hash></file>
        <file name="ftp"><url>ftp://example.org/ftp</url><url>magnet:?xt=urn:btih:abc</url></file>
        <file name="secret"><url>gopher://user:pw@example.org/x</url></file>
        """))
    #expect(document.files.isEmpty)
    #expect(
      rendered(document) == [
        "3:1: error: file 'none' has no http or https <url>; this file is left out",
        "4:18: warning: <url> 'ftp://example.org/ftp' is ignored (ftp:): batchdl fetches http and https URLs only",
        "4:50: warning: <url> 'magnet:?xt=urn:btih:abc' is ignored (magnet:): batchdl fetches http and https URLs only",
        "4:1: error: file 'ftp' has no http or https <url>; this file is left out",
        "5:21: warning: <url> 'gopher://<redacted>@example.org/x' is ignored (gopher:): batchdl fetches http and https URLs only",
        "5:1: error: file 'secret' has no http or https <url>; this file is left out",
      ])
    #expect(!document.diagnostics.contains { $0.message.contains("pw@") })
  }

  @Test(
    arguments: [
      (
        "<hash type=\"sha-256\">\(String(repeating: "g", count: 64))</hash>", "3:18",
        "bad <hash type=\"sha-256\">: a sha-256 hash is 64 hexadecimal digits (0-9, a-f), found 'g'"
      ),
      (
        "<hash type=\"sha-256\">\(String(repeating: "a", count: 63))</hash>", "3:18",
        "bad <hash type=\"sha-256\">: a sha-256 hash is 64 hexadecimal digits, found 63"
      ),
      ("<hash type=\"md5\">\(sha256A)</hash>", "3:18", "a md5 hash is 32 hexadecimal digits, found 64"),
      (
        "<hash type=\"sha-256\">\(sha256A)</hash><hash type=\"sha256\">\(sha256B)</hash>", "3:110",
        "a second sha-256 <hash> disagrees with the first"
      ),
      ("<size>-1</size>", "3:18", "<size> must be a whole number of bytes from 0 to 1125899906842624, found '-1'"),
      ("<size>99999999999999999999</size>", "3:18", "<size> must be a whole number of bytes"),
      ("<size>12 MB</size>", "3:18", "found '12 MB'"),
      ("<pieces length=\"0\" type=\"sha-256\"></pieces>", "3:18", "<pieces> needs length=\"BYTES\""),
      ("<pieces length=\"10\" type=\"sha-256\"><hash>xyz</hash></pieces>", "3:53", "bad piece <hash>"),
    ] as [(String, String, String)])
  func aBadValueIsAnErrorAtItsElementAndItsFileIsLeftOut(element: String, position: String, message: String) {
    let document = parse(
      meta4(
        """
        <file name="bad">\(element)<url>https://example.org/x</url></file>
        <file name="good"><url>https://example.org/g</url></file>
        """))
    #expect(document.files.map(\.name) == ["good"])
    let found = rendered(document)
    #expect(found.count == 2, "\(found)")
    #expect(found.first?.hasPrefix("\(position): error: ") == true, "\(found)")
    #expect(found.first?.contains(message) == true, "\(found)")
    #expect(found.last == "3:1: warning: file 'bad' is left out because of the errors above")
  }

  @Test func hugePieceCountWithAMismatchedSizeIsRefusedQuickly() {
    let hashes = String(repeating: "<hash>\(sha1)</hash>\n", count: 140_000)
    let clock = ContinuousClock()
    let start = clock.now
    let document = parse(
      meta4(
        """
        <file name="a"><size>1638400</size><pieces length="16384" type="sha-1">\(hashes)</pieces><url>https://e.org/a</url></file>
        """))
    #expect(clock.now - start < .seconds(60))
    #expect(document.files.isEmpty)
    #expect(
      rendered(document) == [
        "3:36: error: <pieces> of 'a' lists 140000 hashes, but 1638400 bytes in pieces of 16384 make 100; this file is left out"
      ])
  }

  // MARK: - Hostile documents

  @Test func malformedXMLIsOneErrorWithItsPosition() {
    let document = parse(
      """
      <metalink xmlns="urn:ietf:params:xml:ns:metalink">
        <file name="a"><url>https://example.org/a</url>
        <file name="b"></url>
      </metalink>
      """)
    #expect(document.files.isEmpty && document.version == nil)
    #expect(document.diagnostics.count == 1)
    let found = rendered(document).first ?? ""
    #expect(found.hasPrefix("3:"), "\(found)")
    #expect(found.contains("error: not well-formed XML: a closing tag does not match"), "\(found)")
  }

  @Test(
    arguments: [
      ("", "1:1", "the document is empty"),
      ("<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">", "1:", "not well-formed XML"),
      ("<html><body>Not found</body></html>", "1:1", "the root element is <html>, not <metalink>"),
      ("<metalink xmlns=\"urn:example\"/>", "1:1", "needs xmlns=\"urn:ietf:params:xml:ns:metalink\""),
      ("<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">&undeclared;</metalink>", "1:", "undeclared entity"),
      ("garbage", "1:1", "not well-formed XML"),
    ] as [(String, String, String)])
  func notAMetalinkDocument(text: String, position: String, message: String) {
    let document = parse(text)
    let found = rendered(document)
    #expect(found.count == 1, "\(found)")
    #expect(found.first?.hasPrefix(position) == true, "\(found)")
    #expect(found.first?.contains(message) == true, "\(found)")
    #expect(document.files.isEmpty)
  }

  @Test func entityExpansionIsRefusedBeforeParsing() {
    // "Billion laughs": ten levels of ten references expand to 10^9 copies.
    var text = "<?xml version=\"1.0\"?>\n<!DOCTYPE metalink [\n  <!ENTITY lol \"lol\">\n"
    for level in 1...9 {
      text +=
        "  <!ENTITY lol\(level) \"" + String(repeating: "&lol\(level - 1 == 0 ? "" : String(level - 1));", count: 10)
        + "\">\n"
    }
    text += "]>\n" + meta4("<file name=\"&lol9;\"><url>https://example.org/&lol9;</url></file>")
    let clock = ContinuousClock()
    let start = clock.now
    let document = parse(text)
    #expect(clock.now - start < .seconds(30))
    #expect(document.files.isEmpty)
    #expect(
      rendered(document) == [
        "2:1: error: the document has a <!DOCTYPE>: Metalink needs none, and its entity declarations are refused; remove it"
      ])
  }

  /// libxml2's own parser decides whether there is a DTD (entities off, nothing loaded, stopped at
  /// the declaration), not a search of the bytes: a billion laughs and a declaration that crashes
  /// Foundation's XMLParser are found without being read; `<!DOCTYPE` in a comment is no DTD.
  @Test func theParserFindsTheDTD() {
    var laughs = "<?xml version=\"1.0\"?>\n<!DOCTYPE metalink [\n  <!ENTITY lol \"lol\">\n"
    for level in 1...9 {
      laughs +=
        "  <!ENTITY lol\(level) \"" + String(repeating: "&lol\(level - 1 == 0 ? "" : String(level - 1));", count: 10)
        + "\">\n"
    }
    laughs += "]>\n" + meta4("<file name=\"&lol9;\"><url>https://example.org/&lol9;</url></file>")
    #expect(Metalink.doctypeLine(Array(laughs.utf8)) == 2)
    let attlist = "<?xml version=\"1.0\"?>\n\n<!DOCTYPE m [<!ATTLIST m a CDATA #IMPLIED>]>\n<m/>\n"
    #expect(Metalink.doctypeLine(Array(attlist.utf8)) == 3)
    // After a comment and a processing instruction, where XML allows it.
    let late = "<?xml version=\"1.0\"?>\n<!-- a -->\n<?pi x?>\n<!DOCTYPE m SYSTEM \"file:///etc/passwd\">\n<m/>\n"
    #expect(Metalink.doctypeLine(Array(late.utf8)) == 4)
    #expect(Metalink.doctypeLine(Array(meta4("<!-- <!DOCTYPE not one --><file name=\"a\"/>").utf8)) == nil)
    #expect(Metalink.doctypeLine(Array(meta4("<file name=\"a\"><url>https://example.org/a</url></file>").utf8)) == nil)
  }

  @Test func externalEntitiesAreNeverRead() throws {
    let folder = TemporaryDirectory()
    let secret = folder.write("secret.txt", "TOP-SECRET")
    let document = parse(
      "<?xml version=\"1.0\"?>\n<!DOCTYPE m [<!ENTITY e SYSTEM \"file://\(secret)\">]>\n"
        + meta4("<file name=\"a\"><url>https://example.org/&e;</url></file>"))
    #expect(document.files.isEmpty)
    #expect(!rendered(document).joined().contains("TOP-SECRET"))
    #expect(rendered(document).first?.hasPrefix("2:1: error: the document has a <!DOCTYPE>") == true)
  }

  @Test func aDocumentOverTheCapIsRefused() {
    let folder = TemporaryDirectory()
    let path = folder.write("big.meta4", "")
    let handle = try? FileHandle(forWritingTo: URL(fileURLWithPath: path))
    try? handle?.truncate(atOffset: UInt64(Metalink.maxBytes) + 1)
    try? handle?.close()
    let document = Metalink.read(path: path, display: "big.meta4")
    #expect(
      rendered(document) == [
        "1:1: error: cannot read the Metalink document: it holds more than 8MB, the most batchdl reads of a Metalink document"
      ])
  }

  @Test func aDocumentInMemoryOverTheCapIsRefusedBeforeParsing() {
    let document = Metalink.parse([UInt8](repeating: 0x20, count: Metalink.maxBytes + 1), file: "doc.meta4")
    #expect(
      rendered(document) == [
        "1:1: error: the Metalink document holds 8388609 bytes, more than 8MB, the most batchdl reads"
      ])
  }

  @Test func aMissingDocumentSaysSo() {
    let document = Metalink.read(path: "/nonexistent/x.meta4")
    #expect(document.diagnostics.count == 1)
    #expect(document.diagnostics.first?.message.hasPrefix("cannot read the Metalink document: ") == true)
  }

  @Test func foreignElementsAndNestedFilesAreIgnored() {
    let document = parse(
      """
      <metalink xmlns="urn:ietf:params:xml:ns:metalink" xmlns:x="urn:example:ext">
        <x:file name="../evil"><url>https://example.org/evil</url></x:file>
        <file name="a"><x:url>https://example.org/ext</x:url><url>https://example.org/a</url>
          <file name="../nested"><url>https://example.org/n</url></file>
        </file>
        <origin dynamic="true">https://example.org/doc.meta4</origin>
      </metalink>
      """)
    #expect(document.diagnostics.isEmpty, "\(rendered(document))")
    #expect(document.files.map(\.name) == ["a"])
    #expect(document.files.first?.sources.map(\.url) == ["https://example.org/a"])
  }

  @Test func columnsCountCharactersAfterNonASCIINames() {
    let document = parse(meta4("<file name=\"ü\"><url>https://e.org/ü</url></file>  <file name=\"/é\"></file>"))
    #expect(document.files.map(\.name) == ["ü"])
    #expect(
      rendered(document).first?.hasPrefix("3:51: error: file name '/é' is absolute") == true, "\(rendered(document))")
  }
}
