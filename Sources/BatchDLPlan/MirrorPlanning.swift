import BatchDLSupport

/// The mirrors of a request: each added once, in order, found by its bytes.
extension PlanBuilder {
  /// Adds mirrors to a request's sources: in order, after those it has, leaving out its own URL and
  /// any it has already (tasks sharing a request bring the union of their mirrors).
  package mutating func addMirrors(_ mirrors: [NormalizedURL], to request: Int32) {
    for mirror in mirrors {
      var url = mirror.text
      url.withUTF8 { addMirror(UnsafeRawBufferPointer($0), to: request) }
    }
  }

  /// Adds one mirror (a normalized URL's bytes), unless the request has it already: O(1), a request
  /// with more than a few mirrors has them indexed by their bytes (40,000 `mirrors:` compared each
  /// with all before it took minutes).
  package mutating func addMirror(_ url: UnsafeRawBufferPointer, to request: Int32) {
    let hash = TextArena.hash(url)
    if hasMirror(url, hash: hash, request: request) { return }
    // No copy of the request or its mirrors is alive here: the append does not copy them.
    requests[Int(request)].mirrors.append(text.append(url))
    let count = requests[Int(request)].mirrors.count
    if count > Self.unindexedMirrors {
      indexMirror(Int32(count - 1), hash: hash, of: request)
    }
  }

  /// Mirrors a request holds before they are indexed: a short list is searched.
  package static let unindexedMirrors = 8

  /// Whether `url` is the request's URL or one of its mirrors.
  package func hasMirror(_ url: UnsafeRawBufferPointer, hash: UInt64, request: Int32) -> Bool {
    let existing = requests[Int(request)]
    if text.equals(existing.url, url) { return true }
    if let index = mirrorIndex[request] {
      return index.find(hash: hash) { [text] in text.equals(existing.mirrors[Int($0)], url) } != nil
    }
    return existing.mirrors.contains { text.equals($0, url) }
  }

  /// Indexes mirror `position` of a request, and the ones before it when it is the first indexed.
  package mutating func indexMirror(_ position: Int32, hash: UInt64, of request: Int32) {
    let mirrors = requests[Int(request)].mirrors
    let rehash = { [text] (index: Int32) in text.hash(mirrors[Int(index)]) }
    var table = mirrorIndex.removeValue(forKey: request) ?? IndexTable()
    if table.count == 0 {
      for index in 0..<position { table.insert(index, hash: rehash(index), rehash: rehash) }
    }
    table.insert(position, hash: hash, rehash: rehash)
    mirrorIndex[request] = table
  }
}
