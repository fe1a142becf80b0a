import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLSupport
@testable import BatchDLTransfer

@Suite struct ObserverRelayTests {
  /// Records the calls it gets, and on which thread.
  final class Recorder: TransferObserver, @unchecked Sendable {
    let lock = NSLock()
    var calls: [Int] = []
    var threads: Set<pthread_t> = []
    var delay: UInt32 = 0

    func note(_ job: Int) {
      if delay > 0 { usleep(delay) }
      lock.lock()
      calls.append(job)
      threads.insert(pthread_self())
      lock.unlock()
    }
    var snapshot: [Int] {
      lock.lock()
      defer { lock.unlock() }
      return calls
    }
    func transferReceivedResponse(_ job: Int, head: ResponseHead) { note(job) }
    func transferBecameDownload(_ job: Int) { note(job) }
    func transferWillRetry(_ job: Int, after delay: Interval, failure: TransferFailure) { note(job) }
    func transferCompleted(
      _ job: Int, outcome: Result<TransferResult, TransferFailure>, spent: Int64, started: UInt64?, ended: UInt64
    ) { note(job) }
    func transferTick(active: [ActiveTransfer]) { note(-1) }
    func transferCheckpoints(_ checkpoints: [TransferCheckpoint]) { note(-2) }
    func settle() {}
  }

  @Test func callsArriveInOrderOnTheRelaysThreadAndSettleWaitsForThem() {
    let recorder = Recorder()
    recorder.delay = 200
    let relay = ObserverRelay(recorder)
    let failure = TransferFailure(code: .internal, message: "y")
    for job in 0..<600 {
      // More than the backlog: the engine's side waits for the relay instead of piling up.
      relay.transferCompleted(job, outcome: .failure(failure), spent: 0, started: nil, ended: 0)
    }
    relay.transferTick(active: [])
    relay.settle()
    #expect(recorder.snapshot == Array(0..<600) + [-1])
    // One thread, not the caller's.
    #expect(recorder.threads.count == 1 && !recorder.threads.contains(pthread_self()))
    relay.stop()
  }

  @Test func stopCarriesOutWhatIsPendingFirst() {
    let recorder = Recorder()
    let relay = ObserverRelay(recorder)
    for job in 0..<50 { relay.transferBecameDownload(job) }
    relay.stop()
    #expect(recorder.snapshot == Array(0..<50))
  }

  @Test func aCallIsCarriedOutWithoutAnyoneWaitingForIt() async throws {
    let recorder = Recorder()
    let relay = ObserverRelay(recorder)
    relay.transferBecameDownload(7)
    // Nobody settles: the relay's thread takes it on its own within a few milliseconds.
    for _ in 0..<200 where recorder.snapshot.isEmpty { try await Task.sleep(nanoseconds: 5_000_000) }
    #expect(recorder.snapshot == [7])
    relay.stop()
  }
}
