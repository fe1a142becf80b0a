#if canImport(Glibc)
  import Glibc
#endif

/// A reference to text stored in a `TextArena`.
public struct TextRef: Hashable, Sendable {
  package let chunk: UInt32
  package let offset: UInt32
  package let length: UInt32

  /// No text (an absent optional value).
  public static let none = TextRef(chunk: .max, offset: 0, length: 0)

  public var isNone: Bool { chunk == .max }
}

/// Append-only UTF-8 storage for the many short strings of a large plan (URLs and destinations of
/// a million-line `list:`), without a heap object per string. Chunks never move once written, so
/// growth never copies what is already stored.
public struct TextArena: Sendable {
  private static let chunkSize = 1 << 22
  private var chunks: [[UInt8]] = []

  public init() {}

  /// Stores `text` and returns its reference.
  public mutating func append(_ text: String) -> TextRef {
    var text = text
    return text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
  }

  /// Stores `bytes` (UTF-8) and returns its reference.
  public mutating func append(_ bytes: UnsafeRawBufferPointer) -> TextRef {
    let index = chunkWithRoom(for: bytes.count)
    let offset = chunks[index].count
    chunks[index].append(contentsOf: bytes)
    return TextRef(chunk: UInt32(index), offset: UInt32(offset), length: UInt32(bytes.count))
  }

  /// Stores `first` followed by `second` as one text (a folder and a file name, without joining
  /// them in a String first).
  public mutating func append(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> TextRef {
    let count = first.count + second.count
    let index = chunkWithRoom(for: count)
    let offset = chunks[index].count
    chunks[index].append(contentsOf: first)
    chunks[index].append(contentsOf: second)
    return TextRef(chunk: UInt32(index), offset: UInt32(offset), length: UInt32(count))
  }

  /// The chunk that `count` more bytes go to: the last one, or a new one when they do not fit.
  private mutating func chunkWithRoom(for count: Int) -> Int {
    if chunks.isEmpty || chunks[chunks.count - 1].count + count > max(Self.chunkSize, chunks[chunks.count - 1].capacity)
    {
      var chunk: [UInt8] = []
      chunk.reserveCapacity(max(Self.chunkSize, count))
      chunks.append(chunk)
    }
    return chunks.count - 1
  }

  /// The text `ref` names; "" for `.none`.
  public func string(_ ref: TextRef) -> String {
    guard !ref.isNone else { return "" }
    return chunks[Int(ref.chunk)].withUnsafeBufferPointer { buffer in
      String(
        decoding: UnsafeBufferPointer(rebasing: buffer[Int(ref.offset)..<Int(ref.offset + ref.length)]), as: UTF8.self)
    }
  }

  /// The text `ref` names, or nil for `.none`.
  public func optionalString(_ ref: TextRef) -> String? {
    ref.isNone ? nil : string(ref)
  }

  /// Whether the stored text equals `text`, without making a String.
  public func equals(_ ref: TextRef, _ text: UnsafeRawBufferPointer) -> Bool {
    guard !ref.isNone, Int(ref.length) == text.count else { return false }
    return chunks[Int(ref.chunk)].withUnsafeBytes { buffer in
      memcmpEqual(buffer.baseAddress.map { $0 + Int(ref.offset) }, text.baseAddress, text.count)
    }
  }

  /// Calls `body` with the stored bytes of `ref` (empty for `.none`).
  public func withBytes<R>(_ ref: TextRef, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    guard !ref.isNone else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
    return chunks[Int(ref.chunk)].withUnsafeBytes { buffer in
      body(UnsafeRawBufferPointer(rebasing: buffer[Int(ref.offset)..<Int(ref.offset + ref.length)]))
    }
  }

  /// Whether two references hold the same text.
  public func equals(_ a: TextRef, _ b: TextRef) -> Bool {
    if a == b { return true }
    if a.isNone || b.isNone || a.length != b.length { return false }
    return withBytes(a) { equals(b, $0) }
  }

  /// Whether the stored text equals `text`.
  public func equals(_ ref: TextRef, _ text: String) -> Bool {
    var text = text
    return text.withUTF8 { equals(ref, UnsafeRawBufferPointer($0)) }
  }

  /// A 64-bit FNV-1a hash of the stored bytes.
  public func hash(_ ref: TextRef) -> UInt64 {
    guard !ref.isNone else { return 0 }
    return chunks[Int(ref.chunk)].withUnsafeBytes { buffer in
      Self.hash(UnsafeRawBufferPointer(rebasing: buffer[Int(ref.offset)..<Int(ref.offset + ref.length)]))
    }
  }

  public static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    var value: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
      value = (value ^ UInt64(byte)) &* 0x100_0000_01b3
    }
    return value
  }
}

/// Whether two byte buffers hold the same bytes.
package func bytesEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
  a.count == b.count && memcmpEqual(a.baseAddress, b.baseAddress, a.count)
}

private func memcmpEqual(_ a: UnsafeRawPointer?, _ b: UnsafeRawPointer?, _ count: Int) -> Bool {
  guard count > 0 else { return true }
  guard let a, let b else { return false }
  return memcmp(a, b, count) == 0
}
