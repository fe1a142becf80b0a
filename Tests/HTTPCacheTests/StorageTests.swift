import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLStore

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
