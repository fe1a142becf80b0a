/// A binary min-heap. Inlinable: the engine's queues (another module) use it per admitted job, and
/// unspecialized its comparisons and swaps went through generic witnesses (bench/callgrind).
package struct MinHeap<Element: Comparable> {
  @usableFromInline package var items: [Element] = []

  @inlinable package var isEmpty: Bool { items.isEmpty }
  @inlinable package var count: Int { items.count }
  @inlinable package var peek: Element? { items.first }

  @inlinable package init() {}

  @inlinable package mutating func push(_ element: Element) {
    items.append(element)
    var child = items.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      if items[child] < items[parent] {
        items.swapAt(child, parent)
        child = parent
      } else {
        break
      }
    }
  }

  @inlinable package mutating func pop() -> Element? {
    guard !items.isEmpty else { return nil }
    items.swapAt(0, items.count - 1)
    let top = items.removeLast()
    var parent = 0
    while true {
      let left = parent * 2 + 1
      let right = left + 1
      var smallest = parent
      if left < items.count && items[left] < items[smallest] { smallest = left }
      if right < items.count && items[right] < items[smallest] { smallest = right }
      if smallest == parent { break }
      items.swapAt(parent, smallest)
      parent = smallest
    }
    return top
  }
}
