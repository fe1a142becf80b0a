import BatchDLSupport
import BatchDLTransfer

/// A bucket index (`index:` on the URL of an `aws_sigv4` session): the objects of the prefix's
/// ListObjectsV2 pages, listed flat (one request per 1,000 keys, not one per folder), arranged as
/// the folder pages a crawl of HTML listings fetches. `include`, `exclude` and `depth`, the checks
/// of each name, the listed sizes and the identities are then those of every index; an object's
/// ETag is part of its fingerprint, so a changed object is fetched again without `--refresh`.
extension S3Bucket {
  /// The folders under the index URL (`indexURL`, ending with `/`) that `objects` fill, down to
  /// `depth` (1: the objects directly under the prefix). A key that cannot be a path below `to:`
  /// is left out of the index folder's page, with its reason; a folder marker (a key ending in
  /// `/`) is skipped. `display` names the listing in messages, `SourceMark` lines counting objects.
  package func folders(
    objects: [S3ListedObject], indexURL: String, depth: Int, display: String
  ) -> [DirectoryIndex.FetchedFolder] {
    let base = indexURL.hasSuffix("/") ? indexURL : indexURL + "/"
    var order: [[UInt8]] = [[]]
    var pages: [[UInt8]: (path: String, url: String, collector: EntryCollector)] = [
      []: ("", base, EntryCollector(folderURL: base))
    ]
    pages[[]]?.collector.listing.format = .s3

    for (number, object) in objects.enumerated() {
      let mark = SourceMark(file: display, line: number + 1, column: 1)
      switch map(key: object.key) {
      case .folderMarker: continue
      case .refused(let reason):
        let message = reason + "; it is left out"
        pages[[]]?.collector.listing.leftOut.append(
          DirectoryIndex.LeftOutEntry(name: object.keyText, mark: mark, message: message))
        pages[[]]?.collector.listing.diagnostics.append(Diagnostic(.error, at: mark, message))
      case .object(let url, let relativePath):
        let segments = relativePath.split(separator: UInt8(ascii: "/")).map { Array($0) }
        guard segments.count <= depth, let file = segments.last else { continue }
        var parent: [UInt8] = []
        var parentOK = true
        for segment in segments.dropLast() {
          var folder = parent
          if !folder.isEmpty { folder.append(UInt8(ascii: "/")) }
          folder += segment
          if pages[folder] == nil {
            guard let name = String(validating: segment, as: UTF8.self), let folderURL = pages[parent]?.url else {
              pages[parent]?.collector.refuseEncoding(String(decoding: segment, as: UTF8.self), mark: mark)
              parentOK = false
              break
            }
            let url = folderURL + AWSSignature.encode(segment) + "/"
            let count = pages[parent]?.collector.listing.entries.count ?? 0
            pages[parent]?.collector.add(
              name: name, isFolder: true, url: url, date: nil, size: nil, listed: nil, mark: mark)
            // A name refused as a folder leaves out every object below it.
            guard (pages[parent]?.collector.listing.entries.count ?? 0) > count else {
              parentOK = false
              break
            }
            let path = String(decoding: folder, as: UTF8.self)
            var collector = EntryCollector(folderURL: url)
            collector.listing.format = .s3
            pages[folder] = (path, url, collector)
            order.append(folder)
          }
          parent = folder
        }
        guard parentOK else { continue }
        guard let name = String(validating: file, as: UTF8.self) else {
          pages[parent]?.collector.refuseEncoding(String(decoding: file, as: UTF8.self), mark: mark)
          continue
        }
        let before = pages[parent]?.collector.listing.entries.count ?? 0
        pages[parent]?.collector.add(
          name: name, isFolder: false, url: url, date: object.lastModified, size: String(object.size),
          listed: DirectoryIndex.ListedSize(bytes: object.size, isExact: true), mark: mark)
        if let after = pages[parent]?.collector.listing.entries.count, after > before {
          pages[parent]?.collector.listing.entries[after - 1].etag = object.etag
        }
      }
    }
    return order.compactMap { key in
      pages[key].map { DirectoryIndex.FetchedFolder(path: $0.path, url: $0.url, listing: $0.collector.listing) }
    }
  }
}
