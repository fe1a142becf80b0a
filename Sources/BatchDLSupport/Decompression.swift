#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// How an index file is compressed: gzip (`.gz`), xz (`.xz`) or not at all (`uncompressed`, "none";
/// not `.none`, which an optional would take for nil).
package enum CompressionFormat: String, Sendable, CaseIterable {
  case uncompressed = "none"
  case gzip
  case xz

  /// The format a file name's suffix names, compared as bytes: `.gz` is gzip, `.xz` is xz; nil for
  /// the compressions batchdl does not read (`.bz2`, `.lzma`, `.zst`, `.lz4`), so that they are
  /// never taken for text; any other name (`Packages`, `Release`, `.GZ`) is not compressed.
  package init?(fileName: some Collection<UInt8>) {
    let name = Array(fileName)
    func ends(_ suffix: String) -> Bool {
      let suffix = Array(suffix.utf8)
      return name.count > suffix.count && name.suffix(suffix.count).elementsEqual(suffix)
    }
    if ends(".gz") {
      self = .gzip
    } else if ends(".xz") {
      self = .xz
    } else if [".bz2", ".lzma", ".zst", ".lz4"].contains(where: ends) {
      return nil
    } else {
      self = .uncompressed
    }
  }

  /// The bytes every member (gzip) or stream (xz) starts with; none when uncompressed.
  package var magic: [UInt8] {
    switch self {
    case .uncompressed: return []
    case .gzip: return [0x1F, 0x8B]
    case .xz: return [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]
    }
  }

  /// The compressed format whose magic `head` starts with, or nil when it is neither.
  package static func recognized(_ head: some Collection<UInt8>) -> CompressionFormat? {
    for format in [CompressionFormat.gzip, .xz] where head.starts(with: format.magic) { return format }
    return nil
  }
}

/// How far a decompression may go before it stops: a cap on the output and on its ratio to the
/// input, and the memory liblzma may use.
package struct DecompressionLimits: Equatable, Sendable {
  /// The most bytes the output may have (it may have exactly this many): 2 GiB by default.
  package var maxOutputBytes: Int64
  /// The most times the output may be the input's size: 1000 by default.
  package var maxRatio: Int64
  /// Output up to this size is never refused by the ratio, so that tiny inputs (an empty index
  /// of 20 bytes) are not: 1 MiB by default.
  package var ratioFloorBytes: Int64
  /// The memory liblzma may use to decode an xz stream (its dictionary decides): 256 MiB by
  /// default; xz -9 needs 65 MiB.
  package var xzMemoryLimit: UInt64

  package init(
    maxOutputBytes: Int64 = 2 << 30, maxRatio: Int64 = 1000, ratioFloorBytes: Int64 = 1 << 20,
    xzMemoryLimit: UInt64 = 256 << 20
  ) {
    self.maxOutputBytes = maxOutputBytes
    self.maxRatio = maxRatio
    self.ratioFloorBytes = ratioFloorBytes
    self.xzMemoryLimit = xzMemoryLimit
  }

  /// The most output `inputBytes` of input allow by the ratio (the floor at least).
  package func ratioCap(inputBytes: Int64) -> Int64 {
    let (product, overflow) = maxRatio.multipliedReportingOverflow(by: max(0, inputBytes))
    return overflow ? Int64.max : max(ratioFloorBytes, product)
  }
}

/// What a finished decompression read and wrote, with the SHA-256 of each side (lower-case hex):
/// the Release file pins the compressed file, an index stanza may pin the decompressed one.
package struct DecompressionResult: Equatable, Sendable {
  package var format: CompressionFormat
  /// Bytes read, all of them (the compressed file's size).
  package var inputBytes: Int64
  /// Bytes given to the sink or written (the decompressed size).
  package var outputBytes: Int64
  package var inputSHA256: String
  package var outputSHA256: String
  /// gzip members or xz streams read (they may follow one another, as the tools allow); 0 when
  /// uncompressed.
  package var members: Int
}

/// Why a decompression stopped. The words name no file: the caller puts the index's name first.
package enum DecompressionError: Error, Equatable, Sendable, CustomStringConvertible {
  /// The input has no bytes at all, where gzip or xz data was expected.
  case empty(CompressionFormat)
  /// The input does not start with the format's magic; `found` is the format it does start with.
  case notFormat(CompressionFormat, found: CompressionFormat?)
  /// The input ends inside a member or stream.
  case truncated(CompressionFormat)
  /// Bytes follow the last member or stream that are not another one (the offset of the first).
  case trailingGarbage(CompressionFormat, offset: Int64)
  /// The compressed data is invalid (the library's words).
  case corrupt(CompressionFormat, detail: String)
  /// gzip: a member's CRC-32 or length does not match its data.
  case checkMismatch(CompressionFormat)
  /// xz: the stream's integrity check is of a kind liblzma does not support.
  case unsupportedCheck
  /// xz: filters or options liblzma does not support.
  case unsupportedOptions
  /// xz: decoding needs more memory than the limit.
  case memoryLimit(needed: UInt64, limit: UInt64)
  /// The output would pass `maxOutputBytes`.
  case outputLimit(Int64)
  /// The output would pass `maxRatio` times the input.
  case ratioLimit(Int64)
  /// zlib or liblzma could not allocate memory.
  case outOfMemory
  /// The input file could not be opened or read.
  case read(path: String, errno: Int32)
  /// The output file could not be created or written.
  case write(path: String, errno: Int32)
  /// The decompressor was used again after it failed (the sink's own error came first).
  case alreadyFailed

  package var description: String {
    switch self {
    case .empty(let format):
      return "the file is empty, not \(format.rawValue) data: the repository serves a broken file; try again later"
    case .notFormat(let format, let found):
      let actual = found.map { "it is \($0.rawValue) data" } ?? "it starts with neither gzip's nor xz's magic bytes"
      return "the file is not \(format.rawValue) data as its name says (\(actual)): the repository is broken or hostile"
    case .truncated(let format):
      return "the \(format.rawValue) data ends early (truncated): the file is incomplete; fetch it again"
    case .trailingGarbage(let format, let offset):
      return "bytes follow the end of the \(format.rawValue) data at offset \(offset) that are not another "
        + "\(format == .xz ? "stream" : "member") (trailing garbage): the file is broken or hostile"
    case .corrupt(let format, let detail):
      return "the \(format.rawValue) data is corrupt (\(detail.isEmpty ? "invalid data" : detail)): fetch it again"
    case .checkMismatch(let format):
      return "the \(format.rawValue) data's CRC does not match its contents (corrupt): fetch it again"
    case .unsupportedCheck:
      return "the xz data uses an integrity check liblzma does not support: the file is not a usable index"
    case .unsupportedOptions:
      return "the xz data uses filters or options liblzma does not support: the file is not a usable index"
    case .memoryLimit(let needed, let limit):
      return "the xz data needs \(Self.size(Int64(clamping: needed))) of memory to decompress, more than the "
        + "\(Self.size(Int64(clamping: limit))) limit: the file is not a usable index"
    case .outputLimit(let limit):
      return "the decompressed index passes \(Self.size(limit)): stopped there (a compression bomb or a broken index)"
    case .ratioLimit(let ratio):
      return "the decompressed index expands more than \(ratio) times its compressed size: stopped there "
        + "(a compression bomb)"
    case .outOfMemory:
      return "out of memory while decompressing"
    case .read(let path, let code):
      return "cannot read \(path): \(String(cString: strerror(code)))"
    case .write(let path, let code):
      return "cannot write \(path): \(String(cString: strerror(code)))"
    case .alreadyFailed:
      return "the decompression had already failed"
    }
  }

  /// `bytes` in GiB, MiB or KiB when it is a whole number of them, else in bytes.
  static func size(_ bytes: Int64) -> String {
    for (factor, unit) in [(Int64(1) << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
    where bytes >= factor && bytes % factor == 0 {
      return "\(bytes / factor) \(unit)"
    }
    return bytes == 1 ? "1 byte" : "\(bytes) bytes"
  }
}

/// Decompression of whole files and buffers, streaming: the output goes to a sink in chunks or to
/// a file, never held whole in memory.
package enum Decompression {
  /// The size of the chunks read from a file.
  static let readSize = 256 << 10

  /// Decompresses the file at `path` as `format`, giving the output to `sink` in chunks (each
  /// valid only during the call). The ratio is computed from the file's size. Throws a
  /// `DecompressionError`, or what `sink` throws.
  package static func decompress(
    file path: String, format: CompressionFormat, limits: DecompressionLimits = DecompressionLimits(),
    to sink: (UnsafeRawBufferPointer) throws -> Void
  ) throws -> DecompressionResult {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw DecompressionError.read(path: path, errno: errno) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw DecompressionError.read(path: path, errno: errno) }
    let decompressor = try StreamingDecompressor(format: format, limits: limits, inputSize: Int64(info.st_size))
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readSize, alignment: 16)
    defer { buffer.deallocate() }
    while true {
      let count = SystemCalls.readRetrying(fd, into: buffer)
      if count < 0 { throw DecompressionError.read(path: path, errno: errno) }
      if count == 0 { break }
      try decompressor.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), to: sink)
    }
    return try decompressor.finish(to: sink)
  }

  /// Decompresses the file at `path` as `format` into a new file at `output` (created or
  /// truncated, mode 0644, not followed when it is a symbolic link; not synced). On failure the
  /// output file is removed.
  package static func decompress(
    file path: String, format: CompressionFormat, limits: DecompressionLimits = DecompressionLimits(),
    toFile output: String
  ) throws -> DecompressionResult {
    let fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard fd >= 0 else { throw DecompressionError.write(path: output, errno: errno) }
    do {
      let result = try decompress(file: path, format: format, limits: limits) { chunk in
        guard SystemCalls.writeAll(fd, chunk) else { throw DecompressionError.write(path: output, errno: errno) }
      }
      guard close(fd) == 0 else {
        let code = errno
        unlink(output)
        throw DecompressionError.write(path: output, errno: code)
      }
      return result
    } catch {
      close(fd)
      unlink(output)
      throw error
    }
  }

  /// Decompresses `bytes` as `format`, giving the output to `sink` in chunks.
  package static func decompress(
    _ bytes: UnsafeRawBufferPointer, format: CompressionFormat, limits: DecompressionLimits = DecompressionLimits(),
    to sink: (UnsafeRawBufferPointer) throws -> Void
  ) throws -> DecompressionResult {
    let decompressor = try StreamingDecompressor(format: format, limits: limits, inputSize: Int64(bytes.count))
    try decompressor.feed(bytes, to: sink)
    return try decompressor.finish(to: sink)
  }

  /// Decompresses `bytes` as `format` into one array: for small documents and tests; the limits
  /// bound the array.
  package static func decompressed(
    _ bytes: [UInt8], format: CompressionFormat, limits: DecompressionLimits = DecompressionLimits()
  ) throws -> (bytes: [UInt8], result: DecompressionResult) {
    var output: [UInt8] = []
    let result = try bytes.withUnsafeBytes { input in
      try decompress(input, format: format, limits: limits) { output.append(contentsOf: $0) }
    }
    return (output, result)
  }
}
