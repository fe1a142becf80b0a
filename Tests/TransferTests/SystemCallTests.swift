import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLSupport

@Suite struct SystemCallTests {
  /// More than a pipe holds (64 KiB), so `writeAll` must wait for the reader and write in parts.
  /// Each end is closed exactly once: a second close could close another test's descriptor.
  @Test func writeAllAndReadRetryingMoveEveryByteThroughAPipe() throws {
    let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
    var ends: [Int32] = [0, 0]
    try #require(pipe(&ends) == 0)
    let (reader, writer) = (ends[0], ends[1])
    defer { close(reader) }
    let writing = DispatchGroup()
    let wrote = AtomicFlag()
    DispatchQueue.global().async(group: writing) {
      if bytes.withUnsafeBytes({ SystemCalls.writeAll(writer, $0) }) { wrote.set() }
      close(writer)
    }
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 10_000)
    for _ in 0..<100_000 {
      let count = chunk.withUnsafeMutableBytes { SystemCalls.readRetrying(reader, into: $0) }
      try #require(count >= 0)
      if count == 0 { break }
      received += chunk[0..<count]
    }
    #expect(writing.wait(timeout: .now() + 60) == .success)
    #expect(wrote.isSet)
    #expect(received == bytes)
  }

  /// A write that fails gives up with `errno` set (here a pipe's read end: EBADF, and no SIGPIPE
  /// for the whole test process).
  @Test func writeAllThatFailsReturnsFalseWithErrno() throws {
    var ends: [Int32] = [0, 0]
    try #require(pipe(&ends) == 0)
    defer {
      close(ends[0])
      close(ends[1])
    }
    let bytes = [UInt8](repeating: 1, count: 10)
    #expect(!bytes.withUnsafeBytes { SystemCalls.writeAll(ends[0], $0) })
    #expect(errno == EBADF)
  }

  @Test func pwriteAllAndPreadRetryingUseTheOffsetsGiven() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/file"
    let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
    try #require(fd >= 0)
    defer { close(fd) }
    var counts: [Int] = []
    let bytes = Array("hello, world".utf8)
    #expect(bytes.withUnsafeBytes { SystemCalls.pwriteAll(fd, $0, at: 5) { counts.append($0) } })
    #expect(counts.reduce(0, +) == bytes.count)
    #expect(try FileAccess.readAll(path) == [UInt8](repeating: 0, count: 5) + bytes)
    var back = [UInt8](repeating: 0, count: 5)
    #expect(back.withUnsafeMutableBytes { SystemCalls.preadRetrying(fd, into: $0, at: 12) } == 5)
    #expect(back == Array("world".utf8))
    #expect(back.withUnsafeMutableBytes { SystemCalls.preadRetrying(fd, into: $0, at: 17) } == 0)
    #expect(back.withUnsafeMutableBytes { SystemCalls.preadRetrying(-1, into: $0, at: 0) } == -1)
    #expect(errno == EBADF)
  }
}
