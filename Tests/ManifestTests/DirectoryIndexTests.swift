import BatchDLSupport
import Foundation
import TestSupport
import Testing

@testable import BatchDLManifest

/// Reading one folder of a directory listing: the real pages of nginx, Apache and lighttpd
/// (ListingFixtures), nginx's JSON, and hostile pages.
@Suite struct DirectoryIndexTests {
  static let folder = "https://example.org/pub/"

  /// The names the fixtures' folder holds, folders with a trailing `/`.
  static let fixtureNames: Set<String> = [
    "100%.txt", "a#b.txt", "a&b <c>.txt", "a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz",
    "big.bin", "empty/", "mid.bin", "plain.txt", "semi;colon?.txt", "sub folder/", "with space.txt", "ünïcødé.txt",
  ]

  static func read(_ fixture: ListingFixtures.Fixture) -> DirectoryIndex.Listing {
    DirectoryIndex.parse(fixture.bytes, folderURL: fixture.url, contentType: fixture.contentType)
  }

  /// `links` (lines of `<a href>` and what follows) in an nginx page of `folder`.
  static func nginxPage(_ links: String, title: String = "Index of /pub/") -> [UInt8] {
    let page = """
      <html>
      <head><title>\(title)</title></head>
      <body>
      <h1>\(title)</h1><hr><pre><a href="../">../</a>
      \(links)
      </pre><hr></body>
      </html>

      """
    return Array(page.utf8)
  }

  static func readNginx(_ links: String, folder: String = folder) -> DirectoryIndex.Listing {
    DirectoryIndex.parse(nginxPage(links), folderURL: folder, contentType: "text/html")
  }

  static func names(_ listing: DirectoryIndex.Listing) -> Set<String> {
    Set(listing.entries.map { $0.name + ($0.isFolder ? "/" : "") })
  }

  static func entry(_ listing: DirectoryIndex.Listing, _ name: String) throws -> DirectoryIndex.Entry {
    try #require(listing.entries.first { $0.name == name }, "no entry '\(name)' in \(listing.entries.map(\.name))")
  }

  // MARK: - The real pages

  @Test func nginxListsEveryNameWithExactSizes() throws {
    let listing = Self.read(ListingFixtures.nginx)
    #expect(listing.format == .nginx)
    #expect(listing.isListing && listing.isComplete)
    #expect(listing.title == "Index of /pub/")
    #expect(listing.diagnostics.isEmpty, "\(listing.diagnostics)")
    #expect(Self.names(listing) == Self.fixtureNames)
    #expect(listing.ignoredLinks == 1, "the parent link")
    let big = try Self.entry(listing, "big.bin")
    #expect(big.size == DirectoryIndex.ListedSize(bytes: 3_000_000, isExact: true))
    #expect(big.sizeText == "3000000")
    #expect(big.dateText == "05-Mar-2024 10:20")
    #expect(big.fingerprint == "3000000 05-Mar-2024 10:20")
    #expect(big.url == "http://127.0.0.1:18083/pub/big.bin")
    #expect(big.mark == SourceMark(file: ListingFixtures.nginx.url, line: 11, column: 1))
    #expect(try Self.entry(listing, "plain.txt").size?.bytes == 1234)
    #expect(try Self.entry(listing, "a#b.txt").url == "http://127.0.0.1:18083/pub/a%23b.txt")
    #expect(try Self.entry(listing, "100%.txt").url == "http://127.0.0.1:18083/pub/100%25.txt")
    #expect(try Self.entry(listing, "ünïcødé.txt").url == "http://127.0.0.1:18083/pub/%C3%BCn%C3%AFc%C3%B8d%C3%A9.txt")
    // nginx cuts the link's text at 50 characters; the name comes from the link itself.
    #expect(
      try Self.entry(listing, "a-very-long-file-name-that-goes-past-fifty-characters-for-sure.tar.gz").size?.bytes
        == 2)
    let folder = try Self.entry(listing, "sub folder")
    #expect(folder.isFolder)
    #expect(folder.url == "http://127.0.0.1:18083/pub/sub%20folder/")
    #expect(folder.sizeText == nil && folder.size == nil)
    #expect(folder.fingerprint == "- 05-Mar-2024 10:20")
  }

  @Test func nginxWithoutExactSizesRoundsLargeOnesOnly() throws {
    let listing = Self.read(ListingFixtures.nginxApproximate)
    #expect(listing.format == .nginx)
    #expect(Self.names(listing) == Self.fixtureNames)
    #expect(try Self.entry(listing, "big.bin").size == DirectoryIndex.ListedSize(bytes: 3 << 20, isExact: false))
    // Up to 9,999 bytes nginx still writes bytes.
    #expect(try Self.entry(listing, "mid.bin").size == DirectoryIndex.ListedSize(bytes: 5000, isExact: true))
  }

  @Test func nginxJSONListsWhatTheHTMLLists() throws {
    let json = Self.read(ListingFixtures.nginxJSON)
    let html = Self.read(ListingFixtures.nginx)
    #expect(json.format == .nginxJSON)
    #expect(json.title == nil)
    #expect(json.isComplete && json.diagnostics.isEmpty, "\(json.diagnostics)")
    #expect(Self.names(json) == Self.fixtureNames)
    for entry in html.entries {
      let twin = try Self.entry(json, entry.name)
      #expect(twin.isFolder == entry.isFolder)
      #expect(twin.size == entry.size, "\(entry.name)")
      #expect(twin.url == entry.url.replacingOccurrences(of: "/pub/", with: "/json/"), "\(entry.name)")
    }
    let big = try Self.entry(json, "big.bin")
    #expect(big.dateText == "Tue, 05 Mar 2024 10:20:00 GMT")
    #expect(big.fingerprint == "3000000 Tue, 05 Mar 2024 10:20:00 GMT")
    #expect(big.mark.line == 8)
    #expect(try Self.entry(json, "a&b <c>.txt").url == "http://127.0.0.1:18083/json/a%26b%20%3Cc%3E.txt")
  }

  @Test func apacheTableGivesRoundedSizesAboveOneKilobyte() throws {
    let listing = Self.read(ListingFixtures.apacheTable)
    #expect(listing.format == .apache)
    #expect(listing.isComplete && listing.diagnostics.isEmpty, "\(listing.diagnostics)")
    #expect(Self.names(listing) == Self.fixtureNames)
    #expect(listing.ignoredLinks == 5, "four sort links and Parent Directory")
    let plain = try Self.entry(listing, "plain.txt")
    #expect(plain.sizeText == "1.2K")
    #expect(plain.size == DirectoryIndex.ListedSize(bytes: 1229, isExact: false))
    #expect(plain.dateText == "2024-03-05 10:20")
    #expect(plain.fingerprint == "1.2K 2024-03-05 10:20")
    #expect(try Self.entry(listing, "big.bin").size == DirectoryIndex.ListedSize(bytes: 3_040_870, isExact: false))
    #expect(try Self.entry(listing, "with space.txt").size == DirectoryIndex.ListedSize(bytes: 6, isExact: true))
    #expect(try Self.entry(listing, "empty").isFolder)
    // Apache writes `&` as it is, and lower-case escapes; the URL is normalized.
    #expect(try Self.entry(listing, "a&b <c>.txt").url == "http://127.0.0.1:18081/pub/a&b%20%3Cc%3E.txt")
    #expect(try Self.entry(listing, "ünïcødé.txt").url == "http://127.0.0.1:18081/pub/%C3%BCn%C3%AFc%C3%B8d%C3%A9.txt")
  }

  @Test func apacheFancyPreListsTheSameAsItsTable() throws {
    let pre = Self.read(ListingFixtures.apacheFancy)
    let table = Self.read(ListingFixtures.apacheTable)
    #expect(pre.format == .apache)
    #expect(Self.names(pre) == Self.fixtureNames)
    for entry in table.entries {
      let twin = try Self.entry(pre, entry.name)
      #expect(twin.fingerprint == entry.fingerprint, "\(entry.name)")
      #expect(twin.size == entry.size, "\(entry.name)")
    }
  }

  @Test func apacheListWithoutFancyIndexingHasNoFingerprints() throws {
    let listing = Self.read(ListingFixtures.apachePlain)
    #expect(listing.format == .apache)
    #expect(Self.names(listing) == Self.fixtureNames)
    #expect(listing.entries.allSatisfy { $0.fingerprint.isEmpty && $0.size == nil && $0.dateText == nil })
  }

  @Test func apacheSubFolderAndEmptyFolder() throws {
    let sub = Self.read(ListingFixtures.apacheSubFolder)
    #expect(sub.format == .apache)
    #expect(Self.names(sub) == ["deeper/", "inner.txt"])
    #expect(try Self.entry(sub, "deeper").url == "http://127.0.0.1:18081/pub/sub%20folder/deeper/")
    let empty = Self.read(ListingFixtures.apacheEmpty)
    #expect(empty.format == .apache && empty.isListing)
    #expect(empty.entries.isEmpty && empty.diagnostics.isEmpty)
  }

  @Test func lighttpdSizesAreAlwaysRounded() throws {
    let listing = Self.read(ListingFixtures.lighttpd)
    #expect(listing.format == .lighttpd)
    #expect(listing.isComplete && listing.diagnostics.isEmpty, "\(listing.diagnostics)")
    #expect(Self.names(listing) == Self.fixtureNames)
    let small = try Self.entry(listing, "with space.txt")
    #expect(small.sizeText == "0.1K")
    #expect(small.size == DirectoryIndex.ListedSize(bytes: 102, isExact: false))
    #expect(small.dateText == "2024-Mar-05 10:20:00")
    #expect(try Self.entry(listing, "big.bin").sizeText == "2.8M")
    let folder = try Self.entry(listing, "sub folder")
    #expect(folder.isFolder && folder.size == nil)
    #expect(folder.dateText == "2024-Mar-05 10:20:00")
    #expect(folder.mark.line == 29)
  }

  @Test func emptyFoldersAreListingsWithoutEntries() {
    for fixture in [ListingFixtures.nginxEmpty, ListingFixtures.apacheEmpty, ListingFixtures.lighttpdEmpty] {
      let listing = Self.read(fixture)
      #expect(listing.isListing, "\(fixture.url)")
      #expect(listing.entries.isEmpty && listing.isComplete && !listing.hasErrors, "\(fixture.url)")
    }
    let json = DirectoryIndex.parse(Array("[\n]\n".utf8), folderURL: Self.folder, contentType: "application/json")
    #expect(json.format == .nginxJSON && json.entries.isEmpty && !json.hasErrors)
  }

  // MARK: - Links that are no entries

  @Test func linksOutOfTheFolderAreIgnored() {
    let listing = Self.readNginx(
      """
      <a href="https://elsewhere.example/pub/x.txt">x.txt</a>
      <a href="//elsewhere.example/pub/y.txt">y.txt</a>
      <a href="http://example.org/pub/z.txt">other scheme</a>
      <a href="https://example.org:8443/pub/z.txt">other port</a>
      <a href="https://user@example.org/pub/z.txt">other user</a>
      <a href="/other/a.txt">a.txt</a>
      <a href="/">root</a>
      <a href="../sibling/b.txt">b.txt</a>
      <a href="sub/deeper.txt">deeper</a>
      <a href="./">self</a>
      <a href="">self</a>
      <a href="%2E%2E/escape.txt">dots</a>
      <a href="x/../../escape.txt">dots</a>
      <a href="javascript:alert(1)">js</a>
      <a href="mailto:root@example.org">mail</a>
      <a href="ftp://example.org/pub/f.txt">ftp</a>
      <a href="https://example.org/pub/kept.txt">kept</a>  05-Mar-2024 10:20  7
      <a href="/pub/also-kept.txt">also kept</a>
      <a href="HTTPS://EXAMPLE.ORG:443/pub/third.txt">third</a>
      """)
    #expect(Self.names(listing) == ["kept.txt", "also-kept.txt", "third.txt"])
    #expect(listing.ignoredLinks == 17)
    #expect(listing.diagnostics.isEmpty, "\(listing.diagnostics)")
    #expect(listing.entries.first?.size?.bytes == 7)
    #expect(listing.entries.last?.url == "https://example.org/pub/third.txt")
  }

  @Test func sortQueryAndFragmentLinksAreIgnored() {
    let listing = Self.readNginx(
      """
      <a href="?C=N;O=D">Name</a>
      <a href="?C=M;O=A">Last modified</a>
      <a href="file.txt?download=1">with a query</a>
      <a href="#top">top</a>
      <a href="#">nothing</a>
      <a href="anchored.txt#section">anchored</a>  05-Mar-2024 10:20  3
      """)
    #expect(Self.names(listing) == ["anchored.txt"])
    #expect(listing.entries.first?.url == "https://example.org/pub/anchored.txt")
    #expect(listing.ignoredLinks == 6, "five and the parent")
  }

  @Test func baseElementsScriptsStylesAndCommentsAreNotFollowed() {
    let page = """
      <html><head><title>Index of /pub/</title><base href="https://elsewhere.example/"></head>
      <body><pre><a href="../">../</a>
      <a href="real.txt">real.txt</a> 05-Mar-2024 10:20 1
      <script>document.write('<a href="scripted.txt">s</a>')</script>
      <style>a[href="styled.txt"] {}</style>
      <!-- <a href="commented.txt">c</a> -->
      <noscript><a href="hidden.txt">h</a></noscript>
      </pre></body></html>
      """
    let listing = DirectoryIndex.parse(Array(page.utf8), folderURL: Self.folder, contentType: "text/html")
    #expect(Self.names(listing) == ["real.txt"])
    #expect(listing.entries.first?.url == "https://example.org/pub/real.txt")
  }

  // MARK: - Names

  @Test func hostileNamesAreLeftOutWithTheirPosition() throws {
    let long = String(repeating: "n", count: 256)
    let listing = Self.readNginx(
      """
      <a href="a%2Fb.txt">slash</a>
      <a href="nul%00.txt">nul</a>
      <a href="line%0Abreak.txt">line break</a>
      <a href="esc%1B%5B2J.txt">escape</a>
      <a href="c1%C2%85.txt">next line</a>
      <a href="latin%E9.txt">latin-1</a>
      <a href="\(long)">long</a>
      <a href="good.txt">good</a>
      """)
    #expect(Self.names(listing) == ["good.txt"])
    #expect(listing.leftOut.map(\.name).count == 7)
    let errors = listing.diagnostics.filter { $0.severity == .error }
    #expect(errors.count == 7)
    #expect(errors.map(\.mark.line) == Array(5...11))
    #expect(errors.allSatisfy { $0.mark.column == 1 })
    #expect(errors[0].message.contains("contains '/'"))
    #expect(errors[2].message.contains("line\\nbreak.txt"), "escaped: \(errors[2].message)")
    #expect(errors[3].message.contains("\\u{1B}"))
    #expect(errors[5].message.contains("not UTF-8"))
    #expect(errors[6].message.contains("longer than 255 bytes"))
    #expect(!errors.contains { $0.message.contains("\n") || $0.message.contains("\u{1B}") })
    // The rest of the page is unaffected.
    #expect(listing.isComplete && listing.isListing)
  }

  @Test func percentEncodingIsDecodedOnce() throws {
    let listing = Self.readNginx(
      """
      <a href="%41bc.txt">Abc</a>
      <a href="a%252Fb.txt">literal %2F</a>
      <a href="%c3%a9t%c3%a9.txt">lower-case escapes</a>
      <a href="raw space.txt">raw space</a>
      <a href="café.txt">raw UTF-8</a>
      <a href="plus+sign.txt">plus</a>
      <a href="sub%20folder/">folder</a>
      """)
    #expect(
      Self.names(listing) == [
        "Abc.txt", "a%2Fb.txt", "été.txt", "raw space.txt", "café.txt", "plus+sign.txt", "sub folder/",
      ])
    #expect(try Self.entry(listing, "Abc.txt").url == "https://example.org/pub/Abc.txt")
    #expect(try Self.entry(listing, "a%2Fb.txt").url == "https://example.org/pub/a%252Fb.txt")
    #expect(try Self.entry(listing, "été.txt").url == "https://example.org/pub/%C3%A9t%C3%A9.txt")
    #expect(try Self.entry(listing, "raw space.txt").url == "https://example.org/pub/raw%20space.txt")
    #expect(try Self.entry(listing, "café.txt").url == "https://example.org/pub/caf%C3%A9.txt")
    #expect(try Self.entry(listing, "plus+sign.txt").url == "https://example.org/pub/plus+sign.txt")
    #expect(listing.diagnostics.isEmpty, "\(listing.diagnostics)")
  }

  @Test func duplicateNamesKeepTheFirst() throws {
    let listing = Self.readNginx(
      """
      <a href="a.txt">a.txt</a>  05-Mar-2024 10:20  1
      <a href="%61.txt">a.txt again</a>  06-Mar-2024 10:20  2
      <a href="a.txt">a.txt once more</a>  07-Mar-2024 10:20  3
      <a href="same">same</a>  05-Mar-2024 10:20  4
      <a href="same/">same/</a>  05-Mar-2024 10:20  -
      """)
    #expect(listing.entries.map(\.name) == ["a.txt", "same"])
    #expect(try Self.entry(listing, "a.txt").size?.bytes == 1)
    #expect(try Self.entry(listing, "same").isFolder == false)
    let warnings = listing.diagnostics.filter { $0.severity == .warning }
    #expect(warnings.count == 3)
    #expect(warnings.first?.message.contains("first at 5:1") == true, "\(warnings)")
    #expect(!listing.hasErrors && listing.isComplete)
  }

  @Test func jsonNamesFollowTheSameRules() throws {
    let json = """
      [
      { "name":"../up", "type":"file", "size":1 },
      { "name":"a/b", "type":"file", "size":1 },
      { "name":"..", "type":"directory" },
      { "name":"", "type":"file" },
      { "name":"tab\\there", "type":"file" },
      { "name":"ok.txt", "type":"file", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT", "size":12 },
      { "name":"ok.txt", "type":"file", "size":13 },
      { "name":"%41", "type":"file", "size":0 },
      { "name":"sock", "type":"other" },
      { "name":"fraction", "type":"file", "size":1.5 },
      { "name":"negative", "type":"file", "size":-1 },
      { "name":"text", "type":"file", "size":"12" },
      { "name":"huge", "type":"file", "size":99999999999999999999999 },
      { "type":"file" },
      42,
      { "name":"dir", "type":"directory", "mtime":"Tue, 05 Mar 2024 10:20:00 GMT" }
      ]
      """
    let listing = DirectoryIndex.parse(Array(json.utf8), folderURL: Self.folder, contentType: "application/json")
    #expect(listing.format == .nginxJSON)
    #expect(listing.entries.map(\.name) == ["ok.txt", "%41", "fraction", "negative", "text", "huge", "dir"])
    #expect(try Self.entry(listing, "ok.txt").size?.bytes == 12)
    #expect(try Self.entry(listing, "%41").url == "https://example.org/pub/%2541")
    #expect(try Self.entry(listing, "dir").url == "https://example.org/pub/dir/")
    #expect(
      listing.entries.filter { ["fraction", "negative", "text", "huge"].contains($0.name) }.allSatisfy {
        $0.size == nil
      })
    #expect(listing.leftOut.map(\.name) == ["../up", "a/b", "..", "", "tab\there"])
    #expect(listing.leftOut.map(\.mark.line) == [2, 3, 4, 5, 6])
    #expect(listing.ignoredLinks == 3, "other, no name, not an object")
    let warnings = listing.diagnostics.filter { $0.severity == .warning }.map(\.mark.line)
    #expect(warnings == [8, 11, 12, 13, 14, 15, 16], "\(listing.diagnostics)")
  }

  // MARK: - Formats and pages that are no listings

  @Test func pagesThatAreNoListingsSaySo() {
    let login = Array("<html><head><title>Sign in</title></head><body><a href=\"a.txt\">a</a></body></html>".utf8)
    let notListing = DirectoryIndex.parse(login, folderURL: Self.folder, contentType: "text/html")
    #expect(notListing.format == nil && !notListing.isListing)
    #expect(notListing.entries.isEmpty && notListing.hasErrors)
    #expect(notListing.diagnostics.first?.message.contains("'Sign in'") == true)
    let empty = DirectoryIndex.parse([], folderURL: Self.folder, contentType: "text/html")
    #expect(empty.format == nil && empty.hasErrors)
    for json in ["{}", "[1, 2]", "[{\"x\": 1}]", "not json", "[" + String(repeating: "[", count: 100_000)] {
      let listing = DirectoryIndex.parse(Array(json.utf8), folderURL: Self.folder, contentType: "application/json")
      #expect(listing.format == nil && listing.hasErrors, "\(json.prefix(20))")
    }
    let xml = DirectoryIndex.parse(
      Array("<list><file>a</file></list>".utf8), folderURL: Self.folder, contentType: "text/xml")
    #expect(xml.format == nil && xml.diagnostics.first?.message.contains("'text/xml'") == true)
    let utf16 = DirectoryIndex.parse([0xFF, 0xFE, 0x3C, 0x00], folderURL: Self.folder, contentType: "text/html")
    #expect(utf16.format == nil && utf16.diagnostics.first?.message.contains("UTF-16") == true)
  }

  @Test func theFormatIsSniffedWithoutAContentType() {
    let json = DirectoryIndex.parse(
      ListingFixtures.nginxJSON.bytes, folderURL: ListingFixtures.nginxJSON.url, contentType: nil)
    #expect(json.format == .nginxJSON && json.entries.count == 12)
    let html = DirectoryIndex.parse(
      ListingFixtures.lighttpd.bytes, folderURL: ListingFixtures.lighttpd.url, contentType: "application/octet-stream")
    #expect(html.format == .lighttpd && html.entries.count == 12)
    let typed = DirectoryIndex.parse(
      ListingFixtures.nginxJSON.bytes, folderURL: ListingFixtures.nginxJSON.url,
      contentType: "Application/JSON; charset=utf-8")
    #expect(typed.format == .nginxJSON)
    #expect(DirectoryIndex.documentKind([], contentType: "text/html; charset=ISO-8859-1") == .html("ISO-8859-1"))
    #expect(DirectoryIndex.documentKind([], contentType: "text/html;charset=\"utf-8\"") == .html("UTF-8"))
    #expect(DirectoryIndex.documentKind(Array(" \n[".utf8), contentType: nil) == .json)
    #expect(DirectoryIndex.documentKind(Array("<html>".utf8), contentType: "") == .html("UTF-8"))
  }

  @Test func aLatin1PageKeepsItsNamesFromTheLinks() throws {
    var page = Array("<title>Index of /pub/</title><pre><a href=\"../\">../</a>\n".utf8)
    page += Array("<a href=\"caf%C3%A9.txt\">caf".utf8) + [0xE9] + Array(".txt</a> 05-Mar-2024 10:20 4\n</pre>".utf8)
    let listing = DirectoryIndex.parse(page, folderURL: Self.folder, contentType: "text/html; charset=iso-8859-1")
    #expect(listing.format == .nginx)
    #expect(try Self.entry(listing, "café.txt").size?.bytes == 4)
  }

  @Test func theFolderURLMustBeAFolder() {
    let page = Self.nginxPage("<a href=\"a.txt\">a.txt</a>")
    let file = DirectoryIndex.parse(page, folderURL: "https://example.org/pub", contentType: "text/html")
    #expect(file.format == nil && file.diagnostics.first?.message.contains("does not end with '/'") == true)
    let ftp = DirectoryIndex.parse(page, folderURL: "ftp://example.org/pub/", contentType: "text/html")
    #expect(ftp.format == nil && ftp.hasErrors)
    let normalized = DirectoryIndex.parse(page, folderURL: "HTTPS://Example.org:443/pub/", contentType: "text/html")
    #expect(normalized.folderURL == "https://example.org/pub/")
    #expect(normalized.entries.first?.url == "https://example.org/pub/a.txt")
  }

  // MARK: - Bounds

  @Test func aListingPastTheEntryLimitIsCutWithAnError() {
    var links = ""
    links.reserveCapacity(4 << 20)
    for index in 0...DirectoryIndex.maxEntries { links += "<a href=\"f\(index)\">f</a> 05-Mar-2024 10:20 \(index)\n" }
    let listing = Self.readNginx(links)
    #expect(listing.entries.count == DirectoryIndex.maxEntries)
    #expect(!listing.isComplete && listing.hasErrors)
    let error = listing.diagnostics.first { $0.severity == .error }
    #expect(error?.message.contains("more than \(DirectoryIndex.maxEntries) entries") == true)
    // The positions past libxml2's 65,535 lines are still exact.
    #expect(error?.mark.line == DirectoryIndex.maxEntries + 5)
    #expect(listing.entries.last?.mark.line == DirectoryIndex.maxEntries + 4)
  }

  @Test func aPagePastTheLinkLimitIsCut() {
    let links =
      String(repeating: "<a href=\"?C=N\">s</a>\n", count: DirectoryIndex.maxLinks) + "<a href=\"late.txt\">l</a>"
    let listing = Self.readNginx(links)
    #expect(listing.entries.isEmpty)
    #expect(!listing.isComplete)
    #expect(listing.diagnostics.contains { $0.message.contains("more than \(DirectoryIndex.maxLinks) links") })
  }

  @Test func aPageTooLargeIsNotRead() {
    let bytes = [UInt8](repeating: 0x20, count: DirectoryIndex.maxBytes + 1)
    let listing = DirectoryIndex.parse(bytes, folderURL: Self.folder, contentType: "text/html")
    #expect(listing.format == nil && !listing.isComplete)
    #expect(listing.diagnostics.first?.message.contains("16 MiB") == true)
  }

  @Test func overlongLinksAndTextAreBounded() throws {
    let href = String(repeating: "x", count: DirectoryIndex.maxHrefBytes + 1)
    let after = String(repeating: "y ", count: 10_000)
    let listing = Self.readNginx(
      """
      <a href="\(href)">long</a>
      <a href="b.txt">\(after)</a> \(after) 05-Mar-2024 10:20 5
      """)
    #expect(Self.names(listing) == ["b.txt"])
    #expect(listing.diagnostics.first?.message.contains("longer than \(DirectoryIndex.maxHrefBytes) bytes") == true)
    // The date and size lie past the text kept after the link: the entry has none.
    #expect(try Self.entry(listing, "b.txt").size == nil)
  }

  @Test func deeplyNestedPagesDoNotCrash() {
    let page =
      "<title>Index of /pub/</title>" + String(repeating: "<div>", count: 50_000) + "<a href=\"x\">x</a>"
      + String(repeating: "</div>", count: 50_000)
    let listing = DirectoryIndex.parse(Array(page.utf8), folderURL: Self.folder, contentType: "text/html")
    #expect(listing.isListing)
    #expect(listing.entries.count <= 1)
  }

  // MARK: - Sizes and dates

  @Test func sizesAsListed() {
    let cases: [(String, DirectoryIndex.ListedSize?)] = [
      ("1234", .init(bytes: 1234, isExact: true)),
      ("0", .init(bytes: 0, isExact: true)),
      ("1.2K", .init(bytes: 1229, isExact: false)),
      ("3M", .init(bytes: 3 << 20, isExact: false)),
      ("0.1K", .init(bytes: 102, isExact: false)),
      ("2.5G", .init(bytes: 2_684_354_560, isExact: false)),
      ("1KiB", .init(bytes: 1024, isExact: false)),
      ("1KB", .init(bytes: 1024, isExact: false)),
      ("12B", .init(bytes: 12, isExact: true)),
      ("-", nil), ("", nil), ("K", nil), ("1.2.3K", nil), ("1.5", nil), ("1.2345K", nil), ("-1", nil),
      ("99999999999999999999", nil), ("9E", nil), ("12X", nil), ("١٢", nil),
    ]
    for (text, expected) in cases {
      #expect(DirectoryIndex.listedSize(text) == expected, "\(text)")
    }
  }

  @Test func datesAndSizesAfterALink() {
    let cases: [(String, String?, String?)] = [
      ("   05-Mar-2024 10:20                1234", "05-Mar-2024 10:20", "1234"),
      ("\t2024-03-05 10:20\t1.2K\t\u{A0}", "2024-03-05 10:20", "1.2K"),
      ("/\t2024-Mar-05 10:20:00\t- \u{A0}\tDirectory", "2024-Mar-05 10:20:00", nil),
      ("\t2024-Mar-05 10:20:00\t0.1K\ttext/plain", "2024-Mar-05 10:20:00", "0.1K"),
      ("\t \t2.9M\t a description", nil, "2.9M"),
      ("  05-Mar-2024 10:20  -  ", "05-Mar-2024 10:20", nil),
      ("  05-Mar-2024 10:20  a description 12", "05-Mar-2024 10:20", nil),
      ("", nil, nil),
    ]
    for (after, date, size) in cases {
      let found = DirectoryIndex.dateAndSize(after: after)
      #expect(found.date == date && found.size == size, "\(after): \(found)")
    }
  }
}

/// `include:`, `exclude:` and `depth:`.
@Suite struct DirectoryIndexFilterTests {
  typealias Filter = DirectoryIndex.Filter

  @Test func aPatternWithoutSlashMatchesTheNameAtAnyDepth() {
    let filter = Filter(include: ["*.iso"])
    #expect(filter.selects(file: "a.iso"))
    #expect(filter.selects(file: "sub/b.iso"))
    #expect(filter.selects(file: "sub/deeper/c.iso"))
    #expect(!filter.selects(file: "a.iso.sig"))
    #expect(!filter.selects(file: "iso/readme"))
  }

  @Test func aPatternWithSlashMatchesTheWholePath() {
    let filter = Filter(include: ["sub/*.iso"])
    #expect(filter.selects(file: "sub/b.iso"))
    #expect(!filter.selects(file: "a.iso"))
    #expect(!filter.selects(file: "x/sub/b.iso"))
    #expect(!filter.selects(file: "sub/deeper/c.iso"), "* does not cross /")
    #expect(Filter(include: ["*/*.iso"]).selects(file: "sub/b.iso"))
    #expect(!Filter(include: ["*/*.iso"]).selects(file: "a.iso"))
  }

  @Test func aLeadingSlashAnchorsAtTheTop() {
    let filter = Filter(exclude: ["/README"])
    #expect(!filter.selects(file: "README"))
    #expect(filter.selects(file: "sub/README"))
  }

  @Test func fnmatchSyntax() {
    #expect(Filter(include: ["file?.txt"]).selects(file: "file1.txt"))
    #expect(!Filter(include: ["file?.txt"]).selects(file: "file10.txt"))
    #expect(Filter(include: ["[ab]*"]).selects(file: "beta"))
    #expect(!Filter(include: ["[!ab]*"]).selects(file: "beta"))
    #expect(Filter(include: ["*"]).selects(file: ".hidden"), "no FNM_PERIOD: * matches a leading dot")
    #expect(!Filter(include: ["*.ISO"]).selects(file: "a.iso"), "case matters")
    #expect(Filter(include: ["a\\*"]).selects(file: "a*"))
    #expect(!Filter(include: ["a\\*"]).selects(file: "ab"))
    #expect(Filter(include: ["with space.txt"]).selects(file: "sub folder/with space.txt"))
    #expect(Filter().selects(file: "anything/at/all"))
  }

  @Test func includeThenExclude() {
    let filter = Filter(include: ["*.iso", "*.sig"], exclude: ["*-beta*"])
    #expect(filter.selects(file: "a.iso"))
    #expect(filter.selects(file: "a.iso.sig"))
    #expect(!filter.selects(file: "a-beta.iso"))
    #expect(!filter.selects(file: "readme"))
  }

  @Test func excludedFoldersAreNotEntered() {
    let filter = Filter(include: ["*.iso"], exclude: ["old", "tmp/", "sub/private"])
    #expect(!filter.enters(folder: "old"))
    #expect(!filter.enters(folder: "a/old"))
    #expect(!filter.enters(folder: "tmp"))
    #expect(Filter(exclude: ["tmp/"]).selects(file: "tmp"), "tmp/ matches folders only")
    #expect(!filter.enters(folder: "sub/private"))
    #expect(filter.enters(folder: "private"))
    #expect(filter.enters(folder: "sub"), "include patterns never stop a folder")
  }

  @Test func patternProblems() {
    #expect(Filter.patternProblem("**/*.iso")?.contains("'**'") == true)
    #expect(Filter.patternProblem("") != nil)
    #expect(Filter.patternProblem("/") != nil)
    #expect(Filter.patternProblem("a\u{0}b") != nil)
    #expect(Filter.patternProblem(String(repeating: "a", count: 5000)) != nil)
    #expect(Filter.patternProblem("sub/*.iso") == nil)
    #expect(Filter.patternProblem("tmp/") == nil)
  }

  /// A fetched page that lists `files` and `folders` (by name) under the index `https://e.org/i/`.
  static func page(_ path: String, files: [String] = [], folders: [String] = []) -> DirectoryIndex.FetchedFolder {
    let url = "https://e.org/i/" + (path.isEmpty ? "" : path + "/")
    let mark = SourceMark(file: url, line: 1, column: 1)
    var listing = DirectoryIndex.Listing(folderURL: url, format: .nginx, title: nil)
    listing.entries =
      folders.map { .init(name: $0, isFolder: true, url: url + $0 + "/", mark: mark) }
      + files.map { .init(name: $0, isFolder: false, url: url + $0, mark: mark) }
    return DirectoryIndex.FetchedFolder(path: path, url: url, listing: listing)
  }

  @Test func depthOneFetchesTheIndexFolderOnly() {
    let first = DirectoryIndex.nextFolders(indexURL: "https://e.org/i/", fetched: [], depth: 1, filter: Filter())
    #expect(first.next == [DirectoryIndex.PendingFolder(path: "", url: "https://e.org/i/", level: 1)])
    let index = Self.page("", files: ["a"], folders: ["sub"])
    let second = DirectoryIndex.nextFolders(indexURL: "https://e.org/i/", fetched: [index], depth: 1, filter: Filter())
    #expect(second.next.isEmpty && second.limitProblem == nil)
  }

  @Test func theCrawlGoesLevelByLevel() {
    // i/ holds a, sub/ (b, deeper/ (c, deepest/ (d))), old/ (e)
    let tree: [String: DirectoryIndex.FetchedFolder] = [
      "": Self.page("", files: ["a"], folders: ["sub", "old"]),
      "sub": Self.page("sub", files: ["b"], folders: ["deeper"]),
      "old": Self.page("old", files: ["e"]),
      "sub/deeper": Self.page("sub/deeper", files: ["c"], folders: ["deepest"]),
      "sub/deeper/deepest": Self.page("sub/deeper/deepest", files: ["d"]),
    ]
    let filter = Filter(exclude: ["old"])
    var fetched: [DirectoryIndex.FetchedFolder] = []
    var levels: [[String]] = []
    for _ in 0..<10 {
      let step = DirectoryIndex.nextFolders(indexURL: "https://e.org/i/", fetched: fetched, depth: 3, filter: filter)
      #expect(step.limitProblem == nil)
      if step.next.isEmpty { break }
      levels.append(step.next.map(\.path))
      for pending in step.next {
        #expect(pending.url == tree[pending.path]?.url)
        if let page = tree[pending.path] { fetched.append(page) }
      }
    }
    #expect(levels == [[""], ["sub"], ["sub/deeper"]])
    let files = DirectoryIndex.selectedFiles(fetched, filter: filter).map(\.path)
    #expect(files == ["a", "sub/b", "sub/deeper/c"])
  }

  @Test func aFolderThatFailedIsNotAskedForAgain() {
    let index = Self.page("", folders: ["broken", "fine"])
    let broken = DirectoryIndex.FetchedFolder(path: "broken", url: "https://e.org/i/broken/", listing: nil)
    let step = DirectoryIndex.nextFolders(
      indexURL: "https://e.org/i/", fetched: [index, broken], depth: 5, filter: Filter())
    #expect(step.next.map(\.path) == ["fine"])
  }

  @Test func theCrawlIsBounded() {
    let index = Self.page("", folders: (0..<10).map { "f\($0)" })
    let limited = DirectoryIndex.nextFolders(
      indexURL: "https://e.org/i/", fetched: [index], depth: 2, filter: Filter(),
      limits: DirectoryIndex.CrawlLimits(maxFolders: 4, maxEntries: 100))
    #expect(limited.next.map(\.path) == ["f0", "f1", "f2"])
    #expect(limited.limitProblem?.contains("more than 4 folders") == true)
    let crowded = DirectoryIndex.nextFolders(
      indexURL: "https://e.org/i/", fetched: [index], depth: 2, filter: Filter(),
      limits: DirectoryIndex.CrawlLimits(maxFolders: 100, maxEntries: 5))
    #expect(crowded.next.isEmpty)
    #expect(crowded.limitProblem?.contains("more than 5") == true)
  }

  @Test func excludedFoldersFetchedAnywayListNoFiles() {
    let pages = [Self.page("", files: ["a"]), Self.page("skip", files: ["b"]), Self.page("skip/in", files: ["c"])]
    let files = DirectoryIndex.selectedFiles(pages, filter: Filter(exclude: ["skip"]))
    #expect(files.map(\.path) == ["a"])
  }

  @Test func theRealApachePagesCrawl() throws {
    let index = DirectoryIndexTests.read(ListingFixtures.apacheTable)
    let first = DirectoryIndex.FetchedFolder(path: "", url: ListingFixtures.apacheTable.url, listing: index)
    let step = DirectoryIndex.nextFolders(
      indexURL: ListingFixtures.apacheTable.url, fetched: [first], depth: 2, filter: Filter(exclude: ["empty/"]))
    #expect(step.next == [.init(path: "sub folder", url: ListingFixtures.apacheSubFolder.url, level: 2)])
    let sub = DirectoryIndex.FetchedFolder(
      path: "sub folder", url: ListingFixtures.apacheSubFolder.url,
      listing: DirectoryIndexTests.read(ListingFixtures.apacheSubFolder))
    let files = DirectoryIndex.selectedFiles([first, sub], filter: Filter(include: ["*.txt"]))
    #expect(files.map(\.path).contains("sub folder/inner.txt"))
    #expect(files.count == 8)
    #expect(
      DirectoryIndex.nextFolders(
        indexURL: ListingFixtures.apacheTable.url, fetched: [first, sub], depth: 2, filter: Filter(exclude: ["empty/"])
      ).next.isEmpty)
  }
}
