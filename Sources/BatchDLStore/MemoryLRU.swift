/// The memory tier: entries in least-recently-used order (a doubly linked list over an array),
/// bounded by the sum of their sizes.
package struct MemoryLRU {
  private struct Node {
    var key: String
    var entry: CacheEntry
    var older: Int
    var newer: Int
  }

  package let capacity: Int64
  package private(set) var bytes: Int64 = 0
  private var nodes: [Node?] = []
  private var free: [Int] = []
  private var slots: [String: Int] = [:]
  private var oldest = -1
  private var newest = -1

  package init(capacity: Int64) {
    self.capacity = capacity
  }

  package var count: Int { slots.count }
  package var keys: [String] { Array(slots.keys) }

  /// The entry of `key`, without changing the order.
  package func peek(_ key: String) -> CacheEntry? {
    slots[key].flatMap { nodes[$0]?.entry }
  }

  /// Makes `key` the most recently used.
  package mutating func touch(_ key: String) {
    guard let slot = slots[key] else { return }
    detach(slot)
    attachNewest(slot)
  }

  /// Adds or replaces the entry of `key` as the most recently used, evicting the least recently
  /// used ones to make room; an entry larger than the capacity is not kept.
  package mutating func insert(_ key: String, _ entry: CacheEntry) {
    remove(key)
    guard capacity > 0, entry.size <= capacity else { return }
    while bytes + entry.size > capacity, oldest >= 0, let node = nodes[oldest] { remove(node.key) }
    let slot: Int
    if let reused = free.popLast() {
      slot = reused
    } else {
      slot = nodes.count
      nodes.append(nil)
    }
    nodes[slot] = Node(key: key, entry: entry, older: -1, newer: -1)
    slots[key] = slot
    bytes += entry.size
    attachNewest(slot)
  }

  package mutating func remove(_ key: String) {
    guard let slot = slots.removeValue(forKey: key), let node = nodes[slot] else { return }
    detach(slot)
    bytes -= node.entry.size
    nodes[slot] = nil
    free.append(slot)
  }

  package mutating func removeAll() {
    self = MemoryLRU(capacity: capacity)
  }

  private mutating func detach(_ slot: Int) {
    guard let node = nodes[slot] else { return }
    if node.older >= 0 { nodes[node.older]?.newer = node.newer } else { oldest = node.newer }
    if node.newer >= 0 { nodes[node.newer]?.older = node.older } else { newest = node.older }
    nodes[slot]?.older = -1
    nodes[slot]?.newer = -1
  }

  private mutating func attachNewest(_ slot: Int) {
    nodes[slot]?.older = newest
    nodes[slot]?.newer = -1
    if newest >= 0 { nodes[newest]?.newer = slot } else { oldest = slot }
    newest = slot
  }
}
