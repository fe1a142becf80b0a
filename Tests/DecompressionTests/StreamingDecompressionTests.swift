import Foundation
import Testing

@testable import BatchDLSupport

/// Input fed in pieces as a download gives it (one byte at a time, odd sizes), output to a file,
/// a sink that fails, and the throughput on a large index.
@Suite struct StreamingDecompressionTests {
  static let script = """
    t = text(10 << 20, seed=2)
    a, b = b'first line\\n', b'second member\\n'
    expect('text.gz', tool(['gzip', '-6', '-c'], t), t)
    expect('text.xz', tool(['xz', '-6', '-c'], t), t)
    expect('members.gz', gz(a) + gz(b) + gz(b''), a + b)
    expect('padded.xz', xz(a) + bytes(4) + xz(b) + bytes(4), a + b)
    w('bomb.xz', zeros_xz(100 << 20))
    w('garbage.xz', xz(a) + b'junk')
    """

  static let fixtures = Result { try Fixtures(script) }

  /// Feeds `input` in pieces of `sizes` (in turn) to a decompressor that does not know the
  /// input's size, collecting the output.
  static func pieces(
    _ input: [UInt8], _ format: CompressionFormat, sizes: [Int], limits: DecompressionLimits = DecompressionLimits()
  ) throws -> (output: [UInt8], result: DecompressionResult) {
    let decompressor = try StreamingDecompressor(format: format, limits: limits)
    var output: [UInt8] = []
    var offset = 0
    var turn = 0
    try input.withUnsafeBytes { bytes in
      while offset < bytes.count {
        let end = min(bytes.count, offset + sizes[turn % sizes.count])
        try decompressor.feed(UnsafeRawBufferPointer(rebasing: bytes[offset..<end])) { output.append(contentsOf: $0) }
        offset = end
        turn += 1
      }
    }
    let result = try decompressor.finish { output.append(contentsOf: $0) }
    return (output, result)
  }

  @Test(arguments: [("text.gz", CompressionFormat.gzip), ("text.xz", .xz)])
  func tenMegabytesInPieces(_ file: String, _ format: CompressionFormat) throws {
    let folder = try Self.fixtures.get()
    let input = try #require(folder.bytes(file))
    let expected = try #require(folder.bytes(file + ".expected"))
    #expect(expected.count == 10 << 20)
    let whole = try Decompression.decompress(file: folder.path(file), format: format) { _ in }
    let (output, result) = try Self.pieces(input, format, sizes: [1, 2, 3, 7, 100, 4096, 65_537, 1 << 20])
    #expect(output == expected)
    #expect(result == whole)
    #expect(result.outputSHA256 == FileDigest.hex(of: expected, algorithm: .sha256))
  }

  /// Magic bytes, padding and member ends that fall across pieces.
  @Test(arguments: [("members.gz", CompressionFormat.gzip, 3), ("padded.xz", .xz, 2)])
  func membersOneByteAtATime(_ file: String, _ format: CompressionFormat, _ members: Int) throws {
    let folder = try Self.fixtures.get()
    let input = try #require(folder.bytes(file))
    let (output, result) = try Self.pieces(input, format, sizes: [1])
    #expect(output == folder.bytes(file + ".expected"))
    #expect(result.members == members)
    #expect(result.inputBytes == Int64(input.count))
  }

  @Test func garbageOneByteAtATime() throws {
    let folder = try Self.fixtures.get()
    let input = try #require(folder.bytes("garbage.xz"))
    #expect(throws: DecompressionError.trailingGarbage(.xz, offset: Int64(input.count - 4))) {
      try Self.pieces(input, .xz, sizes: [1])
    }
  }

  /// Without the input's size the ratio is taken against the bytes read so far: the bomb still
  /// stops at 1000 times what was read.
  @Test func bombInPiecesWithoutSize() throws {
    let folder = try Self.fixtures.get()
    let input = try #require(folder.bytes("bomb.xz"))
    var outcome: DecompressionError?
    do { _ = try Self.pieces(input, .xz, sizes: [4096]) } catch let error as DecompressionError { outcome = error }
    #expect(outcome == .ratioLimit(1000))
  }

  @Test func toFile() throws {
    let folder = try Self.fixtures.get()
    let output = folder.path("out")
    let result = try Decompression.decompress(file: folder.path("text.xz"), format: .xz, toFile: output)
    #expect(folder.bytes("out") == folder.bytes("text.xz.expected"))
    #expect(result.outputBytes == 10 << 20)
    #expect(throws: DecompressionError.ratioLimit(1000)) {
      try Decompression.decompress(file: folder.path("bomb.xz"), format: .xz, toFile: output)
    }
    #expect(!FileManager.default.fileExists(atPath: output), "a failed decompression leaves no file")
    #expect(throws: DecompressionError.read(path: folder.path("missing.gz"), errno: ENOENT)) {
      try Decompression.decompress(file: folder.path("missing.gz"), format: .gzip, toFile: output)
    }
  }

  /// A byte buffer, whole (the value API) and an uncompressed one in pieces.
  @Test func buffers() throws {
    let folder = try Self.fixtures.get()
    let input = try #require(folder.bytes("members.gz"))
    let (output, result) = try Decompression.decompressed(input, format: .gzip)
    #expect(output == folder.bytes("members.gz.expected"))
    #expect(result.members == 3)
    #expect(result.inputSHA256 == FileDigest.hex(of: input, algorithm: .sha256))
    let plain = Array("Package: a\n\nPackage: b\n".utf8)
    let (same, plainResult) = try Self.pieces(plain, .uncompressed, sizes: [1, 5])
    #expect(same == plain)
    #expect(plainResult.inputSHA256 == plainResult.outputSHA256)
    #expect(plainResult.members == 0)
  }

  struct SinkFull: Error {}

  /// A sink's error comes out as it is; the decompressor is not used again.
  @Test func sinkError() throws {
    let folder = try Self.fixtures.get()
    let input = try #require(folder.bytes("text.gz"))
    let decompressor = try StreamingDecompressor(format: .gzip)
    #expect(throws: SinkFull.self) {
      try input.withUnsafeBytes { try decompressor.feed($0) { _ in throw SinkFull() } }
    }
    #expect(throws: DecompressionError.alreadyFailed) { try decompressor.finish { _ in } }
  }

  /// MB/s on 200 MB of Packages-like text, gzip -6 and xz -6, against `gzip -dc` and `xz -dc`;
  /// only with BATCHDL_DECOMPRESSION_BENCH=1 (making the inputs takes a minute).
  @Test(.enabled(if: ProcessInfo.processInfo.environment["BATCHDL_DECOMPRESSION_BENCH"] == "1"))
  func throughput() throws {
    let folder = try Fixtures(
      """
      with open('big', 'wb') as f:
          for part in range(20):
              f.write(text(10 * 1000 * 1000, seed=100 + part))
      subprocess.run(['gzip', '-6', '-k', 'big'], check=True)
      subprocess.run(['xz', '-6', '-T1', '-k', 'big'], check=True)
      """)
    for (file, format, tool) in [("big.gz", CompressionFormat.gzip, "gzip"), ("big.xz", .xz, "xz")] {
      var best = Double.infinity
      var result: DecompressionResult?
      for _ in 0..<3 {
        let start = Date()
        result = try Decompression.decompress(file: folder.path(file), format: format) { _ in }
        best = min(best, Date().timeIntervalSince(start))
      }
      var toolBest = Double.infinity
      for _ in 0..<3 {
        let start = Date()
        let outcome = try ExternalToolShell.run("\(tool) -dc \(folder.path(file)) > /dev/null")
        #expect(outcome == 0)
        toolBest = min(toolBest, Date().timeIntervalSince(start))
      }
      let megabytes = Double(result?.outputBytes ?? 0) / 1e6
      print(
        "throughput \(file): \(result?.inputBytes ?? 0) -> \(result?.outputBytes ?? 0) bytes; batchdl "
          + String(format: "%.0f MB/s (%.2f s, both SHA-256 included)", megabytes / best, best)
          + "; \(tool) -dc " + String(format: "%.0f MB/s (%.2f s)", megabytes / toolBest, toolBest))
      #expect(result?.outputSHA256 == FileDigest.hex(of: folder.path("big"), algorithm: .sha256))
    }
  }
}

/// `sh -c` for the throughput test's reference runs.
enum ExternalToolShell {
  static func run(_ command: String) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
  }
}
