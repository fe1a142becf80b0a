import Foundation
import TestSupport
import Testing

@testable import BatchDL

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
