import Testing

@testable import BatchDLManifest

/// A bucket's objects arranged as an index's folders (`S3Bucket.folders`), without sockets: names
/// by their bytes (NFC and NFD are two files), depth, folder markers, keys refused one by one and
/// a folder name refused with everything below it, the ETag in the fingerprint.
@Suite struct S3BucketIndexTests {
  static let index = "http://127.0.0.1:9000/bkt/rel/"

  static func folders(_ keys: [String], depth: Int = 8) throws -> [DirectoryIndex.FetchedFolder] {
    let bucket = try S3Bucket(url: index)
    let objects = keys.map {
      S3ListedObject(key: Array(("rel/" + $0).utf8), size: 3, etag: "\"e-\($0)\"", lastModified: nil)
    }
    return bucket.folders(objects: objects, indexURL: index, depth: depth, display: "bkt")
  }

  static func files(_ folders: [DirectoryIndex.FetchedFolder]) -> [String] {
    DirectoryIndex.selectedFiles(folders, filter: DirectoryIndex.Filter(include: [], exclude: [])).map(\.path)
  }

  @Test func keysBecomeFoldersAndFilesWithTheirSizesAndETags() throws {
    let folders = try Self.folders(["a.bin", "x/b.bin", "x/y/c.bin"])
    #expect(folders.map(\.path) == ["", "x", "x/y"])
    #expect(Self.files(folders) == ["a.bin", "x/b.bin", "x/y/c.bin"])
    let root = try #require(folders.first?.listing)
    #expect(root.entries.map(\.name) == ["a.bin", "x"])
    #expect(root.entries.first?.size == DirectoryIndex.ListedSize(bytes: 3, isExact: true))
    #expect(root.entries.first?.fingerprint.contains("\"e-a.bin\"") == true, "a changed ETag is a changed file")
    #expect(root.entries.first?.url == "http://127.0.0.1:9000/bkt/rel/a.bin")
  }

  @Test func namesThatDifferOnlyInUnicodeFormAreTwoFiles() throws {
    let folders = try Self.folders(["caf\u{E9}.txt", "cafe\u{301}.txt"])
    #expect(folders.first?.listing?.entries.count == 2)
    #expect(Set(Self.files(folders).map { Array($0.utf8) }).count == 2)
  }

  @Test func depthLeavesDeeperKeysOutAndMarkersAreSkipped() throws {
    let folders = try Self.folders(["a.bin", "x/", "x/b.bin", "x/y/c.bin"], depth: 2)
    #expect(Self.files(folders) == ["a.bin", "x/b.bin"])
  }

  @Test func hostileKeysAreRefusedOneByOneAndTheRestStays() throws {
    let folders = try Self.folders(["ok.bin", "../escape.bin", "x//y.bin", "bad\u{1}/z.bin", "x/fine.bin"])
    #expect(Self.files(folders) == ["ok.bin", "x/fine.bin"])
    let left = folders.flatMap { $0.listing?.leftOut.map(\.name) ?? [] }
    #expect(left.count == 3, "\(left)")
    #expect(!Self.files(folders).contains { $0.contains("escape") || $0.contains("z.bin") })
  }
}
