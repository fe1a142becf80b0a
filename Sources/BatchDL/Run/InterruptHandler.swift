import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The write end of the pipe the signal handler writes the signal's number to. A global: a C
/// signal handler captures nothing. -1 while no handler is installed.
private nonisolated(unsafe) var interruptPipe: Int32 = -1

/// SIGINT and SIGTERM: the first stops the run after checkpointing (exit 3); a second exits at once,
/// leaving the committed checkpoints valid. Its messages go above the progress bars (and the second
/// erases them), so that the terminal is left with whole lines and the prompt on a line of its own.
///
/// The handler only writes the signal's number to a pipe (`write` is async-signal-safe); a thread
/// of its own reads it and acts. Not a Dispatch signal source: that starts libdispatch's event
/// thread, which asks for a higher priority than an unprivileged process may take, and libdispatch
/// then logs "Failed to set thread priority for worker thread" to the journal on every run of a
/// systemd service.
final class InterruptHandler: @unchecked Sendable {
  private let lock = NSLock()
  private var count = 0
  private var action: (@Sendable () -> Void)?
  private let first: @Sendable () -> Void
  private var previous: [Int32: sigaction] = [:]
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
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { return }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    let readEnd = ends[0]
    interruptPipe = ends[1]
    let reader = Thread { [weak self] in
      var byte: UInt8 = 0
      while true {
        let got = read(readEnd, &byte, 1)
        if got < 0 && errno == EINTR { continue }
        guard got == 1 else { break }
        self?.received(Int32(byte))
      }
      close(readEnd)
    }
    reader.name = "batchdl.signals"
    reader.start()
    for number in [SIGINT, SIGTERM] {
      var handler = sigaction()
      handler.__sigaction_handler.sa_handler = { number in
        var byte = UInt8(truncatingIfNeeded: number)
        let saved = errno
        _ = write(interruptPipe, &byte, 1)
        errno = saved
      }
      sigemptyset(&handler.sa_mask)
      // Interrupted reads and writes of files go on; libcurl's poll takes an EINTR as a wake-up.
      handler.sa_flags = SA_RESTART
      var old = sigaction()
      sigaction(number, &handler, &old)
      previous[number] = old
    }
    // A parent may start batchdl with the two blocked (a program that spawns it from a thread that
    // blocks signals passes its mask on, as Foundation's Process does from a Dispatch worker); a
    // handler of a blocked signal never runs. This thread takes them from now on.
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGINT)
    sigaddset(&signals, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &signals, nil)
  }

  deinit {
    for (number, old) in previous {
      var restore = old
      sigaction(number, &restore, nil)
    }
    // The reader sees the end of the pipe and stops.
    let writeEnd = interruptPipe
    interruptPipe = -1
    if writeEnd >= 0 { close(writeEnd) }
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
