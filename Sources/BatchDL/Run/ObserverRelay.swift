import BatchDLSupport
import BatchDLTransfer
import Foundation

/// Hands the engine's calls to an observer on a thread of its own, in order, so that the engine's
/// thread goes back to the network at once while the observer places files, writes the state and
/// draws progress on another core.
///
/// The engine does not wake that thread for each call: a run of small files finishes thousands of
/// transfers a second, and a wake-up each (two context switches) cost the engine more than the
/// call itself. The thread takes what has gathered every few milliseconds, or at once when the
/// engine waits for it (`settle()`, or a full backlog).
///
/// The observer is only ever called on the relay's thread; `settle()` waits for it to catch up and
/// `stop()` ends the thread. The relay takes the observer as `sending` and `stop()` gives it back:
/// whoever made it cannot touch it while the relay's thread does.
final class ObserverRelay<Observer: TransferObserver & SendableMetatype>: TransferObserver, @unchecked Sendable {
  private let observer: Observer
  /// Guards everything below, and signals both ways: work for the thread, progress for the engine.
  private let condition = NSCondition()
  private var pending: [() -> Void] = []
  /// Calls handed over, and calls carried out, since the start.
  private var handedOver = 0
  private var done = 0
  /// Set when the engine waits: the thread takes the pending calls without pausing.
  private var urgent = false
  private var stopping = false
  private var running = true
  /// Calls handed over and not yet carried out: completions may carry a small file's body each,
  /// so the engine waits when the observer falls this far behind (a slow disk), and memory stays
  /// bounded.
  private static var backlog: Int { 256 }
  /// How long the thread lets calls gather before it takes them.
  private static var gathering: TimeInterval { 0.005 }

  init(_ observer: sending Observer) {
    self.observer = observer
    let thread = Thread { [self] in serve() }
    thread.name = "batchdl.run"
    thread.stackSize = 8 << 20
    thread.start()
  }

  private func serve() {
    var batch: [() -> Void] = []
    condition.lock()
    while true {
      if pending.isEmpty {
        if stopping { break }
        if !urgent { _ = condition.wait(until: Date(timeIntervalSinceNow: Self.gathering)) }
        urgent = false
        continue
      }
      swap(&batch, &pending)
      condition.unlock()
      for call in batch { call() }
      let count = batch.count
      batch.removeAll(keepingCapacity: true)
      condition.lock()
      done += count
      condition.broadcast()
    }
    running = false
    condition.broadcast()
    condition.unlock()
  }

  private func hand(_ call: @escaping () -> Void) {
    condition.lock()
    while handedOver - done >= Self.backlog {
      urgent = true
      condition.broadcast()
      condition.wait()
    }
    pending.append(call)
    handedOver += 1
    condition.unlock()
  }

  func transferReceivedResponse(_ job: Int, head: ResponseHead) {
    hand { self.observer.transferReceivedResponse(job, head: head) }
  }

  var wantsResponses: Bool { observer.wantsResponses }

  func transferBecameDownload(_ job: Int) {
    hand { self.observer.transferBecameDownload(job) }
  }

  func transferWillRetry(_ job: Int, after delay: Interval, failure: TransferFailure) {
    hand { self.observer.transferWillRetry(job, after: delay, failure: failure) }
  }

  func transferSourceFailed(_ job: Int, url: String, failure: TransferFailure) {
    hand { self.observer.transferSourceFailed(job, url: url, failure: failure) }
  }

  func transferSegmentStarted(_ job: Int, start: Int64, length: Int64, url: String) {
    hand { self.observer.transferSegmentStarted(job, start: start, length: length, url: url) }
  }

  func transferPiecesFailed(_ job: Int, pieces: [Int], urls: [String], message: String) {
    hand { self.observer.transferPiecesFailed(job, pieces: pieces, urls: urls, message: message) }
  }

  func transferCompleted(
    _ job: Int, outcome: Result<TransferResult, TransferFailure>, spent: Int64, started: UInt64?, ended: UInt64
  ) {
    hand { self.observer.transferCompleted(job, outcome: outcome, spent: spent, started: started, ended: ended) }
  }

  func transferTick(active: [ActiveTransfer]) {
    hand { self.observer.transferTick(active: active) }
  }

  func transferCheckpoints(_ checkpoints: [TransferCheckpoint]) {
    hand { self.observer.transferCheckpoints(checkpoints) }
  }

  /// Returns once every call handed over so far has been carried out.
  func settle() {
    condition.lock()
    let target = handedOver
    while done < target && running {
      urgent = true
      condition.broadcast()
      condition.wait()
    }
    condition.unlock()
  }

  /// Carries out what is pending, ends the thread, and gives the observer back. No call may follow.
  @discardableResult
  consuming func stop() -> sending Observer {
    condition.lock()
    stopping = true
    urgent = true
    condition.broadcast()
    while running { condition.wait() }
    condition.unlock()
    return observer
  }
}
