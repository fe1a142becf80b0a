/// An open-addressing hash set of `Int32` indices into an array the caller owns, for the planner's
/// million-entry lookups: 4 bytes a slot, where a `Dictionary` of keys would copy every key.
///
/// The caller supplies the hash of what it looks for and a test that an index holds it.
package struct IndexTable {
  private var slots: [Int32]
  private var mask: Int
  package private(set) var count = 0

  package init(capacity: Int = 16) {
    var size = 16
    while size < capacity * 2 { size <<= 1 }
    slots = [Int32](repeating: -1, count: size)
    mask = size - 1
  }

  /// The index stored for `hash` that `matches`, if any.
  package func find(hash: UInt64, matches: (Int32) -> Bool) -> Int32? {
    var slot = Int(truncatingIfNeeded: hash) & mask
    while true {
      let value = slots[slot]
      if value < 0 { return nil }
      if matches(value) { return value }
      slot = (slot + 1) & mask
    }
  }

  /// Stores `index` under `hash` (the caller has checked that it is not there); `rehash` gives the
  /// hash of a stored index when the table grows.
  package mutating func insert(_ index: Int32, hash: UInt64, rehash: (Int32) -> UInt64) {
    if (count + 1) * 2 > slots.count { grow(rehash: rehash) }
    var slot = Int(truncatingIfNeeded: hash) & mask
    while slots[slot] >= 0 { slot = (slot + 1) & mask }
    slots[slot] = index
    count += 1
  }

  /// Makes room for `capacity` entries in all.
  package mutating func reserve(_ capacity: Int, rehash: (Int32) -> UInt64) {
    while capacity * 2 > slots.count { grow(rehash: rehash) }
  }

  private mutating func grow(rehash: (Int32) -> UInt64) {
    let old = slots
    slots = [Int32](repeating: -1, count: old.count * 2)
    mask = slots.count - 1
    for value in old where value >= 0 {
      var slot = Int(truncatingIfNeeded: rehash(value)) & mask
      while slots[slot] >= 0 { slot = (slot + 1) & mask }
      slots[slot] = value
    }
  }
}
