import BatchDLSupport
import Crypto
import Dispatch
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// One range of a segmented download: bytes `start..<end`, of which `start..<next` are written and
/// `start..<synced` are on disk. Used on the engine's thread only.
package final class Piece {
  package let start: Int64
  /// Exclusive; moves down when another connection takes over the piece's second half.
  package var end: Int64
  package var next: Int64
  package var synced: Int64
  /// The transfer fetching it, if one is.
  package var transfer: Transfer?
  /// Attempts that moved nothing, for the piece's retries.
  package var failures = 0
  /// When it may be asked for again (ms, the engine's clock).
  package var notBefore: UInt64 = 0
  /// The download's source (`SegmentedDownload.sources`) that fetches or fetched it; nil for bytes
  /// kept from a checkpoint.
  package var source: Int?

  package init(start: Int64, end: Int64, next: Int64? = nil) {
    self.start = start
    self.end = end
    self.next = next ?? start
    synced = self.next
  }

  package var isDone: Bool { next >= end }
  package var remaining: Int64 { max(0, end - next) }
}

/// A source a segmented download asks ranges of: the URL, the host whose caps it counts against,
/// and the `If-Range` it sends ("" for none: a mirror of a download whose digest is known, where
/// each server's own validator is unknown and the digest guards the joined file).
package struct PieceSource {
  package var url: String
  package var hostKey: String
  package var validator: ResumeValidator
  /// The source's own header lines (`TransferSpec.sourceHeaders`).
  package var headers: [String] = []
  /// Its index in the job's `SourceList`, when the job has mirrors.
  package var listIndex: Int?
  /// Pieces it fetches now.
  package var running = 0
  /// It failed, or answered ranges with the whole file or other bytes: no more pieces from it.
  package var dropped = false
  /// Redirects followed from it (by batchdl, for a request with secret headers): at most 10.
  package var redirects = 0
}

/// A download fetched as ranges of one partial file at once (docs/sources.md, "Segments"): the
/// pieces, the file they write into, and what a checkpoint records of them. The engine keeps one per
/// segmented job and drives its transfers; this type splits, steals work, and syncs.
package final class SegmentedDownload {
  package let path: String
  package let descriptor: Int32
  package let total: Int64
  /// `If-Range` for every piece: the strong ETag, else Last-Modified.
  package let validator: ResumeValidator
  package let etag: String?
  package let lastModified: String?
  /// The URL the pieces ask (after the first stream's redirects).
  package let url: String
  /// Where pieces come from: `url` first, then the job's healthy mirrors that may share the file.
  package var sources: [PieceSource] = []
  /// The head the result reports: the first stream's, or the first piece's on a resume.
  package var head: ResponseHead?
  /// At most this many transfers at once.
  package let connections: Int
  /// The least length of a piece a connection takes over from another.
  package let minimumSteal: Int64
  /// The length of the chunks handed out in order (the last one of a gap may be up to half longer).
  package let chunkSize: Int64
  /// Where pieces may begin and end: the piece length of the file's piece digests (so that each
  /// digest covers bytes of one source, and a bad one tells which source sent it), else 1.
  package var alignment: Int64 = 1
  package private(set) var pieces: [Piece] = []
  /// Missing ranges no piece covers yet, in order: connections take chunks from the first.
  package private(set) var unassigned: [ByteExtent] = []
  /// Hashes the part from byte 0 without a gap while the rest arrives.
  package let hasher: PrefixHasher?
  /// Bytes on disk when the run began (a checkpoint's extents), and those of them from byte 0.
  package let keptBefore: Int64
  package let keptPrefix: Int64
  /// Pieces started, for the `sources` of the report.
  package var started = 0
  private let syncState = SyncState()
  package var lastSync: UInt64 = 0
  /// When the hasher was last moved on (ms).
  package var lastHash: UInt64 = 0
  /// The extents last reported as a checkpoint.
  package var reported: [ByteExtent] = []

  /// Opens the partial file (without truncating it), makes it `total` bytes long and reserves its
  /// blocks (`disk-full` when the filesystem cannot hold them); `covered` are
  /// the extents already on disk, `from` where the first stream stands (its piece), if there is one.
  package init(
    path: String, total: Int64, validator: ResumeValidator, etag: String?, lastModified: String?, url: String,
    connections: Int, minSegmentSize: Int64, covered: [ByteExtent]
  ) throws(TransferFailure) {
    let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard fd >= 0 else { throw TransferFailure.system(errno: errno, doing: "open \(path)") }
    var info = stat()
    if fstat(fd, &info) != 0 || (Int64(info.st_size) < total && ftruncate(fd, off_t(total)) != 0) {
      let failure = TransferFailure.system(errno: errno, doing: "extend \(path)")
      close(fd)
      throw failure
    }
    // The ranges not on disk yet get their blocks now (`Preallocation`); the extents, not the
    // file's size, say what is written.
    if let failure = Preallocation.reserve(fd, from: 0, to: total, path: path) {
      close(fd)
      throw failure
    }
    self.path = path
    descriptor = fd
    self.total = total
    self.validator = validator
    self.etag = etag
    self.lastModified = lastModified
    self.url = url
    sources = [PieceSource(url: url, hostKey: "", validator: validator)]
    self.connections = max(1, connections)
    minimumSteal = max(16 << 10, min(1 << 20, minSegmentSize / 2))
    chunkSize = Self.chunkSize(total: total, connections: self.connections, minSegmentSize: minSegmentSize)
    hasher = PrefixHasher(path: path)
    let kept = ByteExtent.merged(covered.map { ByteExtent(start: max(0, $0.start), end: min(total, $0.end)) })
    keptBefore = kept.reduce(0) { $0 + $1.length }
    keptPrefix = kept.first.map { $0.start == 0 ? $0.end : 0 } ?? 0
    pieces = kept.map { Piece(start: $0.start, end: $0.end, next: $0.end) }
  }

  deinit {
    close(descriptor)
  }

  /// Chunks of 4 MiB, or `min_segment_size` when that is smaller (64 KiB at least), and larger for
  /// a file of more than 64 chunks per connection: a request per chunk costs a round trip.
  package static func chunkSize(total: Int64, connections: Int, minSegmentSize: Int64) -> Int64 {
    max(64 << 10, min(minSegmentSize, 4 << 20), total / Int64(max(1, connections) * 64))
  }

  /// Adds the first stream's piece (already running); the rest of the file is handed out in chunks.
  package func add(_ piece: Piece) {
    pieces.append(piece)
    if piece.end < total { unassigned = [ByteExtent(start: piece.end, end: total)] }
  }

  /// `position` moved up to the next multiple of `alignment` (at most `limit`).
  package func aligned(_ position: Int64, limit: Int64) -> Int64 {
    guard alignment > 1 else { return min(position, limit) }
    return min(limit, (position + alignment - 1) / alignment * alignment)
  }

  /// The next chunk in file order, as a piece, if any byte is still unassigned.
  package func nextChunk() -> Piece? {
    guard let gap = unassigned.first else { return nil }
    let length =
      gap.length - chunkSize < chunkSize / 2 ? gap.length : aligned(gap.start + chunkSize, limit: gap.end) - gap.start
    let piece = Piece(start: gap.start, end: gap.start + length)
    if length == gap.length {
      unassigned.removeFirst()
    } else {
      unassigned[0] = ByteExtent(start: gap.start + length, end: gap.end)
    }
    pieces.append(piece)
    return piece
  }

  /// Every missing range of the file, to be handed out in chunks: a download continued from a
  /// checkpoint.
  package func planGaps() {
    unassigned = ByteExtent.gaps(
      in: ByteExtent(start: 0, end: total), besides: pieces.map { ByteExtent(start: $0.start, end: $0.next) })
  }

  /// Every byte is written and every transfer has ended (one that wrote its piece's last byte may
  /// not have ended yet: its bytes are counted when it does).
  package var isComplete: Bool { unassigned.isEmpty && pieces.allSatisfy { $0.isDone && $0.transfer == nil } }

  /// The source for the next piece: of those not dropped whose host has room (`room`), the one
  /// with the fewest pieces running; earlier sources first on a tie.
  package func pickSource(room: (String) -> Bool, avoiding: Set<Int> = []) -> Int? {
    var best: Int?
    for index in sources.indices where !sources[index].dropped && room(sources[index].hostKey) {
      if let listIndex = sources[index].listIndex, avoiding.contains(listIndex) { continue }
      if best.map({ sources[index].running < sources[$0].running }) ?? true { best = index }
    }
    return best
  }

  /// While repairing: the bad ranges and the sources (list indices) that sent them bad.
  package var blame: [(extent: ByteExtent, sources: Set<Int>)] = []

  /// The sources (list indices) that sent bad bytes of `piece`'s range.
  package func blamed(for piece: Piece) -> Set<Int> {
    blame.reduce(into: Set<Int>()) { set, item in
      if item.extent.start < piece.end && piece.next < item.extent.end { set.formUnion(item.sources) }
    }
  }

  /// Whether a source other than `index` may still serve pieces.
  package func hasOtherSource(than index: Int) -> Bool {
    sources.indices.contains { $0 != index && !sources[$0].dropped }
  }
  package var running: Int { pieces.count { $0.transfer != nil } }
  /// Pieces waiting for a connection.
  package func waiting(now: UInt64) -> [Piece] {
    pieces.filter { $0.transfer == nil && !$0.isDone && $0.notBefore <= now }
  }
  package var written: Int64 { pieces.reduce(0) { $0 + ($1.next - $1.start) } }

  /// Takes over the second half of the running piece with the most left, when that half is worth
  /// a connection: the running transfer stops at its new end. Returns the new piece.
  package func steal() -> Piece? {
    guard let largest = pieces.filter({ $0.transfer != nil }).max(by: { $0.remaining < $1.remaining }),
      largest.remaining >= 2 * minimumSteal
    else { return nil }
    let middle = aligned(largest.next + largest.remaining / 2, limit: largest.end)
    guard middle < largest.end else { return nil }
    let piece = Piece(start: middle, end: largest.end)
    largest.end = middle
    pieces.append(piece)
    return piece
  }

  /// The extents on disk, joined.
  package var syncedExtents: [ByteExtent] {
    ByteExtent.merged(pieces.map { ByteExtent(start: $0.start, end: min($0.synced, $0.end)) })
  }

  /// The bytes from 0 on disk without a gap.
  package var syncedPrefix: Int64 {
    let extents = syncedExtents
    return extents.first.map { $0.start == 0 ? $0.end : 0 } ?? 0
  }

  /// Asks for what was written so far to reach the disk, on another thread: `positions` are the
  /// pieces' written ends (handed to the kernel). `applySynced` moves `synced` once it is done.
  package func requestSync(positions: [Int64]) {
    guard syncState.begin() else { return }
    let fd = descriptor
    let state = syncState
    DispatchQueue.global(qos: .utility).async {
      let ok = fdatasync(fd) == 0
      state.end(ok ? positions : nil)
    }
  }

  /// Moves the pieces' `synced` to what the last finished sync covered; true when it moved any.
  package func applySynced() -> Bool {
    guard let positions = syncState.take() else { return false }
    var moved = false
    for (piece, position) in zip(pieces, positions) where position > piece.synced {
      piece.synced = position
      moved = true
    }
    return moved
  }

  /// Syncs now (the run is stopping): everything written is on disk.
  package func syncNow() {
    if fdatasync(descriptor) == 0 {
      for piece in pieces { piece.synced = max(piece.synced, piece.next) }
    }
  }

  /// The bytes from 0 written to the file without a gap (handed to the kernel; not yet synced).
  package var writtenPrefix: Int64 {
    var position: Int64 = 0
    for piece in pieces.sorted(by: { $0.start < $1.start }) {
      if piece.start > position { break }
      position = max(position, min(piece.end, piece.transfer?.fileSink?.handedOver ?? piece.next))
    }
    return position
  }

  /// Lets the hasher read on up to what is written from byte 0.
  package func advanceHash() { hasher?.advance(to: writtenPrefix) }

  /// The SHA-256 of the whole file: the hasher's, which read the file back behind the pieces (from
  /// the page cache, mostly) and has what is left to read; else the file read back whole.
  package func digest() -> String? {
    if let hasher, let digest = hasher.finish(total: total) { return digest }
    return FileAccess.sha256(of: path)
  }
}

/// The state of a segmented download's background sync, shared with the thread that runs it.
private final class SyncState: @unchecked Sendable {
  private let lock = NSLock()
  private var pending = false
  private var done: [Int64]?

  func begin() -> Bool {
    lock.lock()
    defer { lock.unlock() }
    guard !pending else { return false }
    pending = true
    return true
  }

  func end(_ positions: [Int64]?) {
    lock.lock()
    pending = false
    if let positions { done = positions }
    lock.unlock()
  }

  func take() -> [Int64]? {
    lock.lock()
    defer { lock.unlock() }
    let positions = done
    done = nil
    return positions
  }
}

/// Reads a file back from byte 0 and hashes it on a thread of its own, up to a limit the engine
/// moves as the part without a gap grows (a segmented download): at the end only what arrived
/// last is left to hash. The bytes below the limit are never written again.
package final class PrefixHasher: @unchecked Sendable {
  private let descriptor: Int32
  private let lock = NSLock()
  /// Guarded by `lock`.
  private var target: Int64 = 0
  private var running = false
  private var stopped = false
  /// The worker's own (one worker at a time; read by `finish` after it ended).
  private var hasher = SHA256()
  private var hashed: Int64 = 0
  private var failed = false
  private let idle = DispatchGroup()

  package init?(path: String) {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
    guard fd >= 0 else { return nil }
    descriptor = fd
  }

  deinit {
    close(descriptor)
  }

  /// Lets the worker hash up to `limit`.
  package func advance(to limit: Int64) {
    lock.lock()
    guard limit > target, !stopped else {
      lock.unlock()
      return
    }
    target = limit
    let start = !running
    running = true
    if start { idle.enter() }
    lock.unlock()
    if start { DispatchQueue.global(qos: .utility).async { self.work() } }
  }

  private func work() {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while true {
      lock.lock()
      let limit = target
      if hashed >= limit || stopped || failed {
        running = false
        lock.unlock()
        idle.leave()
        return
      }
      lock.unlock()
      let want = Int(min(Int64(buffer.count), limit - hashed))
      let got = buffer.withUnsafeMutableBytes {
        SystemCalls.preadRetrying(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: hashed)
      }
      if got <= 0 {
        failed = true
        continue
      }
      buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
      hashed += Int64(got)
    }
  }

  /// Hashes what is left up to `total` and returns the digest; nil when a read failed.
  package func finish(total: Int64) -> String? {
    advance(to: total)
    idle.wait()
    lock.lock()
    stopped = true
    lock.unlock()
    guard !failed, hashed == total else { return nil }
    return hasher.finalize().hexString
  }

  /// Stops hashing (the download goes on otherwise).
  package func stop() {
    lock.lock()
    stopped = true
    lock.unlock()
  }
}
