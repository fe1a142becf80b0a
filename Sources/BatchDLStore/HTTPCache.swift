import BatchDLManifest
import BatchDLSupport
import BatchDLTransfer
import Crypto
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A response held by the cache, as `HTTPCache.lookup` and `HTTPCache.refresh` hand it out.
public struct CachedResponse: Sendable, Equatable {
  /// The request key (hex) the response is stored under.
  public var key: String
  /// The request's URL, credentials masked, as the caller stored it (informational).
  public var url: String
  /// The stored status, reason and header fields (lower-case names; never `Set-Cookie`).
  public var head: ResponseHead
  public var body: [UInt8]
  /// When the response was stored, or last revalidated with a 304.
  public var stored: Date
  /// The age at the time of the lookup, in seconds: the time since `stored` plus the `Age` field.
  public var age: TimeInterval
  /// The freshness lifetime in seconds: `max-age`, else `Expires` minus `Date`, else 0.
  public var lifetime: TimeInterval
  /// True when the response said `no-cache`: it must be revalidated before each use.
  public var requiresRevalidation: Bool

  public var status: Int { head.status }
  /// True while the age is below the freshness lifetime.
  public var isFresh: Bool { lifetime > age }
  /// The `ETag` (weak or strong), for `If-None-Match`.
  public var etag: String? { head["etag"] }
  /// The `Last-Modified` date as the server wrote it, for `If-Modified-Since`.
  public var lastModified: String? { head["last-modified"] }
}

/// What the run does for one data task, given the cache and the session's cache policy.
public enum CacheDecision: Sendable, Equatable {
  /// Serve the response without a request (report `source: cache`).
  case useCached(CachedResponse)
  /// Send a conditional request (`If-None-Match: etag`, `If-Modified-Since: lastModified`, for the
  /// ones that are not nil). On 304 call `refresh` and serve the cached body; on 200 call `store`.
  case revalidate(CachedResponse, etag: String?, lastModified: String?)
  /// No usable entry: send the request as usual, then `store` the response.
  case fetch
  /// `only-cache` and nothing usable cached: the task fails with this message; no request is sent.
  case missing(String)
}

/// A disk failure of the cache (a body file or the index could not be written); the message
/// names the file and the reason.
public struct HTTPCacheError: Error, CustomStringConvertible, Sendable {
  public var message: String

  public init(_ message: String) { self.message = message }

  public var description: String { message }
}

/// An HTTP cache for data tasks (a subset of RFC 9111 for a private cache), with a memory tier in
/// front of a disk tier, each bounded in bytes with least-recently-used eviction.
///
/// Entries are keyed by the request key (hex) and hold the status, the response's header fields
/// (never `Set-Cookie`, `Set-Cookie2` or connection-specific fields, and never any request
/// header), the body, the time stored and the masked URL the caller passes.
///
/// Rules and simplifications:
/// - Only 200 responses are stored; `no-store` and `Vary: *` responses never are. Other `Vary`
///   values are ignored: the request key already covers the request's headers. Which requests
///   go through the cache (GET, normally) is the caller's choice.
/// - A response that is not stored (non-200, `no-store`, too large) removes the entry it would
///   have replaced: the cached one no longer says what the server says.
/// - Freshness: `max-age` (`s-maxage`, `public` and `private` ignored: this cache is private),
///   else `Expires` minus `Date`, else none: there is no heuristic freshness, so a response
///   without either is stale at once (and revalidated when it has a validator). An invalid
///   `Expires` means stale. Age is the time since the entry was stored (or last refreshed by a
///   304) plus the `Age` field. Request `Cache-Control` and `Pragma` are ignored.
/// - `.protocol`: fresh and not `no-cache` → served; otherwise revalidated when the entry has an
///   `ETag` or `Last-Modified`, else fetched. A stale entry is never served, so `must-revalidate`
///   is always honoured. `.preferCache` and `.onlyCache` serve any entry, stale or `no-cache`,
///   without revalidation, like URLSession's `.returnCacheDataElseLoad` and
///   `.returnCacheDataDontLoad`. `.reload` never reads the cache (new responses are still stored).
/// - An entry's size is its body plus its stored header text; an entry larger than the disk
///   capacity (the memory capacity when `disk` is 0) is not stored. With a disk tier, the memory
///   tier holds a subset of the disk entries (the most recently used that fit); a disk `0` means
///   memory only, and the folder is never created.
///
/// On disk (created at the first `store`): `FOLDER/index.sqlite` (SQLite, WAL) with one row per
/// entry (key, masked URL, status, reason, header lines, body size and SHA-256, size, time stored,
/// time and order of last use), and `FOLDER/bodies/KEY` with each body, written atomically. A
/// missing, truncated or altered body file is a miss (and the entry is dropped); a damaged index
/// is discarded and started afresh; body files the index does not know are removed when it opens.
///
/// Errors: `lookup` and `stats` never fail (disk trouble reads as a miss). `store`, `refresh`,
/// `remove` and `clear` throw `HTTPCacheError` when the disk cannot be written, after leaving the
/// entry absent; the caller may log it and carry on.
///
/// Not thread-safe: one thread (the engine's) uses it.
public final class HTTPCache {
  /// The folder of the disk tier (unused when `diskCapacity` is 0).
  public let folder: String
  public let memoryCapacity: Int64
  public let diskCapacity: Int64

  /// The text of `.missing`.
  public static let missingMessage = "not in the cache, and cache.policy is only-cache: no request is sent"

  private var memory: MemoryLRU
  private var index: CacheIndex?

  /// A cache with `memory` bytes in memory and `disk` bytes under `folder` (0: no disk tier).
  public init(folder: String, memory: Int64, disk: Int64) {
    self.folder = folder
    memoryCapacity = max(0, memory)
    diskCapacity = max(0, disk)
    self.memory = MemoryLRU(capacity: max(0, memory))
  }

  /// A cache with a session's capacities (`settings.policy` is given to each `lookup`).
  public convenience init(folder: String, settings: CacheSettings) {
    self.init(folder: folder, memory: settings.memory, disk: settings.disk)
  }

  package var indexPath: String { folder + "/index.sqlite" }
  package var bodiesFolder: String { folder + "/bodies" }

  /// The body file of `key`: the key itself when it is a plain name, else its SHA-256.
  package func bodyPath(for key: String) -> String {
    bodiesFolder + "/" + Self.fileName(for: key)
  }

  package static func fileName(for key: String) -> String {
    let plain =
      !key.isEmpty && key.utf8.count <= 128
      && key.utf8.allSatisfy { byte in
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
      }
    return plain ? key : SHA256.hash(data: Array(key.utf8)).hexString
  }

  // MARK: - Decisions

  /// What to do for the request `key` under `policy` at `now`. A used or revalidated entry counts
  /// as a hit: its last-use time is updated in both tiers.
  public func lookup(key: String, policy: CachePolicy, now: Date = Date()) -> CacheDecision {
    if policy == .reload { return .fetch }
    guard let found = load(key) else {
      return policy == .onlyCache ? .missing(Self.missingMessage) : .fetch
    }
    let response = found.entry.response(key: key, now: now)
    let decision: CacheDecision
    switch policy {
    case .reload:
      return .fetch
    case .preferCache, .onlyCache:
      decision = .useCached(response)
    case .protocol:
      if response.isFresh && !response.requiresRevalidation {
        decision = .useCached(response)
      } else if response.etag != nil || response.lastModified != nil {
        decision = .revalidate(response, etag: response.etag, lastModified: response.lastModified)
      } else {
        return .fetch
      }
    }
    touch(key, found.entry, inMemory: found.inMemory, now: now)
    return decision
  }

  // MARK: - Changes

  /// Stores a response to the request `key` (`url` masked by the caller) received at `now`;
  /// returns false when it is not storable (not 200, `no-store`, `Vary: *`, or larger than the
  /// capacity), in which case any previous entry for `key` is removed.
  @discardableResult
  public func store(
    key: String, url: String, head: ResponseHead, body: [UInt8], now: Date = Date()
  ) throws(HTTPCacheError) -> Bool {
    guard head.status == 200, Self.mayStore(head) else {
      try remove(key: key)
      return false
    }
    let entry = CacheEntry(url: url, head: Self.storable(head), body: body, stored: now)
    guard entry.size <= capacity else {
      try remove(key: key)
      return false
    }
    try put(key, entry, now: now, writingBody: true)
    return true
  }

  /// Applies a 304 to the entry of `key`: the 304's fields replace the stored fields of the same
  /// names (except `Content-Length`, and never adding `Set-Cookie`), and the entry counts as stored
  /// at `now`, so it is fresh again. Returns the updated entry, or nil when there is none (or the
  /// merged fields now say `no-store`, which removes it).
  @discardableResult
  public func refresh(key: String, head: ResponseHead, now: Date = Date()) throws(HTTPCacheError) -> CachedResponse? {
    guard let found = load(key) else { return nil }
    let update = Self.storable(head).fields.filter { $0.name != "content-length" }
    let replaced = Set(update.map(\.name))
    var merged = found.entry.head
    merged.fields = merged.fields.filter { !replaced.contains($0.name) } + update
    guard Self.mayStore(merged) else {
      try remove(key: key)
      return nil
    }
    let entry = CacheEntry(url: found.entry.url, head: merged, body: found.entry.body, stored: now)
    guard entry.size <= capacity else {
      try remove(key: key)
      return nil
    }
    try put(key, entry, now: now, writingBody: false)
    return entry.response(key: key, now: now)
  }

  /// Removes the entry of `key`, from both tiers.
  public func remove(key: String) throws(HTTPCacheError) {
    memory.remove(key)
    guard let index = try diskIndex(create: false) else { return }
    do {
      try index.delete(key)
    } catch {
      throw HTTPCacheError("cannot update the cache index \(indexPath): \(error.message)")
    }
    unlink(bodyPath(for: key))
  }

  /// The number of entries and their bytes (bodies plus header text): the disk tier's when there
  /// is one, else the memory tier's.
  public func stats() -> (entries: Int, bytes: Int64) {
    if let index = try? diskIndex(create: false), let totals = try? index.totals() { return totals }
    return (memory.count, memory.bytes)
  }

  /// Removes every entry from both tiers (and every file under `FOLDER/bodies`); returns how many
  /// entries there were.
  @discardableResult
  public func clear() throws(HTTPCacheError) -> Int {
    var keys = Set(memory.keys)
    memory.removeAll()
    guard let index = try diskIndex(create: false) else { return keys.count }
    do {
      keys.formUnion(try index.allKeys())
      try index.deleteAll()
    } catch {
      throw HTTPCacheError("cannot clear the cache index \(indexPath): \(error.message)")
    }
    for name in (try? FileManager.default.contentsOfDirectory(atPath: bodiesFolder)) ?? [] {
      unlink(bodiesFolder + "/" + name)
    }
    return keys.count
  }

  // MARK: - Tiers

  /// The largest entry that is kept: the disk capacity, or the memory capacity without a disk tier.
  private var capacity: Int64 { diskCapacity > 0 ? diskCapacity : memoryCapacity }

  /// The entry of `key`, from memory, else from disk (checked against its size and SHA-256; a bad
  /// or missing body file drops the entry).
  private func load(_ key: String) -> (entry: CacheEntry, inMemory: Bool)? {
    if let entry = memory.peek(key) { return (entry, true) }
    guard let index = try? diskIndex(create: false), let row = try? index.row(key) else { return nil }
    let path = bodyPath(for: key)
    guard let body = try? FileAccess.readAll(path), Int64(body.count) == row.bodySize,
      SHA256.hash(data: body).hexString == row.bodySHA256
    else {
      try? index.delete(key)
      unlink(path)
      return nil
    }
    var head = ResponseHead()
    head.status = row.status
    head.reason = row.reason
    head.fields = CacheEntry.decode(row.head)
    return (CacheEntry(url: row.url, head: head, body: body, stored: row.stored), false)
  }

  /// Records a hit: the entry becomes the most recently used in both tiers.
  private func touch(_ key: String, _ entry: CacheEntry, inMemory: Bool, now: Date) {
    if inMemory {
      memory.touch(key)
    } else {
      memory.insert(key, entry)
    }
    try? index?.touch(key, now: now)
  }

  /// Writes `entry` to the disk tier (evicting the least recently used entries to make room) and to
  /// the memory tier; without a disk tier, to memory only.
  private func put(_ key: String, _ entry: CacheEntry, now: Date, writingBody: Bool) throws(HTTPCacheError) {
    guard let index = try diskIndex(create: true) else {
      memory.insert(key, entry)
      return
    }
    memory.remove(key)
    let path = bodyPath(for: key)
    if writingBody {
      do {
        try AtomicFile.write(entry.body, to: path)
      } catch {
        try? index.delete(key)
        unlink(path)
        throw HTTPCacheError("cannot write the cache file \(path): \(error.reason)")
      }
    }
    let evicted: [String]
    do {
      evicted = try index.put(key, entry, now: now, capacity: diskCapacity)
    } catch {
      try? index.delete(key)
      unlink(path)
      throw HTTPCacheError("cannot update the cache index \(indexPath): \(error.message)")
    }
    for old in evicted {
      unlink(bodyPath(for: old))
      memory.remove(old)
    }
    memory.insert(key, entry)
  }

  /// The disk tier's index, opened on first use; nil without a disk tier, or when `create` is
  /// false and there is no index yet. A damaged index is discarded and created anew.
  private func diskIndex(create: Bool) throws(HTTPCacheError) -> CacheIndex? {
    if let index { return index }
    guard diskCapacity > 0 else { return nil }
    if !create && access(indexPath, F_OK) != 0 { return nil }
    do {
      try FileAccess.makeDirectories(bodiesFolder)
    } catch {
      throw HTTPCacheError("cannot create the cache folder \(bodiesFolder): \(error.reason)")
    }
    let opened: CacheIndex
    do {
      opened = try CacheIndex(path: indexPath)
    } catch {
      removeDiskFiles()
      do throws(SQLiteError) {
        try? FileAccess.makeDirectories(bodiesFolder)
        opened = try CacheIndex(path: indexPath)
      } catch {
        throw HTTPCacheError("cannot open the cache index \(indexPath): \(error.message)")
      }
    }
    removeUnknownBodies(opened)
    index = opened
    return opened
  }

  /// Deletes the index and every body file (a damaged index is only a cache).
  private func removeDiskFiles() {
    for suffix in ["", "-wal", "-shm", "-journal"] { unlink(indexPath + suffix) }
    try? FileManager.default.removeItem(atPath: bodiesFolder)
  }

  /// Deletes body files without an index row (left by a crash between the two writes, or by an
  /// interrupted atomic write).
  private func removeUnknownBodies(_ index: CacheIndex) {
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: bodiesFolder), !names.isEmpty,
      let keys = try? index.allKeys()
    else { return }
    let known = Set(keys.map(Self.fileName(for:)))
    for name in names where !known.contains(name) { unlink(bodiesFolder + "/" + name) }
  }

  // MARK: - What is stored

  /// Fields never stored: cookies, and connection-specific fields (RFC 9111 §3.1).
  package static let excludedFields: Set<String> = [
    "set-cookie", "set-cookie2", "connection", "keep-alive", "proxy-connection", "proxy-authenticate",
    "proxy-authentication-info", "te", "trailer", "transfer-encoding", "upgrade",
  ]

  /// Whether the response's fields allow storing it: no `no-store`, no `Vary: *`.
  package static func mayStore(_ head: ResponseHead) -> Bool {
    if CacheControl(head).noStore { return false }
    let vary = head.fields.filter { $0.name == "vary" }.flatMap { $0.value.split(separator: ",") }
    return !vary.contains { $0.trimmingCharacters(in: .whitespaces) == "*" }
  }

  /// `head` without the fields that are never stored (and those its `Connection` field names),
  /// names lower-cased, line breaks and NULs in values turned into spaces.
  package static func storable(_ head: ResponseHead) -> ResponseHead {
    let named = head.fields.filter { $0.name.lowercased() == "connection" }.flatMap { field in
      field.value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }
    let excluded = excludedFields.union(named)
    var result = ResponseHead()
    result.status = head.status
    result.reason = clean(head.reason)
    for field in head.fields {
      let name = field.name.lowercased()
      guard !excluded.contains(name), !name.isEmpty, !name.contains(":") else { continue }
      result.fields.append((clean(name), clean(field.value)))
    }
    return result
  }

  private static func clean(_ text: String) -> String {
    guard text.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0 }) else { return text }
    return String(text.map { $0 == "\n" || $0 == "\r" || $0 == "\r\n" || $0 == "\0" ? " " : $0 })
  }
}

@available(*, unavailable)
extension HTTPCache: Sendable {}

/// One stored response, as both tiers hold it.
package struct CacheEntry {
  package var url: String
  /// Already stripped of the fields that are never stored.
  package var head: ResponseHead
  package var body: [UInt8]
  package var stored: Date
  /// The fields as stored in the index: one `name:value` line each.
  package let headText: String
  /// What the entry counts against a capacity: the body plus the header text.
  package let size: Int64

  package init(url: String, head: ResponseHead, body: [UInt8], stored: Date) {
    self.url = url
    self.head = head
    self.body = body
    self.stored = stored
    headText = head.fields.map { $0.name + ":" + $0.value }.joined(separator: "\n")
    size = Int64(body.count) + Int64(headText.utf8.count)
  }

  /// The fields of a `headText`.
  package static func decode(_ text: String) -> [(name: String, value: String)] {
    text.split(separator: "\n").compactMap { (line: Substring) -> (name: String, value: String)? in
      guard let colon = line.firstIndex(of: ":") else { return nil }
      return (String(line[..<colon]), String(line[line.index(after: colon)...]))
    }
  }

  package func response(key: String, now: Date) -> CachedResponse {
    let control = CacheControl(head)
    return CachedResponse(
      key: key, url: url, head: head, body: body, stored: stored,
      age: Freshness.age(of: head, stored: stored, now: now),
      lifetime: Freshness.lifetime(of: head, control: control, stored: stored),
      requiresRevalidation: control.noCache)
  }
}
