import Crypto
import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLTransfer

@Suite struct BodySinkTests {
  func hex(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).hexString }

  @Test func aFileSinkHashesAndWritesEverythingPastTheInlineMiB() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    let body = (0..<(3 << 20) + 12345).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    try writeAndCheck(body, piece: 70_000, into: try FileSink(path: path), path: path)
  }

  @Test func aResumedSinkKeepsAtMostThreeBuffersInFlight() throws {
    // The queue hashes 64 MiB of kept bytes first, while the engine's side writes 24 MiB more: it
    // must wait for buffers to come back rather than make a new one for every 4 MiB.
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    let kept = [UInt8](repeating: 7, count: 64 << 20)
    #expect(FileManager.default.createFile(atPath: path, contents: Data(kept)))
    let more = [UInt8](repeating: 13, count: 24 << 20)
    let sink = try FileSink(path: path, keeping: Int64(kept.count))
    write(more, piece: 1 << 20, into: sink)
    let result = try sink.finish().get()
    #expect(result.size == Int64(kept.count + more.count))
    #expect(result.sha256 == hex(kept + more))
    #expect(sink.buffersAllocated <= FileSink.bufferCount, "\(sink.buffersAllocated) buffers")
  }

  /// Writes `body` from `start` on, in pieces of `piece` bytes.
  func write(_ body: [UInt8], from start: Int = 0, piece: Int, into sink: FileSink) {
    var offset = start
    while offset < body.count {
      let end = min(body.count, offset + piece)
      #expect(body[offset..<end].withUnsafeBytes { sink.write($0) })
      offset = end
    }
  }

  /// Writes `body` in pieces of `piece` bytes and checks the file, its size and its SHA-256.
  /// Returns how many of the file's pages were in the page cache before it was read back.
  @discardableResult
  func writeAndCheck(
    _ body: [UInt8], piece: Int, into sink: FileSink, path: String, kept: Int = 0
  ) throws -> Int {
    write(body, from: kept, piece: piece, into: sink)
    let result = try sink.finish().get()
    #expect(result.size == Int64(body.count))
    #expect(result.sha256 == hex(body))
    let cached = cachedPages(path)
    #expect(FileManager.default.contents(atPath: path) == Data(body), "the file's bytes differ")
    return cached
  }

  /// Whether a sink in `mode` writes `path` direct (its filesystem is one where that pays).
  func directWritesPay(_ path: String, mode: DirectWrites.Mode) -> Bool {
    let fd = open(path, O_RDONLY)
    defer { close(fd) }
    return DirectWrites.pays(for: fd, mode: mode)
  }

  /// Pages of the file in the page cache (`mincore` over a mapping of it).
  func cachedPages(_ path: String) -> Int {
    let fd = open(path, O_RDONLY)
    defer { close(fd) }
    var info = stat()
    guard fd >= 0, fstat(fd, &info) == 0, info.st_size > 0 else { return -1 }
    let length = Int(info.st_size)
    guard let map = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { return -1 }
    defer { munmap(map, length) }
    var pages = [UInt8](repeating: 0, count: (length + 4095) / 4096)
    guard mincore(map, length, &pages) == 0 else { return -1 }
    return pages.filter { $0 & 1 != 0 }.count
  }

  /// Past the inline MiB the bytes go out in buffers: the first cut to end on a block boundary,
  /// whole ones written direct where the filesystem pays for it, the last short block through the
  /// page cache. Every byte must land at its place, whatever the sizes.
  static let sizes: [Int] = [1_048_577, 8 << 20, (9 << 20) + 4097, (11 << 20) + 123, 6 << 20]
  static let pieces: [Int] = [16_384, 1_048_576, 70_000, 1_000_003, 4096]

  @Test(arguments: zip(sizes, pieces))
  func aFileSinkWritesEveryByteAtItsPlace(size: Int, piece: Int) throws {
    let folder = TemporaryDirectory()
    let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) }
    for mode in [DirectWrites.Mode.auto, .never] {
      let path = folder.path + "/f-\(mode).part"
      // A pace that never falls behind: what goes direct depends on the sizes alone.
      let sink = try FileSink(path: path, direct: mode, pace: DirectWrites.Pace(threshold: .max))
      let cached = try writeAndCheck(body, piece: piece, into: sink, path: path)
      if directWritesPay(path, mode: mode) {
        // All but the inline MiB, the first buffer (when it starts off a block) and the last block.
        let most = (1 << 20) + FileSink.bufferSize + 4096
        #expect(sink.directBytes >= Int64(size - most), "\(sink.directBytes) bytes direct")
        #expect(sink.directBytes % 4096 == 0)
        // What went direct is not in the page cache.
        let throughCache = (size - Int(sink.directBytes) + 4095) / 4096
        #expect(cached >= 0 && cached <= throughCache + 2, "\(cached) pages cached, \(throughCache) written through it")
      } else {
        #expect(sink.directBytes == 0)
        // Written through the page cache, the file is in it (which the check above tells apart).
        #expect(cached >= size / 4096 - 2, "\(cached) pages cached")
      }
    }
  }

  @Test func aSinkResumedOffABlockBoundaryWritesDirectAfterItsFirstBuffer() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    let body = (0..<(12 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 16) }
    let kept = 1_234_567
    #expect(FileManager.default.createFile(atPath: path, contents: Data(body[0..<kept])))
    let sink = try FileSink(path: path, keeping: Int64(kept), pace: DirectWrites.Pace(threshold: .max))
    try writeAndCheck(body, piece: 100_000, into: sink, path: path, kept: kept)
    if directWritesPay(path, mode: .auto) {
      let most = FileSink.bufferSize + 4096
      #expect(sink.directBytes >= Int64(body.count - kept - most), "\(sink.directBytes) bytes direct")
      #expect(sink.directBytes > 0)
    }
  }

  /// A device slower than the network: the rest of the body goes through the page cache, every
  /// byte at its place, and a sync drops the pages it wrote back.
  @Test func aSinkWhoseDeviceFellBehindWritesThroughThePageCacheAndASyncDropsIt() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    let body = (0..<((18 << 20) + 5000)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 10) }
    let sink = try FileSink(path: path, pace: DirectWrites.Pace(fellBehind: true))
    write(body, piece: 1 << 20, into: sink)
    let result = try sink.finish().get()
    #expect(result.size == Int64(body.count))
    #expect(result.sha256 == hex(body))
    #expect(sink.directBytes == 0)
    #expect(FileManager.default.contents(atPath: path) == Data(body), "the file's bytes differ")
    guard directWritesPay(path, mode: .auto) else { return }
    // The page cache holds the file until a sync has written it back; then its pages go.
    #expect(cachedPages(path) >= body.count / 4096 - 2, "\(cachedPages(path)) pages cached")
    #expect(sink.syncEstimate == nil, "no rate known before a sync")
    sink.requestSync()
    let deadline = Date().addingTimeInterval(30)
    while sink.durable < Int64(body.count) && Date() < deadline { usleep(10_000) }
    #expect(sink.durable == Int64(body.count))
    // The pages are dropped just after `durable` moves.
    while cachedPages(path) > 2 && Date() < deadline { usleep(10_000) }
    #expect(cachedPages(path) <= 2, "\(cachedPages(path)) pages cached after the sync")
    #expect(sink.syncEstimate == 0, "a sync measured the disk; nothing is left to sync")
  }

  @Test func theDeviceFallsBehindWhenTheEngineWaitsForItsWrites() {
    let ms: UInt64 = 1_000_000
    // Waits under the threshold: a few slow writes of a device that keeps up.
    var pace = DirectWrites.Pace()
    pace.filling(at: 0)
    pace.waitedForWrites(20 * ms, now: 30 * ms)
    pace.waitedForWrites(20 * ms, now: 60 * ms)
    #expect(!pace.fellBehind)
    pace.waitedForWrites(20 * ms, now: 90 * ms)
    #expect(pace.fellBehind, "60 ms of waits in 90 ms")
    // Waits over the threshold, but a small share of a long body's time.
    var long = DirectWrites.Pace()
    long.filling(at: 0)
    for second in 1...10 { long.waitedForWrites(10 * ms, now: UInt64(second) * 1000 * ms) }
    #expect(long.waited == 100 * ms)
    #expect(!long.fellBehind, "100 ms of waits in 10 s")
    // Once behind, it stays behind.
    long.waitedForWrites(4000 * ms, now: 14_000 * ms)
    #expect(long.fellBehind)
    long.waitedForWrites(1, now: 100_000 * ms)
    #expect(long.fellBehind)
  }

  @Test func pageCacheWritesGoInPiecesAndLandAtTheirPlace() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f"
    let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
    defer { close(fd) }
    let body = (0..<((DirectWrites.cachedPiece * 5) + 777)).map { UInt8(truncatingIfNeeded: $0 &* 3 &+ $0 >> 9) }
    var reports: [Int] = []
    #expect(body.withUnsafeBytes { DirectWrites.writeCached(fd, $0, at: 100) { reports.append($0) } })
    #expect(reports.count == 6 && reports.allSatisfy { $0 <= DirectWrites.cachedPiece })
    #expect(reports.reduce(0, +) == body.count)
    #expect(FileManager.default.contents(atPath: path) == Data([UInt8](repeating: 0, count: 100) + body))
  }

  @Test func aSinkWhoseFileRefusesDirectWritesWritesThroughThePageCache() throws {
    // A character device takes no O_DIRECT (the kernel refuses the flag): every byte must still
    // be written and hashed.
    let body = (0..<((3 << 20) + 777)).map { UInt8(truncatingIfNeeded: $0 &* 11) }
    let sink = try FileSink(path: "/dev/null", direct: .anyFilesystem)
    write(body, piece: 200_000, into: sink)
    let result = try sink.finish().get()
    #expect(result.size == Int64(body.count))
    #expect(result.sha256 == hex(body))
    #expect(sink.directBytes == 0)
    #expect(sink.handedOver == Int64(body.count))
  }

  @Test func aDirectWriteOffABlockBoundaryIsRefused() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f"
    let fd = open(path, O_RDWR | O_CREAT, 0o644)
    defer { close(fd) }
    guard DirectWrites.setFlag(fd, on: true) else { return }  // a filesystem without direct writes
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8192, alignment: 4096)
    defer { buffer.deallocate() }
    buffer.initializeMemory(as: UInt8.self, repeating: 5)
    #expect(DirectWrites.write(fd, UnsafeRawBufferPointer(buffer), at: 0) == .written(8192))
    #expect(DirectWrites.write(fd, UnsafeRawBufferPointer(buffer), at: 100) == .refused)
    #expect(DirectWrites.setFlag(fd, on: false))
  }

  @Test func aSinkSyncedMidBufferGoesOnWritingEveryByte() throws {
    // A sync hands over a part-filled buffer: the next one starts off a block boundary.
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    let body = (0..<(6 << 20) + 5).map { UInt8(truncatingIfNeeded: $0 &* 3 &+ $0 >> 10) }
    let sink = try FileSink(path: path)
    let cut = (2 << 20) + 999
    #expect(body[0..<cut].withUnsafeBytes { sink.write($0) })
    #expect(sink.syncNow() == Int64(cut))
    try writeAndCheck(body, piece: 300_001, into: sink, path: path, kept: cut)
  }

  @Test func aHoldingSinkKeepsASmallBodyInMemoryAndCreatesNoFile() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    let body = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
    let sink = try FileSink(path: path, holding: true)
    #expect(body[0..<25_000].withUnsafeBytes { sink.write($0) })
    #expect(body[25_000...].withUnsafeBytes { sink.write($0) })
    sink.requestSync()
    #expect(sink.syncNow() == 0)
    let result = try sink.finish().get()
    #expect(result.size == 40_000)
    #expect(result.sha256 == "")
    #expect(sink.heldBody == body)
    #expect(!sink.isOnDisk)
    #expect(!FileManager.default.fileExists(atPath: path))
  }

  @Test func aHoldingSinkWritesWhatItHeldOnceTheBodyOutgrowsMemory() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    _ = FileManager.default.createFile(atPath: path, contents: Data([9, 9, 9, 9]))
    let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 17) }
    let sink = try FileSink(path: path, holding: true)
    write(body, piece: 16_384, into: sink)
    #expect(sink.isOnDisk)
    #expect(sink.syncNow() == 300_000)
    let result = try sink.finish().get()
    #expect(result.sha256 == hex(body))
    #expect(sink.heldBody == nil)
    #expect(FileManager.default.contents(atPath: path) == Data(body))
  }

  @Test func aHoldingSinkReportsAFileItCannotCreate() throws {
    let folder = TemporaryDirectory()
    let sink = try FileSink(path: folder.path + "/missing/f.part", holding: true)
    let chunk = [UInt8](repeating: 1, count: 100_000)
    #expect(!chunk.withUnsafeBytes { sink.write($0) })
    #expect(sink.failure?.code.rawValue == "write")
    #expect(sink.failure?.message.contains("missing/f.part") == true)
  }

  @Test func aSinkDroppedMidBufferGivesItsSlotsBack() throws {
    let folder = TemporaryDirectory()
    // Past the inline MiB with a half-filled buffer, then released without finish (a failed attempt).
    for _ in 0..<3 {
      let sink = try FileSink(path: folder.path + "/f.part")
      let chunk = [UInt8](repeating: 1, count: (1 << 20) + 100_000)
      #expect(chunk.withUnsafeBytes { sink.write($0) })
    }
  }

  @Test func aResumedSinkKeepsAndHashesTheBytesBeforeTheOffset() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    let body = (0..<500_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    // A partial file with more than the checkpoint: the extra tail must be cut off.
    _ = FileManager.default.createFile(atPath: path, contents: Data(body[0..<300_000] + [9, 9, 9]))
    let sink = try FileSink(path: path, keeping: 300_000)
    #expect(body[300_000...].withUnsafeBytes { sink.write($0) })
    let result = try sink.finish().get()
    #expect(result.size == 500_000)
    #expect(result.sha256 == hex(body))
    #expect(FileManager.default.contents(atPath: path) == Data(body))
  }

  @Test func aPartialFileShorterThanItsCheckpointRestarts() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    _ = FileManager.default.createFile(atPath: path, contents: Data([1, 2, 3]))
    #expect(throws: TransferFailure.self) { try FileSink(path: path, keeping: 10) }
  }

  @Test func aMemorySinkEnforcesItsLimitUnlessItMaySpill() throws {
    let small = MemorySink(limit: 10, spill: nil) { _ in nil }
    #expect([UInt8](repeating: 0, count: 8).withUnsafeBytes { small.write($0) })
    #expect(![UInt8](repeating: 0, count: 8).withUnsafeBytes { small.write($0) })
    #expect(small.failure?.code.rawValue == "body-too-large")

    let folder = TemporaryDirectory()
    let spill = TransferSpec.Spill(contentTypes: [], largerThan: nil, path: folder.path + "/spill.part")
    let spilling = MemorySink(limit: 10, spill: spill) { rule in try? FileSink(path: rule.path) }
    let bytes = (0..<100).map { UInt8($0) }
    #expect(bytes[0..<8].withUnsafeBytes { spilling.write($0) })
    #expect(bytes[8...].withUnsafeBytes { spilling.write($0) })
    let result = try spilling.finish().get()
    #expect(result.size == 100)
    #expect(result.sha256 == hex(bytes))
    #expect(FileManager.default.contents(atPath: folder.path + "/spill.part") == Data(bytes))
  }
}
