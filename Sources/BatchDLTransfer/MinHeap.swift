/// A binary min-heap: the engine's timers and admission queues. It lives in the engine's module so
/// that the optimizer specializes it for them: from BatchDLSupport, even `@inlinable`, the release
/// build called its generic `push` and `pop` (about 6,500 instructions a call, twice a file, in
/// bench/callgrind).
package struct MinHeap<Element: Comparable> {
  package var items: [Element] = []

  package var isEmpty: Bool { items.isEmpty }
  package var count: Int { items.count }
  package var peek: Element? { items.first }

  package init() {}

  package mutating func push(_ element: Element) {
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

  package mutating func pop() -> Element? {
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
