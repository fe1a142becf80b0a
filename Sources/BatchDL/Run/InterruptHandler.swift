import Dispatch
import Foundation

/// SIGINT and SIGTERM: the first stops the run after checkpointing (exit 3); a second exits at once,
/// leaving the committed checkpoints valid. Its messages go above the progress bars (and the second
/// erases them), so that the terminal is left with whole lines and the prompt on a line of its own.
final class InterruptHandler: @unchecked Sendable {
  private var sources: [DispatchSourceSignal] = []
  private let lock = NSLock()
  private var count = 0
  private var action: (@Sendable () -> Void)?
  private let first: @Sendable () -> Void
  private let area: LiveArea

  /// What to do on the first signal, besides `first` (set once the engine exists).
  var onInterrupt: (@Sendable () -> Void)? {
    get {
      lock.lock()
      defer { lock.unlock() }
      return action
    }
    set {
      lock.lock()
      action = newValue
      lock.unlock()
    }
  }

  init(area: LiveArea, first: @escaping @Sendable () -> Void) {
    self.area = area
    self.first = first
    for number in [SIGINT, SIGTERM] {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { [weak self] in self?.received(number) }
      source.resume()
      sources.append(source)
    }
  }

  deinit {
    for source in sources { source.cancel() }
    signal(SIGINT, SIG_DFL)
    signal(SIGTERM, SIG_DFL)
  }

  private func received(_ number: Int32) {
    lock.lock()
    count += 1
    let seen = count
    let action = self.action
    lock.unlock()
    if seen > 1 {
      area.clear(above: ["batchdl: stopped at once; committed checkpoints stay valid"], close: true)
      _exit(ExitStatus.interrupted.rawValue)
    }
    area.print(["batchdl: stopping after checkpoints (press Ctrl-C again to stop at once)"])
    first()
    action?()
  }
}
