import TestSupport
import Testing

@testable import BatchDLManifest
@testable import BatchDLPlan
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// An `index:` entry planned from a crawl given as a value (pages parsed from text, no sockets):
/// which files become downloads, where they go, what a failed page does, and how a listed size or
/// date enters the request's identity.
@Suite struct IndexExpansionTests {
  static let yaml = """
    version: 1
    sessions:
      s:
        tasks:
          - index: https://h/pub/
            depth: 2
            to: mirror/
    """

  static func page(_ folder: String, _ entries: [(name: String, size: String)]) -> String {
    "<html><head><title>Index of \(folder)</title></head><body><h1>Index of \(folder)</h1><hr><pre>"
      + "<a href=\"../\">../</a>\n"
      + entries.map { "<a href=\"\($0.name)\">\($0.name)</a>   05-Mar-2024 10:20   \($0.size)\n" }.joined()
      + "</pre><hr></body></html>\n"
  }

  /// Plans `yaml` with the crawl of its index made of `pages` (folder path → page text, nil for a
  /// page that failed).
  func plan(_ pages: [(path: String, text: String?)], yaml: String = Self.yaml) throws -> Plan {
    let folder = TemporaryDirectory()
    let path = folder.write("manifest.yaml", yaml)
    let (loaded, diagnostics) = ManifestLoader.read(path: path, environment: [:])
    let manifest = try #require(loaded, "\(diagnostics)")
    let session = manifest.sessions[0]
    guard case .index(let spec) = session.tasks[0] else { throw PlanFailed(description: "no index entry") }
    var crawl = IndexCrawl()
    for page in pages {
      let url = spec.url + page.path + (page.path.isEmpty ? "" : "/")
      let listing = page.text.map {
        DirectoryIndex.parse(Array($0.utf8), folderURL: url, contentType: "text/html")
      }
      crawl.folders.append(DirectoryIndex.FetchedFolder(path: page.path, url: url, listing: listing))
      crawl.pages.append(
        ListingPage(
          url: url, outcome: page.text == nil ? .failed : .fetched,
          failure: page.text == nil ? "cannot fetch it: HTTP 503" : nil))
    }
    var set = DescriptorSet()
    set.listings[DescriptorSet.key(of: spec, for: session, in: manifest)] = crawl
    return try Planner().plan(manifest, warnings: diagnostics, descriptors: set)
  }

  @Test func eachListedFileIsADownloadUnderToKeepingItsPath() throws {
    let plan = try plan([
      ("", Self.page("/pub/", [("a.iso", "100"), ("sub/", "-")])),
      ("sub", Self.page("/pub/sub/", [("b.iso", "200")])),
    ])
    let planned = plan.tasks.map { (plan.url(of: $0), plan.destination(of: $0) ?? "") }
    #expect(planned.map(\.0).sorted() == ["https://h/pub/a.iso", "https://h/pub/sub/b.iso"], "\(planned)")
    #expect(planned.map(\.1).sorted() == ["mirror/a.iso", "mirror/sub/b.iso"], "\(planned)")
    #expect(plan.descriptors.map(\.url) == ["https://h/pub/", "https://h/pub/sub/"])
  }

  @Test func aFailedPageStandsAsOneFailingTaskAndTheOtherPagesStillPlan() throws {
    let plan = try plan([
      ("", Self.page("/pub/", [("a.iso", "100"), ("sub/", "-")])),
      ("sub", nil),
    ])
    #expect(plan.tasks.map { plan.url(of: $0) } == ["https://h/pub/a.iso"])
    let failed = plan.descriptors.filter { $0.outcome == .failed }
    #expect(failed.count == 1)
    #expect(failed.first?.task != nil, "the failed page must fail in the run (and block pruning)")
    #expect(failed.first?.failure?.contains("HTTP 503") == true)
  }

  @Test func aChangedListedSizeChangesTheRequestSoTheFileIsFetchedAgain() throws {
    let before = try plan([("", Self.page("/pub/", [("a.iso", "100")]))])
    let same = try plan([("", Self.page("/pub/", [("a.iso", "100")]))])
    let after = try plan([("", Self.page("/pub/", [("a.iso", "101")]))])
    #expect(before.requests[0].key == same.requests[0].key)
    #expect(before.requests[0].key != after.requests[0].key)
  }

  @Test func namesThatCannotBeFilesOrClashAreLeftOutOneByOne() throws {
    let plan = try plan([
      ("", Self.page("/pub/", [("d", "1"), ("d/", "-"), ("ok.iso", "5"), ("..%2Fup", "1")])),
      ("d", Self.page("/pub/d/", [("e.iso", "2")])),
    ])
    let urls = plan.tasks.map { plan.url(of: $0) }
    #expect(urls.contains("https://h/pub/ok.iso"), "\(urls)")
    #expect(!urls.contains { $0.contains("up") }, "\(urls)")
    let codes = plan.refusedFiles.map(\.code)
    #expect(codes.contains(.conflict), "\(plan.refusedFiles.map(\.message))")
  }

  @Test func aFileListedLargerThanMaxSizeIsLeftOutUnfetched() throws {
    let yaml = Self.yaml.replacingOccurrences(of: "depth: 2", with: "depth: 2\n        max_size: 150")
    let plan = try plan(
      [("", Self.page("/pub/", [("small.iso", "100"), ("big.iso", "200"), ("approx.iso", "1.2K")]))], yaml: yaml)
    let urls = plan.tasks.map { plan.url(of: $0) }
    #expect(urls.sorted() == ["https://h/pub/approx.iso", "https://h/pub/small.iso"], "\(urls)")
    #expect(plan.refusedFiles.map(\.code) == [.tooLarge])
  }
}
