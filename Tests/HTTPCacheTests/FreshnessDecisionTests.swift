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
