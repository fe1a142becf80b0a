import CCompression
import Crypto

/// gzip or xz data decompressed as its bytes arrive, bounded, with the SHA-256 of both sides.
///
/// zlib and liblzma decode; this reads what lies between their members: gzip members that follow
/// one another are read as one file, as `gzip -d` does (an index is one member, but a server's
/// `.gz` may be made by `cat`); so are xz streams, with the null padding (a multiple of four
/// bytes) the xz format allows between and after them, as `xz -d` does. Any other byte after the
/// last member — zeros after gzip data included, which `gzip -d` only warns about — is trailing
/// garbage and fails. A `.xz` without an integrity check (`--check=none`) is accepted, as xz does:
/// the Release file pins the compressed file's digest anyway.
///
/// Bounded: output is made at most one byte past what the limits allow; the sink gets the output
/// up to the limit exactly, then the error. The ratio is taken against `inputSize` (the whole
/// input's size, when known) or against the bytes read so far. Not thread-safe; after it throws it
/// must not be used again (it throws `alreadyFailed`).
package final class StreamingDecompressor {
  package let format: CompressionFormat
  package let limits: DecompressionLimits
  private let inputSize: Int64?
  private let decoder: OpaquePointer?
  private let output: UnsafeMutableRawBufferPointer
  private var inputHasher = SHA256()
  private var outputHasher = SHA256()
  /// Bytes fed so far (all of them: garbage and padding too).
  private var inputBytes: Int64 = 0
  /// Bytes handed to the decoder so far (what the ratio counts when `inputSize` is unknown).
  private var decodedInput: Int64 = 0
  private var outputBytes: Int64 = 0
  private var members = 0
  /// Whether a member or stream is being decoded (false before the first and between them).
  private var inMember = false
  /// The next member's first bytes while its magic is not all there, and where they started.
  private var heldMagic: [UInt8] = []
  private var heldStart: Int64 = 0
  /// Null bytes after the last xz stream, not yet followed by another.
  private var padding: Int64 = 0
  private var failed = false

  /// The size of the output chunks given to the sink.
  static let chunkSize = 256 << 10

  /// A decompressor of `format`; `inputSize` is the whole input's size when known.
  package init(
    format: CompressionFormat, limits: DecompressionLimits = DecompressionLimits(), inputSize: Int64? = nil
  )
    throws
  {
    self.format = format
    self.limits = limits
    self.inputSize = inputSize
    switch format {
    case .uncompressed: decoder = nil
    case .gzip, .xz:
      let kind = format == .gzip ? Int32(CCOMPRESSION_GZIP) : Int32(CCOMPRESSION_XZ)
      guard let made = ccompression_new(kind, limits.xzMemoryLimit) else { throw DecompressionError.outOfMemory }
      decoder = made
    }
    output = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
  }

  deinit {
    ccompression_free(decoder)
    output.deallocate()
  }

  /// Decompresses the next bytes of the input, giving what they make to `sink`.
  package func feed(_ bytes: UnsafeRawBufferPointer, to sink: (UnsafeRawBufferPointer) throws -> Void) throws {
    try guarded {
      inputHasher.update(bufferPointer: bytes)
      let start = inputBytes
      inputBytes += Int64(bytes.count)
      if format == .uncompressed {
        try emit(bytes, sink: sink)
      } else {
        try run(bytes, at: start, final: false, sink: sink)
      }
    }
  }

  /// Ends the input: fails when it stopped inside a member, and returns the sizes and digests.
  package func finish(to sink: (UnsafeRawBufferPointer) throws -> Void) throws -> DecompressionResult {
    try guarded {
      if format != .uncompressed {
        try run(UnsafeRawBufferPointer(start: nil, count: 0), at: inputBytes, final: true, sink: sink)
      }
    }
    return DecompressionResult(
      format: format, inputBytes: inputBytes, outputBytes: outputBytes,
      inputSHA256: Self.hex(inputHasher.finalize()), outputSHA256: Self.hex(outputHasher.finalize()),
      members: members)
  }

  private func guarded(_ body: () throws -> Void) throws {
    if failed { throw DecompressionError.alreadyFailed }
    do {
      try body()
    } catch {
      failed = true
      throw error
    }
  }

  /// Reads `bytes` (which start at `start` in the input): magic and padding between members
  /// here, members themselves by the decoder.
  private func run(
    _ bytes: UnsafeRawBufferPointer, at start: Int64, final: Bool, sink: (UnsafeRawBufferPointer) throws -> Void
  ) throws {
    var offset = 0
    while true {
      if !inMember {
        let magic = format.magic
        while heldMagic.count < magic.count && offset < bytes.count {
          let byte = bytes[offset]
          if heldMagic.isEmpty && format == .xz && members > 0 && byte == 0 {
            padding += 1
            offset += 1
            continue
          }
          if heldMagic.isEmpty { heldStart = start + Int64(offset) }
          heldMagic.append(byte)
          offset += 1
          if byte != magic[heldMagic.count - 1] {
            throw misplaced(heldMagic + Array(bytes[offset..<min(bytes.count, offset + 8)]))
          }
        }
        if heldMagic.count < magic.count {
          guard final else { return }
          if members == 0 {
            throw heldMagic.isEmpty ? DecompressionError.empty(format) : DecompressionError.truncated(format)
          }
          if !heldMagic.isEmpty || padding % 4 != 0 {
            throw DecompressionError.trailingGarbage(format, offset: heldMagic.isEmpty ? start - padding : heldStart)
          }
          return
        }
        if padding % 4 != 0 { throw DecompressionError.trailingGarbage(format, offset: heldStart - padding) }
        padding = 0
        if members > 0 { try check(ccompression_reset(decoder)) }
        inMember = true
        let held = heldMagic
        heldMagic = []
        let ended = try held.withUnsafeBytes { try decode($0, final: false, sink: sink).ended }
        if ended { throw DecompressionError.truncated(format) }
      }
      let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
      let (used, ended) = try decode(rest, final: final, sink: sink)
      offset += used
      guard ended else { return }
      members += 1
      inMember = false
    }
  }

  /// The error for bytes where a member's magic should be: not the format at the start, trailing
  /// garbage after a member.
  private func misplaced(_ head: [UInt8]) -> DecompressionError {
    if members == 0 { return .notFormat(format, found: CompressionFormat.recognized(head)) }
    return .trailingGarbage(format, offset: heldStart)
  }

  /// Decodes from `bytes` until they are all used or the member ends: the bytes used, and
  /// whether it ended.
  private func decode(
    _ bytes: UnsafeRawBufferPointer, final: Bool, sink: (UnsafeRawBufferPointer) throws -> Void
  ) throws -> (used: Int, ended: Bool) {
    let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
    let out = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
    var used = 0
    while true {
      // One byte past the allowance, so that a passing output is seen, never given.
      let allowance = max(0, cap() - outputBytes)
      let room = Int(min(Int64(output.count), allowance + 1))
      var inUsed = 0
      var made = 0
      let status = ccompression_step(
        decoder, base.map { $0 + used }, bytes.count - used, &inUsed, out, room, &made, final ? 1 : 0)
      used += inUsed
      decodedInput += Int64(inUsed)
      if made > 0 { try emit(UnsafeRawBufferPointer(rebasing: output[0..<made]), sink: sink) }
      if status == Int32(CCOMPRESSION_END) { return (used, true) }
      try check(status)
      if inUsed == 0 && made == 0 {
        if used == bytes.count {
          if final { throw DecompressionError.truncated(format) }
          return (used, false)
        }
        throw DecompressionError.corrupt(format, detail: "the decoder made no progress")
      }
      if used == bytes.count && made < room && !final { return (used, false) }
    }
  }

  /// Throws the error a decoder's status other than OK and END stands for.
  private func check(_ status: Int32) throws {
    let message = decoder.map { String(cString: ccompression_message($0)) } ?? ""
    switch status {
    case Int32(CCOMPRESSION_OK), Int32(CCOMPRESSION_END): return
    case Int32(CCOMPRESSION_CHECK_MISMATCH): throw DecompressionError.checkMismatch(format)
    case Int32(CCOMPRESSION_UNSUPPORTED_CHECK): throw DecompressionError.unsupportedCheck
    case Int32(CCOMPRESSION_UNSUPPORTED_OPTIONS): throw DecompressionError.unsupportedOptions
    case Int32(CCOMPRESSION_MEMORY_LIMIT):
      throw DecompressionError.memoryLimit(
        needed: decoder.map { ccompression_memory_needed($0) } ?? 0, limit: limits.xzMemoryLimit)
    case Int32(CCOMPRESSION_TRUNCATED): throw DecompressionError.truncated(format)
    case Int32(CCOMPRESSION_NO_MEMORY): throw DecompressionError.outOfMemory
    case Int32(CCOMPRESSION_NOT_FORMAT):
      throw members == 0
        ? DecompressionError.notFormat(format, found: nil)
        : DecompressionError.trailingGarbage(format, offset: heldStart)
    default: throw DecompressionError.corrupt(format, detail: message)
    }
  }

  /// The most output allowed now: the smaller of the size limit and the ratio's cap.
  private func cap() -> Int64 {
    let basis = max(inputSize ?? 0, format == .uncompressed ? inputBytes : decodedInput)
    return min(limits.maxOutputBytes, format == .uncompressed ? Int64.max : limits.ratioCap(inputBytes: basis))
  }

  /// Gives `chunk` to the sink; when it would pass a limit, gives only what fits and fails.
  private func emit(_ chunk: UnsafeRawBufferPointer, sink: (UnsafeRawBufferPointer) throws -> Void) throws {
    let allowed = cap()
    let fits = Int(min(Int64(chunk.count), max(0, allowed - outputBytes)))
    if fits > 0 {
      let part = UnsafeRawBufferPointer(rebasing: chunk[0..<fits])
      outputHasher.update(bufferPointer: part)
      try sink(part)
      outputBytes += Int64(fits)
    }
    if fits < chunk.count {
      if allowed == limits.maxOutputBytes { throw DecompressionError.outputLimit(limits.maxOutputBytes) }
      throw DecompressionError.ratioLimit(limits.maxRatio)
    }
  }

  private static func hex(_ digest: SHA256.Digest) -> String {
    digest.withUnsafeBytes { hexDigits($0) }
  }
}
