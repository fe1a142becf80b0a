import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLStore

@Suite struct PolicyTests {
  /// A cache holding `stale` (max-age=1, must-revalidate, no validator) stored at `start`.
  private func cacheWithStaleEntry(_ folder: TemporaryDirectory) throws -> HTTPCache {
    let cache = makeCache(folder)
    try cache.store(
      key: "stale", url: "u", head: head(200, [("Cache-Control", "max-age=1, must-revalidate")]), body: bytes(2),
      now: start)
    try cache.store(
      key: "fresh", url: "u", head: head(200, [("Cache-Control", "max-age=600")]), body: bytes(2), now: start)
    return cache
  }

  @Test func protocolPolicy() throws {
    let folder = TemporaryDirectory()
    let cache = try cacheWithStaleEntry(folder)
    #expect(cache.lookup(key: "fresh", policy: .protocol, now: at(100)).kind == "use")
    #expect(cache.lookup(key: "stale", policy: .protocol, now: at(100)).kind == "fetch")
    #expect(cache.lookup(key: "none", policy: .protocol, now: at(100)).kind == "fetch")
  }

  @Test func reloadNeverReadsButStillStores() throws {
    let folder = TemporaryDirectory()
    let cache = try cacheWithStaleEntry(folder)
    #expect(cache.lookup(key: "fresh", policy: .reload, now: at(1)) == .fetch)
    try cache.store(
      key: "fresh", url: "u", head: head(200, [("Cache-Control", "max-age=600")]), body: bytes(5), now: at(2))
    #expect(cache.lookup(key: "fresh", policy: .protocol, now: at(3)).response?.body == bytes(5))
  }

  @Test func preferCacheServesAnythingCached() throws {
    let folder = TemporaryDirectory()
    let cache = try cacheWithStaleEntry(folder)
    let stale = cache.lookup(key: "stale", policy: .preferCache, now: at(10_000))
    #expect(stale.kind == "use")
    #expect(stale.response?.isFresh == false)
    #expect(cache.lookup(key: "fresh", policy: .preferCache, now: at(1)).kind == "use")
    #expect(cache.lookup(key: "none", policy: .preferCache, now: at(1)) == .fetch)
  }

  @Test func onlyCacheServesAnythingCachedElseMissing() throws {
    let folder = TemporaryDirectory()
    let cache = try cacheWithStaleEntry(folder)
    #expect(cache.lookup(key: "stale", policy: .onlyCache, now: at(10_000)).kind == "use")
    let missing = cache.lookup(key: "none", policy: .onlyCache, now: at(1))
    #expect(missing == .missing(HTTPCache.missingMessage))
    #expect(HTTPCache.missingMessage.contains("only-cache"))
  }
}
