import Crypto
import Foundation
import TestSupport
import Testing

@testable import BatchDL

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
      let sink = try FileSink(path: path, direct: mode)
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
    let sink = try FileSink(path: path, keeping: Int64(kept))
    try writeAndCheck(body, piece: 100_000, into: sink, path: path, kept: kept)
    if directWritesPay(path, mode: .auto) {
      let most = FileSink.bufferSize + 4096
      #expect(sink.directBytes >= Int64(body.count - kept - most), "\(sink.directBytes) bytes direct")
      #expect(sink.directBytes > 0)
    }
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

@Suite struct AtomicFileTests {
  @Test func aNewFileAppearsWholeWithNothingBeside() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/new.bin"
    try AtomicFile.write([1, 2, 3, 4], to: path)
    #expect(FileManager.default.contents(atPath: path) == Data([1, 2, 3, 4]))
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["new.bin"])
  }

  @Test func anExistingFileIsReplaced() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/old.bin"
    _ = FileManager.default.createFile(atPath: path, contents: Data([9, 9, 9, 9, 9, 9]))
    try AtomicFile.write([5, 6], to: path)
    #expect(FileManager.default.contents(atPath: path) == Data([5, 6]))
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["old.bin"])
  }

  @Test func aSymbolicLinkIsReplacedNotFollowed() throws {
    let folder = TemporaryDirectory()
    let target = folder.path + "/target.txt"
    _ = FileManager.default.createFile(atPath: target, contents: Data("keep".utf8))
    #expect(symlink(target, folder.path + "/link.txt") == 0)
    try AtomicFile.write(Array("new".utf8), to: folder.path + "/link.txt")
    #expect(FileManager.default.contents(atPath: target) == Data("keep".utf8))
    #expect(FileManager.default.contents(atPath: folder.path + "/link.txt") == Data("new".utf8))
    var info = stat()
    #expect(lstat(folder.path + "/link.txt", &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
  }

  @Test func theWrittenFilesSizeAndTimeAreReturnedAsAStatReadsThem() throws {
    let folder = TemporaryDirectory()
    for (name, existing) in [("fresh.bin", false), ("replaced.bin", true)] {
      let path = folder.path + "/" + name
      if existing { try Data("old contents".utf8).write(to: URL(fileURLWithPath: path)) }
      let written = try AtomicFile.write(Array(repeating: 7, count: 5000), to: path)
      #expect(written?.size == 5000)
      let read = FileAccess.status(path)
      #expect(read != nil && written?.size == read?.size && written?.modified == read?.modified)
    }
  }

  @Test func filesWrittenInAnOpenFolderLandThereWhole() throws {
    let folder = TemporaryDirectory()
    let open = try #require(OpenFolder(path: folder.path))
    let path = folder.path + "/a.bin"
    let first = try AtomicFile.write([1, 2, 3], to: path, makingParent: false, in: open)
    #expect(first?.size == 3)
    // Something at the destination already: the named way (a temporary and a rename) replaces it.
    let second = try AtomicFile.write([4, 5], to: path, makingParent: false, in: open)
    #expect(second?.size == 2)
    #expect(FileManager.default.contents(atPath: path) == Data([4, 5]))
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["a.bin"])
    #expect(OpenFolder(path: folder.path + "/absent") == nil)
  }

  /// One test, because the way of linking is the process's: a missing folder must not change it,
  /// and the way through `/proc` must work once it has changed.
  @Test func aMissingFolderFailsTheWriteAndBothWaysOfLinkingWork() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/absent/file.bin"
    let before = AtomicFile.linksByDescriptor
    #expect(throws: SystemError.self) { try AtomicFile.write([1], to: path, makingParent: false) }
    #expect(FileAccess.status(path) == nil)
    #expect(AtomicFile.linksByDescriptor == before)
    try AtomicFile.write([2], to: folder.path + "/by-descriptor.bin", makingParent: false)
    AtomicFile.stopLinkingByDescriptor()
    let written = try AtomicFile.write([3, 4], to: folder.path + "/through-proc.bin", makingParent: false)
    #expect(written?.size == 2)
    #expect(FileManager.default.contents(atPath: folder.path + "/by-descriptor.bin") == Data([2]))
    #expect(FileManager.default.contents(atPath: folder.path + "/through-proc.bin") == Data([3, 4]))
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [
        "by-descriptor.bin", "through-proc.bin",
      ])
  }
}

@Suite struct ObserverRelayTests {
  /// Records the calls it gets, and on which thread.
  final class Recorder: TransferObserver, @unchecked Sendable {
    let lock = NSLock()
    var calls: [Int] = []
    var threads: Set<pthread_t> = []
    var delay: UInt32 = 0

    func note(_ job: Int) {
      if delay > 0 { usleep(delay) }
      lock.lock()
      calls.append(job)
      threads.insert(pthread_self())
      lock.unlock()
    }
    var snapshot: [Int] {
      lock.lock()
      defer { lock.unlock() }
      return calls
    }
    func transferReceivedResponse(_ job: Int, head: ResponseHead) { note(job) }
    func transferBecameDownload(_ job: Int) { note(job) }
    func transferWillRetry(_ job: Int, after delay: Interval, failure: TransferFailure) { note(job) }
    func transferCompleted(
      _ job: Int, outcome: Result<TransferResult, TransferFailure>, spent: Int64, started: UInt64?, ended: UInt64
    ) { note(job) }
    func transferTick(active: [ActiveTransfer]) { note(-1) }
    func transferCheckpoints(_ checkpoints: [TransferCheckpoint]) { note(-2) }
    func settle() {}
  }

  @Test func callsArriveInOrderOnTheRelaysThreadAndSettleWaitsForThem() {
    let recorder = Recorder()
    recorder.delay = 200
    let relay = ObserverRelay(recorder)
    let failure = TransferFailure(code: .internal, message: "y")
    for job in 0..<600 {
      // More than the backlog: the engine's side waits for the relay instead of piling up.
      relay.transferCompleted(job, outcome: .failure(failure), spent: 0, started: nil, ended: 0)
    }
    relay.transferTick(active: [])
    relay.settle()
    #expect(recorder.snapshot == Array(0..<600) + [-1])
    // One thread, not the caller's.
    #expect(recorder.threads.count == 1 && !recorder.threads.contains(pthread_self()))
    relay.stop()
  }

  @Test func stopCarriesOutWhatIsPendingFirst() {
    let recorder = Recorder()
    let relay = ObserverRelay(recorder)
    for job in 0..<50 { relay.transferBecameDownload(job) }
    relay.stop()
    #expect(recorder.snapshot == Array(0..<50))
  }

  @Test func aCallIsCarriedOutWithoutAnyoneWaitingForIt() async throws {
    let recorder = Recorder()
    let relay = ObserverRelay(recorder)
    relay.transferBecameDownload(7)
    // Nobody settles: the relay's thread takes it on its own within a few milliseconds.
    for _ in 0..<200 where recorder.snapshot.isEmpty { try await Task.sleep(nanoseconds: 5_000_000) }
    #expect(recorder.snapshot == [7])
    relay.stop()
  }
}

@Suite struct ResponseTests {
  @Test func theLastResponseHeadWins() {
    var parser = ResponseHeadParser()
    for line in [
      "HTTP/1.1 302 Found\r\n", "Location: /x\r\n", "\r\n", "HTTP/1.1 200 OK\r\n", "Content-Type: text/plain\r\n",
      "ETag: \"abc\"\r\n", "Content-Length: 12\r\n", "\r\n",
    ] {
      var text = line
      text.withUTF8 { parser.consume(UnsafeRawBufferPointer($0)) }
    }
    #expect(parser.complete)
    #expect(parser.head.status == 200)
    #expect(parser.head.mediaType == "text/plain")
    #expect(parser.head.strongETag == "\"abc\"")
    #expect(parser.head.contentLength == 12)
    #expect(parser.head["location"] == nil)
  }

  @Test func headerLinesAreSplitOnTheFirstColonAndTrimmed() {
    var parser = ResponseHeadParser()
    for line in [
      "HTTP/1.1 200 OK\r\n", "X-Mixed-CASE:\t  spaced value \t\r\n", "Location: http://host:8080/a:b\n",
      "not a header line\r\n", "Empty:\r\n", "\r\n",
    ] {
      var text = line
      text.withUTF8 { parser.consume(UnsafeRawBufferPointer($0)) }
    }
    #expect(parser.complete)
    #expect(parser.head.fields.map(\.name) == ["x-mixed-case", "location", "empty"])
    #expect(parser.head["x-mixed-case"] == "spaced value")
    #expect(parser.head["location"] == "http://host:8080/a:b")
    #expect(parser.head["empty"] == "")
  }

  @Test(arguments: [
    ("HTTP/1.1 404 Not Found\r\n", 404, "Not Found"), ("HTTP/2 200\r\n", 200, ""),
    ("HTTP/1.1  503   Service  Unavailable \r\n", 503, "Service  Unavailable "), ("HTTP/1.0 abc\r\n", 0, ""),
  ])
  func statusLines(_ line: String, _ status: Int, _ reason: String) {
    var parser = ResponseHeadParser()
    var text = line
    text.withUTF8 { parser.consume(UnsafeRawBufferPointer($0)) }
    #expect(parser.head.status == status)
    #expect(parser.head.reason == reason)
  }

  @Test func weakTagsAndEncodedBodiesCannotValidateARange() {
    var head = ResponseHead()
    head.status = 200
    head.fields = [("etag", "W/\"x\""), ("content-encoding", "gzip")]
    #expect(head.strongETag == nil)
    #expect(head.encoding == "gzip")
  }

  @Test func contentRanges() {
    #expect(ContentRange("bytes 100-199/1000") == ContentRange("bytes 100-199/1000"))
    #expect(ContentRange("bytes 100-199/1000")?.start == 100)
    #expect(ContentRange("bytes 100-199/*")?.total == nil)
    #expect(ContentRange("bytes */1000") == nil)
    #expect(ContentRange("items 1-2/3") == nil)
  }

  @Test func onlyFailuresARetryCanFixAreRetried() {
    for code: FailureCode in [.connect, .dns, .timeout, .network] {
      #expect(FailureClassifier.isRetryable(TransferFailure(code: code, message: "")))
    }
    for status in [408, 429, 500, 503, 599] {
      #expect(FailureClassifier.isRetryable(TransferFailure(code: .http(status), message: "", status: status)))
    }
    for status in [400, 401, 403, 404, 410] {
      #expect(!FailureClassifier.isRetryable(TransferFailure(code: .http(status), message: "", status: status)))
    }
    for code: FailureCode in [.tls, .protocol, .checksumMismatch, .diskFull, .unsafePath] {
      #expect(!FailureClassifier.isRetryable(TransferFailure(code: code, message: "")))
    }
  }
}

@Suite struct EngineToolTests {
  @Test func aRateBucketSpendsAndRefills() {
    let bucket = RateBucket(bytesPerSecond: 100_000)
    #expect(bucket.take(50_000))
    #expect(!bucket.take(1))
    bucket.refill(now: Engine.now() + 1000)
    #expect(bucket.hasBudget)
  }

  @Test func aMinHeapPopsInOrder() {
    var heap = MinHeap<Int>()
    for value in [5, 3, 9, 1, 7, 3] { heap.push(value) }
    var popped: [Int] = []
    while let value = heap.pop() { popped.append(value) }
    #expect(popped == [1, 3, 3, 5, 7, 9])
  }
}
