import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLSupport
@testable import BatchDLTransfer

@Suite struct EngineToolTests {
  @Test func aRateBucketSpendsAndRefills() {
    let bucket = RateBucket(bytesPerSecond: 100_000)
    #expect(bucket.take(50_000))
    #expect(!bucket.take(1))
    bucket.refill(now: Engine.now() + 1000)
    #expect(bucket.hasBudget)
  }

  @Test func aMinHeapPopsInOrder() {
    var heap = MinHeap<Int>()
    for value in [5, 3, 9, 1, 7, 3] { heap.push(value) }
    var popped: [Int] = []
    while let value = heap.pop() { popped.append(value) }
    #expect(popped == [1, 3, 3, 5, 7, 9])
  }
}
