import Dispatch

/// Hands the engine's calls to an observer on a serial queue of its own, in order, so that the
/// engine's thread goes back to the network at once while the observer places files, writes the
/// state and draws progress on another core.
///
/// The observer is only ever called on the relay's queue; `settle()` waits for it to catch up.
final class ObserverRelay: TransferObserver, @unchecked Sendable {
  private let observer: TransferObserver
  private let queue = DispatchQueue(label: "batchdl.run")
  /// Completions handed over and not yet taken: each may carry a small file's body, so the engine
  /// waits when the observer falls this far behind (a slow disk), and memory stays bounded.
  private let backlog = DispatchSemaphore(value: 256)

  init(_ observer: TransferObserver) {
    self.observer = observer
  }

  func transferReceivedResponse(_ job: Int, head: ResponseHead) {
    queue.async { self.observer.transferReceivedResponse(job, head: head) }
  }

  func transferBecameDownload(_ job: Int) {
    queue.async { self.observer.transferBecameDownload(job) }
  }

  func transferWillRetry(_ job: Int, after delay: Interval, failure: TransferFailure) {
    queue.async { self.observer.transferWillRetry(job, after: delay, failure: failure) }
  }

  func transferCompleted(_ job: Int, outcome: Result<TransferResult, TransferFailure>, spent: Int64) {
    backlog.wait()
    queue.async {
      self.observer.transferCompleted(job, outcome: outcome, spent: spent)
      self.backlog.signal()
    }
  }

  func transferTick(active: [ActiveTransfer]) {
    queue.async { self.observer.transferTick(active: active) }
  }

  func transferCheckpoints(_ checkpoints: [TransferCheckpoint]) {
    queue.async { self.observer.transferCheckpoints(checkpoints) }
  }

  func settle() {
    queue.sync {}
  }
}
