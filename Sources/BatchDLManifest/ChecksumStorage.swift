import BatchDLSupport

/// The names of a checksum file, each once, one after the other in one buffer, found by their
/// bytes (NFC and NFD spellings are two names) through an open-addressing table.
struct NameArena {
  private(set) var bytes: [UInt8] = []
  /// Where each name ends in `bytes`; it starts where the one before ends.
  private var ends: [Int32] = []
  private var table = SlotTable()

  var count: Int { ends.count }

  func range(of id: Int32) -> Range<Int> {
    let index = Int(id)
    return (index == 0 ? 0 : Int(ends[index - 1]))..<Int(ends[index])
  }

  func string(_ id: Int32) -> String {
    String(decoding: bytes[range(of: id)], as: UTF8.self)
  }

  func find(_ name: [UInt8]) -> Int32? {
    let hash = name.withUnsafeBytes { Self.hash($0) }
    return table.find(hash: hash) { bytes[range(of: $0)].elementsEqual(name) }
  }

  mutating func insert(_ name: [UInt8]) -> (id: Int32, inserted: Bool) {
    let hash = name.withUnsafeBytes { Self.hash($0) }
    if let id = table.find(hash: hash, matches: { bytes[range(of: $0)].elementsEqual(name) }) {
      return (id, false)
    }
    let id = Int32(ends.count)
    bytes.append(contentsOf: name)
    ends.append(Int32(bytes.count))
    table.insert(id, hash: hash) { [bytes, ends] other in
      let index = Int(other)
      let range = (index == 0 ? 0 : Int(ends[index - 1]))..<Int(ends[index])
      return bytes[range].withUnsafeBytes { Self.hash($0) }
    }
    return (id, true)
  }

  /// SipHash with the process's random seed: the names come from the network, and a hash that
  /// could be predicted would let a document put them all in one chain of the table.
  static func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
    var hasher = Hasher()
    hasher.combine(bytes: bytes)
    return hasher.finalize()
  }
}

/// An open-addressing set of `Int32` indices into storage the caller owns (as the planner's
/// `IndexTable`): 4 bytes a slot. The caller supplies the hash of what it looks for and a test
/// that an index holds it.
struct SlotTable {
  private var slots = [Int32](repeating: -1, count: 16)
  private var count = 0

  func find(hash: Int, matches: (Int32) -> Bool) -> Int32? {
    let mask = slots.count - 1
    var slot = hash & mask
    while true {
      let value = slots[slot]
      if value < 0 { return nil }
      if matches(value) { return value }
      slot = (slot + 1) & mask
    }
  }

  /// Stores `value` under `hash` (the caller has checked that it is not there); `rehash` gives the
  /// hash of a stored value when the table grows.
  mutating func insert(_ value: Int32, hash: Int, rehash: (Int32) -> Int) {
    if (count + 1) * 2 > slots.count {
      let old = slots
      slots = [Int32](repeating: -1, count: old.count * 2)
      for stored in old where stored >= 0 { place(stored, hash: rehash(stored)) }
    }
    place(value, hash: hash)
    count += 1
  }

  private mutating func place(_ value: Int32, hash: Int) {
    let mask = slots.count - 1
    var slot = hash & mask
    while slots[slot] >= 0 { slot = (slot + 1) & mask }
    slots[slot] = value
  }
}

/// Where a line of parsed text is in the file the user has: the same line, or for the text of a
/// clear-signed message, the line after its armor headers (two columns further for a dash-escaped
/// line).
package struct LineMap: Sendable {
  /// Lines of the original before the signed text's first line.
  package var offset = 0
  /// Original lines (0-based) that are dash-escaped.
  package var dashEscaped: Set<Int> = []

  package static let identity = LineMap()

  package init() {}

  /// The map for the text of the first clear-signed message of `original`.
  package init(clearSigned original: [UInt8]) {
    guard let begin = ChecksumFile.clearSignedLine(original) else { return }
    // Armor headers (`Hash: SHA256`) follow the BEGIN line up to the first empty one.
    var line = 1
    var start = 0
    var bodyStart: Int?
    while start <= original.count {
      let end = original[start...].firstIndex(of: 0x0A) ?? original.count
      if line > begin {
        let text = original[start..<end]
        if let first = bodyStart {
          if text.starts(with: Array("-----BEGIN PGP SIGNATURE-----".utf8)) { break }
          if text.starts(with: [0x2D, 0x20]) { dashEscaped.insert(line - first) }
        } else if text.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) {
          bodyStart = line + 1
          offset = line
        }
      }
      line += 1
      start = end + 1
    }
  }

  /// The original's line and column shift of line `line` (1-based) of the text.
  package func place(_ line: Int) -> (line: Int, shift: Int) {
    (line + offset, dashEscaped.contains(line - 1) ? 2 : 0)
  }
}
