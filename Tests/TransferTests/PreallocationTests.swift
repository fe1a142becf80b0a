import CSystem
import Crypto
import Foundation
import TestSupport
import Testing

@testable import BatchDLTransfer

/// A body of known length has its blocks reserved before it is written (`Preallocation`), and the
/// partial file's size still counts only the bytes written: a checkpoint past them, or a resume
/// from a size the reservation made, must never take unwritten blocks (zeros) for the body.
@Suite struct PreallocationTests {
  func hex(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).hexString }

  func body(_ count: Int, seed: UInt8) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
  }

  func status(_ path: String) -> stat? {
    var info = stat()
    return stat(path, &info) == 0 ? info : nil
  }

  /// Whether the folder's filesystem reserves blocks (`fallocate` with `FALLOC_FL_KEEP_SIZE`).
  func reserves(in folder: String) -> Bool {
    let fd = open(folder + "/probe", O_RDWR | O_CREAT, 0o644)
    defer {
      close(fd)
      unlink(folder + "/probe")
    }
    return fd >= 0 && csystem_reserve(fd, 0, 4096) == 0
  }

  func write(_ bytes: ArraySlice<UInt8>, piece: Int, into sink: FileSink) {
    var offset = bytes.startIndex
    while offset < bytes.endIndex {
      let end = min(bytes.endIndex, offset + piece)
      #expect(bytes[offset..<end].withUnsafeBytes { sink.write($0) })
      offset = end
    }
  }

  /// The hostile case: a sink that reserved the whole body and wrote only part of it is left
  /// (a killed run); its file is as long as the bytes written, not as the reservation, so a
  /// checkpoint claiming more is refused, and one at the bytes written resumes byte-identically.
  @Test func aReservedPartialFileIsAsLongAsItsBytesAndResumesOnlyFromThem() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    let whole = body((9 << 20) + 4321, seed: 3)
    let cut = (3 << 20) + 17
    do {
      let sink = try FileSink(path: path, holding: true, reserving: Int64(whole.count))
      #expect(sink.isOnDisk, "a body known to outgrow memory goes to the file from its first byte")
      write(whole[0..<cut], piece: 70_001, into: sink)
      #expect(sink.settle() == Int64(cut))
    }
    let info = try #require(status(path))
    #expect(Int64(info.st_size) == Int64(cut), "the reservation must not make the file look longer")
    // Where the filesystem reserves (ext4, XFS, tmpfs), the blocks past the bytes are allocated.
    if reserves(in: folder.path) {
      #expect(Int64(info.st_blocks) * 512 >= Int64(whole.count), "\(info.st_blocks) blocks")
    }
    // A checkpoint past the bytes that landed (the reserved blocks read as zeros) is refused.
    #expect(throws: TransferFailure.self) {
      try FileSink(path: path, keeping: Int64(cut) + 4096, reserving: Int64(whole.count))
    }
    let resumed = try FileSink(path: path, keeping: Int64(cut), reserving: Int64(whole.count))
    write(whole[cut...], piece: 1 << 20, into: resumed)
    let result = try resumed.finish().get()
    #expect(result.size == Int64(whole.count))
    #expect(result.sha256 == hex(whole))
    #expect(FileManager.default.contents(atPath: path) == Data(whole))
  }

  /// What a failed attempt may keep is what reached the file, the buffer being filled included.
  @Test func settlingWritesTheBufferBeingFilledAndCountsWhatLanded() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    let whole = body((6 << 20) + 99, seed: 5)
    let sink = try FileSink(path: path, reserving: Int64(whole.count) + (8 << 20))
    write(whole[...], piece: 300_000, into: sink)
    #expect(sink.settle() == Int64(whole.count))
    #expect(FileManager.default.contents(atPath: path) == Data(whole))
    #expect(sink.syncNow() == Int64(whole.count))
  }

  /// A body that ends before the blocks reserved for it (a task's expected size that was wrong)
  /// gives the rest back: the file is its bytes, nothing reserved past them.
  @Test func aBodyShorterThanItsReservationGivesTheRestBack() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/f.part"
    let whole = body((2 << 20) + 5, seed: 7)
    let sink = try FileSink(path: path, reserving: 64 << 20)
    write(whole[...], piece: 1 << 20, into: sink)
    let result = try sink.finish().get()
    #expect(result.sha256 == hex(whole))
    let info = try #require(status(path))
    #expect(Int64(info.st_size) == Int64(whole.count))
    #expect(Int64(info.st_blocks) * 512 < 16 << 20, "\(info.st_blocks) blocks still reserved")
  }

  @Test(.enabled(if: SmallFilesystem.permitted, "mounting a tmpfs is not permitted here (needs root)"))
  func aNewFileTheFilesystemCannotHoldFailsDiskFullAndIsRemoved() throws {
    let small = try #require(SmallFilesystem(mebibytes: 4))
    let path = small.path + "/f.part"
    let error = #expect(throws: TransferFailure.self) {
      try FileSink(path: path, holding: true, reserving: 8 << 20)
    }
    #expect(error?.code == .diskFull, "\(String(describing: error))")
    #expect(error?.message.contains("f.part") == true)
    #expect(!FileManager.default.fileExists(atPath: path))
    // Space is free again: what fits is reserved and written.
    let fits = body(3 << 20, seed: 9)
    let sink = try FileSink(path: path, holding: true, reserving: Int64(fits.count))
    write(fits[...], piece: 1 << 20, into: sink)
    #expect(try sink.finish().get().sha256 == hex(fits))
  }

  @Test(.enabled(if: SmallFilesystem.permitted, "mounting a tmpfs is not permitted here (needs root)"))
  func aResumeTheFilesystemCannotHoldFailsDiskFullAndKeepsItsBytes() throws {
    let small = try #require(SmallFilesystem(mebibytes: 4))
    let path = small.path + "/f.part"
    let kept = body(1 << 20, seed: 11)
    #expect(FileManager.default.createFile(atPath: path, contents: Data(kept + [1, 2, 3])))
    let error = #expect(throws: TransferFailure.self) {
      try FileSink(path: path, keeping: Int64(kept.count), reserving: 8 << 20)
    }
    #expect(error?.code == .diskFull, "\(String(describing: error))")
    #expect(FileManager.default.contents(atPath: path) == Data(kept), "the checkpointed bytes stay, nothing past them")
  }

  /// Without a reservation, a write the filesystem cannot hold ends what may be kept: the bytes
  /// that landed, not those taken.
  @Test(.enabled(if: SmallFilesystem.permitted, "mounting a tmpfs is not permitted here (needs root)"))
  func aWriteThatFailedEndsWhatAResumeMayKeep() throws {
    let small = try #require(SmallFilesystem(mebibytes: 4))
    let path = small.path + "/f.part"
    let whole = body(8 << 20, seed: 13)
    let sink = try FileSink(path: path)
    var offset = 0
    while offset < whole.count && sink.failure == nil {
      _ = whole[offset..<offset + (1 << 20)].withUnsafeBytes { sink.write($0) }
      offset += 1 << 20
    }
    let landed = sink.settle()
    #expect(sink.failure?.code == .diskFull, "\(String(describing: sink.failure))")
    #expect(landed < sink.count)
    let info = try #require(status(path))
    #expect(Int64(info.st_size) == landed)
    #expect(sink.syncNow() == landed)
  }
}
