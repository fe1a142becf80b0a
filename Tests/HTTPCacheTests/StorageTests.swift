import Foundation
import TestSupport
import Testing

@testable import BatchDL

@Suite struct FreshnessDecisionTests {
  @Test func maxAgeIsFreshUntilItPasses() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    try cache.store(
      key: "a1", url: "https://h/a", head: head(200, [("Cache-Control", "max-age=60")]), body: bytes(3), now: start)
    let fresh = cache.lookup(key: "a1", policy: .protocol, now: at(59))
    #expect(fresh.kind == "use")
    #expect(fresh.response?.body == bytes(3))
    #expect(fresh.response?.age == 59)
    #expect(fresh.response?.lifetime == 60)
    #expect(cache.lookup(key: "a1", policy: .protocol, now: at(60)).kind == "fetch")
  }

  @Test func theAgeFieldCounts() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    let response = head(200, [("Cache-Control", "max-age=60"), ("Age", "50")])
    try cache.store(key: "a1", url: "u", head: response, body: bytes(3), now: start)
    #expect(cache.lookup(key: "a1", policy: .protocol, now: at(9)).kind == "use")
    #expect(cache.lookup(key: "a1", policy: .protocol, now: at(10)).kind == "fetch")
  }

  @Test func expiresMinusDate() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    // The server's clock is 1000 s behind: only Expires − Date matters.
    let response = head(200, [("Date", httpDate(at(-1000))), ("Expires", httpDate(at(-900)))])
    try cache.store(key: "b2", url: "u", head: response, body: bytes(3), now: start)
    #expect(cache.lookup(key: "b2", policy: .protocol, now: at(99)).kind == "use")
    #expect(cache.lookup(key: "b2", policy: .protocol, now: at(100)).kind == "fetch")
  }

  @Test func maxAgeWinsOverExpires() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    let response = head(
      200, [("Date", httpDate(start)), ("Expires", httpDate(at(1000))), ("Cache-Control", "max-age=10")])
    try cache.store(key: "c3", url: "u", head: response, body: bytes(3), now: start)
    #expect(cache.lookup(key: "c3", policy: .protocol, now: at(11)).kind == "fetch")
  }

  @Test func invalidExpiresIsStale() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    let response = head(200, [("Date", httpDate(start)), ("Expires", "0"), ("ETag", "\"v1\"")])
    try cache.store(key: "d4", url: "u", head: response, body: bytes(3), now: start)
    #expect(cache.lookup(key: "d4", policy: .protocol, now: start).kind == "revalidate")
  }

  @Test func noStoreIsNeverStored() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    let stored = try cache.store(
      key: "e5", url: "u", head: head(200, [("Cache-Control", "max-age=60, no-store")]), body: bytes(3), now: start)
    #expect(!stored)
    #expect(cache.lookup(key: "e5", policy: .preferCache, now: start).kind == "fetch")
    #expect(cache.stats().entries == 0)
    #expect(!folder.exists("cache"))
    // A no-store response replaces what was cached for the request.
    try cache.store(key: "e5", url: "u", head: head(200, [("Cache-Control", "max-age=60")]), body: bytes(3), now: start)
    #expect(cache.stats().entries == 1)
    try cache.store(key: "e5", url: "u", head: head(200, [("Cache-Control", "no-store")]), body: bytes(3), now: start)
    #expect(cache.stats().entries == 0)
    #expect(cache.lookup(key: "e5", policy: .onlyCache, now: start).kind == "missing")
  }

  @Test func onlyOKResponsesAreStored() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    for status in [201, 203, 206, 301, 404, 500] {
      #expect(
        try !cache.store(key: "f6", url: "u", head: head(status, [("Cache-Control", "max-age=60")]), body: bytes(3)))
    }
    #expect(try !cache.store(key: "f6", url: "u", head: head(200, [("Vary", "accept, *")]), body: bytes(3)))
    #expect(cache.stats().entries == 0)
  }

  @Test func noCacheIsRevalidatedEvenWhenFresh() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    let response = head(200, [("Cache-Control", "no-cache, max-age=600"), ("ETag", "W/\"w1\"")])
    try cache.store(key: "a7", url: "u", head: response, body: bytes(3), now: start)
    let decision = cache.lookup(key: "a7", policy: .protocol, now: at(1))
    #expect(decision == .revalidate(try #require(decision.response), etag: "W/\"w1\"", lastModified: nil))
    #expect(decision.response?.requiresRevalidation == true)
    #expect(decision.response?.isFresh == true)
    // Without a validator there is nothing to revalidate with.
    try cache.store(key: "a8", url: "u", head: head(200, [("Cache-Control", "no-cache")]), body: bytes(3), now: start)
    #expect(cache.lookup(key: "a8", policy: .protocol, now: at(1)).kind == "fetch")
    #expect(cache.lookup(key: "a8", policy: .preferCache, now: at(1)).kind == "use")
  }

  @Test func staleWithAndWithoutValidators() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    let modified = httpDate(at(-5000))
    try cache.store(
      key: "b1", url: "u", head: head(200, [("Cache-Control", "max-age=10"), ("ETag", "\"e1\"")]), body: bytes(1),
      now: start)
    try cache.store(key: "b2", url: "u", head: head(200, [("Last-Modified", modified)]), body: bytes(1), now: start)
    try cache.store(key: "b3", url: "u", head: head(200, [("Cache-Control", "max-age=10")]), body: bytes(1), now: start)
    let withETag = cache.lookup(key: "b1", policy: .protocol, now: at(11))
    #expect(withETag == .revalidate(try #require(withETag.response), etag: "\"e1\"", lastModified: nil))
    // No heuristic freshness: Last-Modified alone makes the entry stale at once.
    let withDate = cache.lookup(key: "b2", policy: .protocol, now: start)
    #expect(withDate == .revalidate(try #require(withDate.response), etag: nil, lastModified: modified))
    #expect(cache.lookup(key: "b3", policy: .protocol, now: at(11)).kind == "fetch")
  }
}

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

@Suite struct RefreshTests {
  @Test func notModifiedMergesFieldsAndMakesTheEntryFresh() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    let original = head(
      200,
      [
        ("Content-Type", "application/json"), ("Content-Length", "5"), ("ETag", "\"v1\""),
        ("Cache-Control", "max-age=10"), ("X-Keep", "1"),
      ])
    try cache.store(key: "aa", url: "https://h/a", head: original, body: Array("hello".utf8), now: start)
    let decision = cache.lookup(key: "aa", policy: .protocol, now: at(20))
    #expect(decision.kind == "revalidate")
    let notModified = head(
      304,
      [
        ("ETag", "\"v2\""), ("Content-Length", "0"), ("Cache-Control", "max-age=100"), ("Set-Cookie", "s=1"),
        ("X-New", "2"),
      ])
    let refreshed = try #require(try cache.refresh(key: "aa", head: notModified, now: at(20)))
    #expect(refreshed.stored == at(20))
    #expect(refreshed.isFresh)
    #expect(refreshed.status == 200)
    #expect(refreshed.head["etag"] == "\"v2\"")
    #expect(refreshed.head["content-length"] == "5")
    #expect(refreshed.head["content-type"] == "application/json")
    #expect(refreshed.head["cache-control"] == "max-age=100")
    #expect(refreshed.head["x-keep"] == "1")
    #expect(refreshed.head["x-new"] == "2")
    #expect(refreshed.head["set-cookie"] == nil)
    #expect(refreshed.head.fields.filter { $0.name == "cache-control" }.count == 1)
    let later = cache.lookup(key: "aa", policy: .protocol, now: at(119))
    #expect(later.kind == "use")
    #expect(later.response?.body == Array("hello".utf8))
    // The merge is on disk too.
    let reopened = makeCache(folder)
    let fromDisk = reopened.lookup(key: "aa", policy: .protocol, now: at(119))
    #expect(fromDisk.response?.head == refreshed.head)
    #expect(fromDisk.response?.stored == at(20))
  }

  @Test func refreshOfAnUnknownKeyIsNil() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    #expect(try cache.refresh(key: "zz", head: head(304, [("ETag", "\"x\"")]), now: start) == nil)
  }

  @Test func refreshSayingNoStoreRemovesTheEntry() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    try cache.store(key: "ab", url: "u", head: head(200, [("ETag", "\"1\"")]), body: bytes(3), now: start)
    #expect(try cache.refresh(key: "ab", head: head(304, [("Cache-Control", "no-store")]), now: at(1)) == nil)
    #expect(cache.stats().entries == 0)
  }
}

@Suite struct StorageTests {
  @Test func setCookieIsNeverStored() throws {
    let folder = TemporaryDirectory()
    var cache: HTTPCache? = makeCache(folder)
    let response = head(
      200,
      [
        ("Set-Cookie", "session=SECRET-COOKIE-1"), ("Cache-Control", "max-age=60"),
        ("Set-Cookie2", "x=SECRET-COOKIE-2"),
        ("Connection", "close, X-Hop"), ("X-Hop", "SECRET-HOP"), ("Transfer-Encoding", "chunked"),
        ("Content-Type", "text/plain"),
      ])
    try cache?.store(key: "c0ffee", url: "https://h/x", head: response, body: Array("body".utf8), now: start)
    let check = {
      let files = filesUnder(folder.path + "/cache")
      #expect(!files.isEmpty)
      for file in files {
        let text = String(decoding: file.data, as: UTF8.self).lowercased()
        let leaks = ["secret", "set-cookie", "chunked"].filter { text.contains($0) }
        #expect(leaks.isEmpty, "\(file.path)")
      }
    }
    check()
    let served = cache?.lookup(key: "c0ffee", policy: .protocol, now: at(1)).response
    #expect(served?.head.fields.map(\.name) == ["cache-control", "content-type"])
    cache = nil
    check()
    let reopened = makeCache(folder).lookup(key: "c0ffee", policy: .protocol, now: at(1)).response
    #expect(reopened?.head == served?.head)
    #expect(reopened?.url == "https://h/x")
  }

  /// Entries of 1000 body bytes plus 25 of header text: two fit in 2500 bytes, three do not.
  private func storeEntry(_ cache: HTTPCache, _ key: String, at seconds: TimeInterval) throws {
    try cache.store(
      key: key, url: "u", head: head(200, [("Cache-Control", "max-age=600")]), body: bytes(1000), now: at(seconds))
  }

  @Test func memoryEvictsTheLeastRecentlyUsed() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder, memory: 2500, disk: 0)
    try storeEntry(cache, "aa", at: 0)
    try storeEntry(cache, "bb", at: 1)
    #expect(cache.lookup(key: "aa", policy: .protocol, now: at(2)).kind == "use")
    try storeEntry(cache, "cc", at: 3)
    #expect(cache.stats() == (2, 2050))
    #expect(cache.lookup(key: "bb", policy: .protocol, now: at(4)).kind == "fetch")
    #expect(cache.lookup(key: "aa", policy: .protocol, now: at(4)).kind == "use")
    #expect(cache.lookup(key: "cc", policy: .protocol, now: at(4)).kind == "use")
    // Too large for the capacity: not stored, and the old entry goes.
    #expect(try !cache.store(key: "aa", url: "u", head: head(), body: bytes(2501)))
    #expect(cache.stats().entries == 1)
  }

  @Test func diskEvictsTheLeastRecentlyUsed() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder, memory: 0, disk: 2500)
    try storeEntry(cache, "aa", at: 0)
    try storeEntry(cache, "bb", at: 1)
    #expect(cache.lookup(key: "aa", policy: .protocol, now: at(2)).kind == "use")
    try storeEntry(cache, "cc", at: 3)
    #expect(cache.stats() == (2, 2050))
    #expect(!FileManager.default.fileExists(atPath: cache.bodyPath(for: "bb")))
    #expect(FileManager.default.fileExists(atPath: cache.bodyPath(for: "aa")))
    #expect(cache.lookup(key: "bb", policy: .protocol, now: at(4)).kind == "fetch")
    #expect(cache.lookup(key: "aa", policy: .protocol, now: at(4)).kind == "use")
    #expect(try !cache.store(key: "dd", url: "u", head: head(), body: bytes(2501)))
    #expect(cache.stats() == (2, 2050))
  }

  @Test func theRecencyOfUseSurvivesReopening() throws {
    let folder = TemporaryDirectory()
    do {
      let cache = makeCache(folder, memory: 0, disk: 2500)
      try storeEntry(cache, "aa", at: 0)
      try storeEntry(cache, "bb", at: 1)
      #expect(cache.lookup(key: "aa", policy: .preferCache, now: at(2)).kind == "use")
    }
    let cache = makeCache(folder, memory: 0, disk: 2500)
    try storeEntry(cache, "cc", at: 3)
    #expect(cache.lookup(key: "bb", policy: .preferCache, now: at(4)).kind == "fetch")
    #expect(cache.lookup(key: "aa", policy: .preferCache, now: at(4)).kind == "use")
  }

  @Test func memoryIsAFrontForTheDisk() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder, memory: 1100, disk: 1 << 20)
    try storeEntry(cache, "aa", at: 0)
    try storeEntry(cache, "bb", at: 1)
    #expect(cache.stats().entries == 2)
    #expect(cache.lookup(key: "aa", policy: .protocol, now: at(2)).kind == "use")
    #expect(cache.lookup(key: "bb", policy: .protocol, now: at(2)).kind == "use")
    // Removing the body file shows which tier serves: "bb" was just promoted to memory.
    unlink(cache.bodyPath(for: "bb"))
    #expect(cache.lookup(key: "bb", policy: .protocol, now: at(3)).kind == "use")
  }

  @Test func diskZeroWritesNothing() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder, memory: 1 << 20, disk: 0)
    try storeEntry(cache, "aa", at: 0)
    #expect(cache.lookup(key: "aa", policy: .protocol, now: at(1)).kind == "use")
    #expect(try cache.refresh(key: "aa", head: head(304, [("Age", "1")]), now: at(2)) != nil)
    #expect(cache.stats().entries == 1)
    try cache.remove(key: "aa")
    try storeEntry(cache, "bb", at: 3)
    #expect(try cache.clear() == 1)
    #expect(!folder.exists("cache"))
    #expect((try FileManager.default.contentsOfDirectory(atPath: folder.path)).isEmpty)
  }

  @Test func entriesPersistAcrossInstances() throws {
    let folder = TemporaryDirectory()
    let response = head(200, [("Cache-Control", "max-age=60"), ("ETag", "\"p\""), ("Content-Type", "a/b")])
    let body = (0..<3000).map { UInt8($0 % 251) }
    do {
      let first = makeCache(folder)
      try first.store(key: "0123abcd", url: "https://***@h/p", head: response, body: body, now: start)
    }
    let second = makeCache(folder)
    let found = second.lookup(key: "0123abcd", policy: .protocol, now: at(30))
    let cached = try #require(found.response)
    #expect(found.kind == "use")
    #expect(cached.body == body)
    #expect(cached.head == response)
    #expect(cached.stored == start)
    #expect(cached.url == "https://***@h/p")
    #expect(second.stats().entries == 1)
  }

  @Test func clearAndStats() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder)
    #expect(cache.stats() == (0, 0))
    for key in ["k1", "k2", "k3"] {
      try cache.store(key: key, url: "u", head: head(200, [("Cache-Control", "max-age=60")]), body: bytes(100))
    }
    let size = Int64(100 + "cache-control:max-age=60".utf8.count)
    #expect(cache.stats() == (3, 3 * size))
    try cache.remove(key: "k2")
    #expect(cache.stats() == (2, 2 * size))
    #expect(try cache.clear() == 2)
    #expect(cache.stats() == (0, 0))
    #expect((try FileManager.default.contentsOfDirectory(atPath: cache.bodiesFolder)).isEmpty)
    #expect(cache.lookup(key: "k1", policy: .preferCache) == .fetch)
    #expect(makeCache(folder).stats() == (0, 0))
  }

  @Test func aCorruptOrMissingBodyFileIsAMiss() throws {
    let folder = TemporaryDirectory()
    let cache = makeCache(folder, memory: 0)
    let response = head(200, [("Cache-Control", "max-age=60")])
    try cache.store(key: "aa", url: "u", head: response, body: bytes(50), now: start)
    try cache.store(key: "bb", url: "u", head: response, body: bytes(50), now: start)
    try cache.store(key: "cc", url: "u", head: response, body: bytes(50), now: start)
    // Same length, other bytes; truncated; gone.
    try Data(bytes(50, 0x62)).write(to: URL(fileURLWithPath: cache.bodyPath(for: "aa")))
    try Data(bytes(10)).write(to: URL(fileURLWithPath: cache.bodyPath(for: "bb")))
    unlink(cache.bodyPath(for: "cc"))
    #expect(cache.lookup(key: "aa", policy: .preferCache, now: at(1)) == .fetch)
    #expect(cache.lookup(key: "bb", policy: .protocol, now: at(1)) == .fetch)
    #expect(cache.lookup(key: "cc", policy: .onlyCache, now: at(1)).kind == "missing")
    #expect(cache.stats() == (0, 0))
  }

  @Test func aDamagedIndexIsStartedAfresh() throws {
    let folder = TemporaryDirectory()
    folder.write("cache/index.sqlite", String(repeating: "not a database ", count: 100))
    folder.write("cache/bodies/orphan", "left over")
    let cache = makeCache(folder)
    #expect(cache.lookup(key: "aa", policy: .preferCache) == .fetch)
    try cache.store(key: "aa", url: "u", head: head(), body: bytes(5), now: start)
    #expect(cache.lookup(key: "aa", policy: .preferCache).response?.body == bytes(5))
    #expect(!folder.exists("cache/bodies/orphan"))
  }

  @Test func unknownBodyFilesAreRemovedOnOpen() throws {
    let folder = TemporaryDirectory()
    do {
      try makeCache(folder).store(key: "aa", url: "u", head: head(), body: bytes(5), now: start)
    }
    folder.write("cache/bodies/bb", "orphan")
    folder.write("cache/bodies/aa.batchdl-part", "interrupted")
    let cache = makeCache(folder)
    #expect(cache.stats().entries == 1)
    #expect(!folder.exists("cache/bodies/bb"))
    #expect(!folder.exists("cache/bodies/aa.batchdl-part"))
    #expect(folder.exists("cache/bodies/aa"))
  }

  @Test func keysThatAreNotPlainNamesAreHashed() {
    #expect(HTTPCache.fileName(for: "0123abcdef") == "0123abcdef")
    let odd = HTTPCache.fileName(for: "../etc/passwd")
    #expect(odd.count == 64)
    #expect(!odd.contains("/"))
  }
}
