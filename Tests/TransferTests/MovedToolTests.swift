import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLSupport
@testable import BatchDLTransfer

@Suite struct MovedToolTests {
  @Test func aMinHeapSortsLikeSortedAndReportsItsSize() {
    var heap = MinHeap<Int>()
    #expect(heap.isEmpty && heap.peek == nil && heap.pop() == nil)
    var generator = SystemRandomNumberGenerator()
    let values = (0..<500).map { _ in Int.random(in: -50...50, using: &generator) }
    for value in values { heap.push(value) }
    #expect(heap.count == values.count)
    #expect(heap.peek == values.min())
    var popped: [Int] = []
    while let value = heap.pop() { popped.append(value) }
    #expect(popped == values.sorted())
    #expect(heap.isEmpty)
  }

  @Test func aRateBucketHoldsAtMostItsBurst() {
    let bucket = RateBucket(bytesPerSecond: 1_000_000)
    // A refill in the future: the takes below (at the real time, earlier) add nothing.
    bucket.refill(now: Engine.now() + 3_600_000)
    #expect(bucket.take(100_000))
    #expect(!bucket.hasBudget)
    #expect(!bucket.take(1))
  }

  @Test func aSlowBucketStillLetsSixteenKiBThrough() {
    let bucket = RateBucket(bytesPerSecond: 10)
    bucket.refill(now: Engine.now() + 3_600_000)
    #expect(bucket.take(16 * 1024 - 1))
    #expect(bucket.hasBudget)
    #expect(bucket.take(1))
    #expect(!bucket.hasBudget)
  }

  @Test func aFlagSetOnAnotherThreadIsSeen() {
    let flag = AtomicFlag()
    #expect(!flag.isSet)
    DispatchQueue.global().sync { flag.set() }
    #expect(flag.isSet)
  }
}
