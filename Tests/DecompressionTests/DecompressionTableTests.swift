import Foundation
import Testing

@testable import BatchDLSupport

/// gzip and xz inputs made by Python's modules and the gzip and xz tools, each decompressed as a
/// whole file and compared with what was compressed, or with the error it must fail with.
@Suite struct DecompressionTableTests {
  /// One input: its file, the format it is read as, the limits, and what must come of it (nil: the
  /// bytes of `file.expected`, with `members` members).
  struct Case: CustomStringConvertible, Sendable {
    var file: String
    var format: CompressionFormat
    var limits = DecompressionLimits()
    var members = 1
    var fails: (@Sendable (DecompressionError) -> Bool)? = nil

    var description: String { file }
  }

  static func failing(_ error: DecompressionError) -> @Sendable (DecompressionError) -> Bool { { $0 == error } }

  static func corrupt(_ format: CompressionFormat) -> @Sendable (DecompressionError) -> Bool {
    {
      switch $0 {
      case .corrupt(format, _), .checkMismatch(format): return true
      default: return false
      }
    }
  }

  static let script = """
    t = text(300000)
    a, b = b'first line\\n', b'second member\\n'
    g, x = gz(t), xz(t)
    expect('empty.gz', gz(b''), b'')
    expect('empty.xz', xz(b''), b'')
    expect('one.gz', gz(b'x'), b'x')
    expect('one.xz', xz(b'x'), b'x')
    expect('text.gz', g, t)
    expect('text.xz', x, t)
    w('cli', t)
    subprocess.run(['gzip', '-k', '-9', 'cli'], check=True)
    w('cli.gz.expected', t)
    expect('cli.xz', tool(['xz', '-6', '-c'], t), t)
    expect('crc32.xz', tool(['xz', '--check=crc32', '-c'], t), t)
    expect('sha256.xz', tool(['xz', '--check=sha256', '-c'], t), t)
    expect('nocheck.xz', xz(t, check=lzma.CHECK_NONE), t)
    expect('plain', t, t)
    expect('members.gz', gz(a) + gz(b), a + b)
    expect('members.xz', xz(a) + xz(b), a + b)
    expect('padded.xz', xz(a) + bytes(4) + xz(b) + bytes(8), a + b)
    expect('clicat.gz', tool(['gzip', '-c'], a) + tool(['gzip', '-c'], b), a + b)
    expect('clicat.xz', tool(['xz', '-c'], a) + tool(['xz', '-c'], b), a + b)
    expect('floor.xz', xz(bytes(1 << 20)), bytes(1 << 20))
    w('zero-bytes.gz', b'')
    w('zero-bytes.xz', b'')
    w('really-xz.gz', x)
    w('really-gz.xz', g)
    w('text-named.gz', t)
    w('magic-only.gz', b'\\x1f')
    w('header-only.gz', g[:10])
    w('half.gz', g[:len(g) // 2])
    w('no-trailer.gz', g[:-4])
    w('header-only.xz', x[:12])
    w('half.xz', x[:len(x) // 2])
    w('no-footer.xz', x[:-1])
    w('crc.gz', flip(g, len(g) - 8))
    w('length.gz', flip(g, len(g) - 1))
    w('middle.gz', flip(g, len(g) // 2))
    w('middle.xz', flip(x, len(x) // 2))
    w('flags.xz', flip(x, 7))
    w('garbage.gz', g + b'garbage')
    w('zeros-after.gz', g + bytes(4))
    w('partial-magic.gz', g + b'\\x1f')
    w('method.gz', g + b'\\x1f\\x8b\\x07' + bytes(20))
    w('garbage.xz', x + b'junk')
    w('bad-padding.xz', x + bytes(3))
    w('unsupported-check.xz', xz_check_id(xz(a), 2))
    w('dictionary.xz', xz(a, preset=6))
    w('bomb.gz', zeros_gz(100 << 20))
    w('bomb.xz', zeros_xz(100 << 20))
    w('sizes', b'%d %d %d' % (len(g), len(x), len(t)))
    """

  static let fixtures = Result { try Fixtures(script) }

  static var sizes: [Int64] {
    guard let folder = try? fixtures.get(), let text = folder.bytes("sizes") else { return [] }
    return String(decoding: text, as: UTF8.self).split(separator: " ").compactMap { Int64($0) }
  }

  static let mib: Int64 = 1 << 20

  static let cases: [Case] = [
    Case(file: "empty.gz", format: .gzip),
    Case(file: "empty.xz", format: .xz),
    Case(file: "one.gz", format: .gzip),
    Case(file: "one.xz", format: .xz),
    Case(file: "text.gz", format: .gzip),
    Case(file: "text.xz", format: .xz),
    Case(file: "cli.gz", format: .gzip),
    Case(file: "cli.xz", format: .xz),
    Case(file: "crc32.xz", format: .xz),
    Case(file: "sha256.xz", format: .xz),
    Case(file: "nocheck.xz", format: .xz),
    Case(file: "plain", format: .uncompressed, members: 0),
    Case(file: "members.gz", format: .gzip, members: 2),
    Case(file: "members.xz", format: .xz, members: 2),
    Case(file: "padded.xz", format: .xz, members: 2),
    Case(file: "clicat.gz", format: .gzip, members: 2),
    Case(file: "clicat.xz", format: .xz, members: 2),
    // 1 MiB of zeros in about 200 bytes: over 1000 times, not over the 1 MiB floor.
    Case(file: "floor.xz", format: .xz),
    Case(
      file: "floor.xz", format: .xz, limits: DecompressionLimits(ratioFloorBytes: 0),
      fails: failing(.ratioLimit(1000))),
    Case(file: "zero-bytes.gz", format: .gzip, fails: failing(.empty(.gzip))),
    Case(file: "zero-bytes.xz", format: .xz, fails: failing(.empty(.xz))),
    Case(file: "really-xz.gz", format: .gzip, fails: failing(.notFormat(.gzip, found: .xz))),
    Case(file: "really-gz.xz", format: .xz, fails: failing(.notFormat(.xz, found: .gzip))),
    Case(file: "text-named.gz", format: .gzip, fails: failing(.notFormat(.gzip, found: nil))),
    Case(file: "magic-only.gz", format: .gzip, fails: failing(.truncated(.gzip))),
    Case(file: "header-only.gz", format: .gzip, fails: failing(.truncated(.gzip))),
    Case(file: "half.gz", format: .gzip, fails: failing(.truncated(.gzip))),
    Case(file: "no-trailer.gz", format: .gzip, fails: failing(.truncated(.gzip))),
    Case(file: "header-only.xz", format: .xz, fails: failing(.truncated(.xz))),
    Case(file: "half.xz", format: .xz, fails: failing(.truncated(.xz))),
    Case(file: "no-footer.xz", format: .xz, fails: failing(.truncated(.xz))),
    Case(file: "crc.gz", format: .gzip, fails: failing(.checkMismatch(.gzip))),
    Case(file: "length.gz", format: .gzip, fails: failing(.checkMismatch(.gzip))),
    Case(file: "middle.gz", format: .gzip, fails: corrupt(.gzip)),
    Case(file: "middle.xz", format: .xz, fails: corrupt(.xz)),
    Case(file: "flags.xz", format: .xz, fails: corrupt(.xz)),
    Case(file: "method.gz", format: .gzip, fails: corrupt(.gzip)),
    Case(file: "unsupported-check.xz", format: .xz, fails: failing(.unsupportedCheck)),
    Case(
      file: "dictionary.xz", format: .xz, limits: DecompressionLimits(xzMemoryLimit: 1 << 20),
      fails: {
        if case .memoryLimit(let needed, 1 << 20) = $0 { return needed > 8 << 20 }
        return false
      }),
    Case(
      file: "bomb.gz", format: .gzip, limits: DecompressionLimits(maxOutputBytes: 10 * mib),
      fails: failing(.outputLimit(10 * mib))),
    Case(file: "bomb.xz", format: .xz, fails: failing(.ratioLimit(1000))),
    Case(
      file: "text.gz", format: .gzip, limits: DecompressionLimits(maxRatio: 1, ratioFloorBytes: 0),
      fails: failing(.ratioLimit(1))),
    Case(
      file: "text.xz", format: .xz, limits: DecompressionLimits(maxOutputBytes: 100_000),
      fails: failing(.outputLimit(100_000))),
    Case(
      file: "plain", format: .uncompressed, limits: DecompressionLimits(maxOutputBytes: 1000),
      fails: failing(.outputLimit(1000))),
  ]

  /// The trailing-garbage cases: where the garbage starts depends on the compressed sizes.
  static var garbageCases: [Case] {
    let sizes = Self.sizes
    guard sizes.count == 3 else { return [] }
    let (gzipSize, xzSize) = (sizes[0], sizes[1])
    return [
      Case(file: "garbage.gz", format: .gzip, fails: failing(.trailingGarbage(.gzip, offset: gzipSize))),
      Case(file: "zeros-after.gz", format: .gzip, fails: failing(.trailingGarbage(.gzip, offset: gzipSize))),
      Case(file: "partial-magic.gz", format: .gzip, fails: failing(.trailingGarbage(.gzip, offset: gzipSize))),
      Case(file: "garbage.xz", format: .xz, fails: failing(.trailingGarbage(.xz, offset: xzSize))),
      Case(file: "bad-padding.xz", format: .xz, fails: failing(.trailingGarbage(.xz, offset: xzSize))),
    ]
  }

  @Test(arguments: cases + garbageCases)
  func decompressesOrFails(_ item: Case) throws {
    let folder = try Self.fixtures.get()
    let path = folder.path(item.file)
    var output: [UInt8] = []
    var largestChunk = 0
    do {
      let result = try Decompression.decompress(file: path, format: item.format, limits: item.limits) {
        output.append(contentsOf: $0)
        largestChunk = max(largestChunk, $0.count)
      }
      #expect(item.fails == nil, "\(item.file) decompressed, but it should fail")
      let expected = try #require(folder.bytes(item.file + ".expected"))
      #expect(output == expected)
      #expect(result.format == item.format)
      #expect(result.members == item.members)
      #expect(result.outputBytes == Int64(expected.count))
      #expect(result.inputBytes == Int64(folder.bytes(item.file)?.count ?? -1))
      #expect(result.inputSHA256 == FileDigest.hex(of: path, algorithm: .sha256))
      #expect(result.outputSHA256 == FileDigest.hex(of: expected, algorithm: .sha256))
      #expect(largestChunk <= StreamingDecompressor.chunkSize)
    } catch let error as DecompressionError {
      let fails = try #require(item.fails, "\(item.file) failed: \(error)")
      #expect(fails(error), "\(item.file) failed otherwise: \(error)")
      // Nothing past the limits reached the sink.
      #expect(Int64(output.count) <= item.limits.maxOutputBytes)
      let inputSize = Int64(folder.bytes(item.file)?.count ?? 0)
      #expect(Int64(output.count) <= item.limits.ratioCap(inputBytes: inputSize))
    }
  }

  /// Both bombs stop at once: the output the sink got is the limit, not a byte more.
  @Test func bombsStopAtTheLimit() throws {
    let folder = try Self.fixtures.get()
    var given: Int64 = 0
    let limits = DecompressionLimits(maxOutputBytes: 10 * Self.mib)
    #expect(throws: DecompressionError.outputLimit(10 * Self.mib)) {
      try Decompression.decompress(file: folder.path("bomb.gz"), format: .gzip, limits: limits) {
        given += Int64($0.count)
      }
    }
    #expect(given == 10 * Self.mib)
    given = 0
    let size = Int64(folder.bytes("bomb.xz")?.count ?? 0)
    #expect(throws: DecompressionError.ratioLimit(1000)) {
      try Decompression.decompress(file: folder.path("bomb.xz"), format: .xz) { given += Int64($0.count) }
    }
    #expect(given == max(Self.mib, 1000 * size))
  }

  /// An output exactly at the limit passes; one byte under it fails.
  @Test func limitIsInclusive() throws {
    let folder = try Self.fixtures.get()
    let size = try #require(Self.sizes.last)
    for format in [CompressionFormat.gzip, .xz] {
      let path = folder.path("text.\(format == .gzip ? "gz" : "xz")")
      let result = try Decompression.decompress(
        file: path, format: format, limits: DecompressionLimits(maxOutputBytes: size)
      ) { _ in }
      #expect(result.outputBytes == size)
      #expect(throws: DecompressionError.outputLimit(size - 1)) {
        try Decompression.decompress(file: path, format: format, limits: DecompressionLimits(maxOutputBytes: size - 1))
        {
          _ in
        }
      }
    }
  }

  /// The words of the errors the issue names.
  @Test func errorWords() {
    #expect(DecompressionError.outputLimit(2 << 30).description.hasPrefix("the decompressed index passes 2 GiB"))
    #expect(DecompressionError.ratioLimit(1000).description.contains("expands more than 1000 times"))
    #expect(DecompressionError.notFormat(.gzip, found: .xz).description.contains("not gzip data"))
    #expect(DecompressionError.memoryLimit(needed: 9 << 20, limit: 1 << 20).description.contains("9 MiB"))
  }

  @Test(arguments: [
    ("Packages.gz", CompressionFormat.gzip), ("Packages.xz", .xz), ("Packages", .uncompressed),
    ("Release", .uncompressed),
    ("Packages.GZ", .uncompressed), (".gz", .uncompressed), ("Packages.gz.asc", .uncompressed), ("Packages.bz2", nil),
    ("Contents.zst", nil),
    ("Packages.lzma", nil),
  ])
  func formatFromName(_ name: String, _ format: CompressionFormat?) {
    #expect(CompressionFormat(fileName: Array(name.utf8)) == format)
  }
}
