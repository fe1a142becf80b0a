import Foundation
import TestSupport
import Testing

@testable import BatchDLManifest

/// The listings of a real nginx (scripts/setup installs nginx-light, whose autoindex module is
/// built in) on 127.0.0.1, fetched with the curl command line and read: the HTML page, the same
/// folder as JSON and with rounded sizes, and a crawl of the tree through both.
@Suite(.serialized) struct DirectoryIndexNginxTests {
  /// The tree served under `tree/`: relative path → size (folders end with `/`).
  static let files: [String: Int] = [
    "plain.txt": 1234, "with space.txt": 6, "ünïcødé.txt": 2, "100%.txt": 3, "a#b.txt": 4, "a%2Fb": 5,
    "big.bin": 3_000_000, "sub folder/inner.txt": 7, "sub folder/deeper/leaf.txt": 8,
    "sub folder/deeper/deepest/bottom.txt": 9,
  ]
  /// A name no destination may have: nginx lists it (escaped), the reader leaves it out.
  static let hostile = "line\nbreak.txt"
  static let date = Date(timeIntervalSince1970: 1_709_634_000)  // 2024-03-05 10:20:00 UTC

  /// nginx serving the tree at `/listing/` (HTML), `/json/` and `/approx/` (sizes rounded).
  static func server() throws -> NginxServer {
    let nginx = try NginxServer(
      autoindex: [
        .init(location: "/listing/", folder: "tree"),
        .init(location: "/json/", folder: "tree", format: .json),
        .init(location: "/approx/", folder: "tree", exactSize: false),
      ])
    for (path, size) in files { nginx.put("tree/" + path, [UInt8](repeating: 0x61, count: size)) }
    nginx.put("tree/" + hostile, [0x62])
    let manager = FileManager.default
    try manager.createDirectory(atPath: nginx.root + "/tree/empty", withIntermediateDirectories: true)
    let all = (manager.subpaths(atPath: nginx.root + "/tree") ?? []).map { nginx.root + "/tree/" + $0 }
    for path in all { try manager.setAttributes([.modificationDate: date], ofItemAtPath: path) }
    return nginx
  }

  /// The page at `path`, fetched with curl and read.
  static func listing(_ nginx: NginxServer, _ path: String) throws -> DirectoryIndex.Listing {
    let fetched = try nginx.curl(path)
    #expect(fetched.status == 200, "\(path)")
    return DirectoryIndex.parse(fetched.body, folderURL: nginx.url(path), contentType: fetched.contentType)
  }

  @Test func theHTMLAndJSONListingsOfOneFolderAgree() throws {
    let nginx = try Self.server()
    defer { nginx.stop() }
    let html = try Self.listing(nginx, "/listing/")
    let json = try Self.listing(nginx, "/json/")
    #expect(html.format == .nginx)
    #expect(json.format == .nginxJSON)
    let top = Self.files.filter { !$0.key.contains("/") }
    for listing in [html, json] {
      #expect(listing.isComplete)
      #expect(Set(listing.entries.filter { !$0.isFolder }.map(\.name)) == Set(top.keys))
      #expect(Set(listing.entries.filter(\.isFolder).map(\.name)) == ["empty", "sub folder"])
      for entry in listing.entries where !entry.isFolder {
        #expect(
          entry.size == DirectoryIndex.ListedSize(bytes: Int64(top[entry.name] ?? -1), isExact: true), "\(entry.name)")
      }
      #expect(listing.leftOut.map(\.name) == [Self.hostile])
      #expect(listing.diagnostics.count == 1 && listing.diagnostics.first?.message.contains("line\\nbreak.txt") == true)
    }
    let big = try #require(html.entries.first { $0.name == "big.bin" })
    #expect(big.url == nginx.url("/listing/big.bin"))
    #expect(big.dateText == "05-Mar-2024 10:20")
    #expect(try #require(json.entries.first { $0.name == "big.bin" }).dateText == "Tue, 05 Mar 2024 10:20:00 GMT")
    // Each URL the listing gives serves the file.
    let literal = try #require(html.entries.first { $0.name == "a%2Fb" })
    let path = String(literal.url.dropFirst(nginx.url("").count))
    #expect(try nginx.curl(path).body.count == 5)
    let unicode = try #require(json.entries.first { $0.name == "ünïcødé.txt" })
    #expect(try nginx.curl(String(unicode.url.dropFirst(nginx.url("").count))).body.count == 2)

    let approximate = try Self.listing(nginx, "/approx/")
    #expect(approximate.entries.first { $0.name == "big.bin" }?.size == .init(bytes: 3 << 20, isExact: false))
    #expect(approximate.entries.first { $0.name == "plain.txt" }?.size == .init(bytes: 1234, isExact: true))
  }

  @Test func aCrawlOfTheTreeFindsEveryFileToItsDepth() throws {
    let nginx = try Self.server()
    defer { nginx.stop() }
    for prefix in ["/listing/", "/json/"] {
      let filter = DirectoryIndex.Filter(exclude: ["empty/"])
      var fetched: [DirectoryIndex.FetchedFolder] = []
      var steps = 0
      for _ in 0..<10 {
        let step = DirectoryIndex.nextFolders(
          indexURL: nginx.url(prefix), fetched: fetched, depth: 3, filter: filter)
        #expect(step.limitProblem == nil)
        if step.next.isEmpty { break }
        steps += 1
        for folder in step.next {
          let path = String(folder.url.dropFirst(nginx.url("").count))
          fetched.append(.init(path: folder.path, url: folder.url, listing: try Self.listing(nginx, path)))
        }
      }
      #expect(steps == 3, "\(prefix)")
      #expect(fetched.map(\.path) == ["", "sub folder", "sub folder/deeper"], "\(prefix)")
      let files = DirectoryIndex.selectedFiles(fetched, filter: filter)
      let expected = Self.files.keys.filter { !$0.hasPrefix("sub folder/deeper/deepest/") }
      #expect(Set(files.map(\.path)) == Set(expected), "\(prefix)")
      for file in files {
        #expect(file.entry.size?.bytes == Int64(Self.files[file.path] ?? -1), "\(prefix)\(file.path)")
      }
      let onlyText = DirectoryIndex.selectedFiles(fetched, filter: DirectoryIndex.Filter(include: ["sub folder/*"]))
      #expect(onlyText.map(\.path) == ["sub folder/inner.txt"], "\(prefix)")
    }
  }
}
