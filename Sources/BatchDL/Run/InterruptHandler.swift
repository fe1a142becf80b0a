import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The write end of the pipe the signal handler writes the signal's number to. A global: a C
/// signal handler captures nothing. -1 while no handler is installed.
private nonisolated(unsafe) var interruptPipe: Int32 = -1

/// SIGINT and SIGTERM for the whole process, from before the manifest is read: `batchdl run`
/// installs them as the first thing it does, so that a signal while the manifest is loaded and
/// planned is not the default action (death by the signal, no report) but the same orderly stop as
/// one during the transfers: the run starts with every task cancelled, writes its report, and exits
/// 3. A second signal exits 3 at once, whenever it comes.
public enum Interrupts {
  /// Installs the handlers for the rest of the process (later calls do nothing).
  public static func install() {
    InterruptHub.shared.install(pinned: true)
  }
}

/// The handlers and what they count. The handler only writes the signal's number to a pipe
/// (`write` is async-signal-safe); a thread of its own reads it and hands it to the run's
/// `InterruptHandler`, or keeps it for the run to come when there is none yet.
///
/// Not a Dispatch signal source: that starts libdispatch's event thread, which asks for a higher
/// priority than an unprivileged process may take, and libdispatch then logs "Failed to set thread
/// priority for worker thread" to the journal on every run of a systemd service.
final class InterruptHub: @unchecked Sendable {
  static let shared = InterruptHub()

  private let lock = NSLock()
  private var installed = false
  /// Installed for the process (`Interrupts.install`): the handlers stay when a run ends.
  private var pinned = false
  /// Signals received since the handlers were installed.
  private var count = 0
  private weak var target: InterruptHandler?
  private var token = 0
  private var previous: [Int32: sigaction] = [:]
  /// Messages while no run is attached (nothing is drawn on the terminal yet).
  private let area = LiveArea(descriptor: STDERR_FILENO)

  /// Installs the handlers unless they are; `pinned`: they stay for the rest of the process.
  func install(pinned: Bool) {
    lock.lock()
    defer { lock.unlock() }
    self.pinned = self.pinned || pinned
    guard !installed else { return }
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { return }
    installed = true
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

  /// Makes `handler` the one signals go to (installing the handlers for its run unless they are);
  /// returns its token and the signals received before it came.
  func attach(_ handler: InterruptHandler) -> (token: Int, earlier: Int) {
    install(pinned: false)
    lock.lock()
    defer { lock.unlock() }
    target = handler
    token += 1
    return (token, count)
  }

  /// The handler of `token` is gone; handlers installed only for its run are taken away again.
  func detach(_ token: Int) {
    lock.lock()
    defer { lock.unlock() }
    guard token == self.token else { return }
    target = nil
    guard installed, !pinned else { return }
    for (number, old) in previous {
      var restore = old
      sigaction(number, &restore, nil)
    }
    previous = [:]
    count = 0
    installed = false
    // The reader sees the end of the pipe and stops.
    let writeEnd = interruptPipe
    interruptPipe = -1
    if writeEnd >= 0 { close(writeEnd) }
  }

  private func received(_ number: Int32) {
    lock.lock()
    count += 1
    let seen = count
    let target = self.target
    lock.unlock()
    if let target {
      target.received(seen, signal: number)
      return
    }
    // No run yet (the manifest is being read and planned): the run that comes stops at once.
    if seen > 1 {
      area.print(["batchdl: stopped at once"])
      _exit(ExitStatus.interrupted.rawValue)
    }
    area.print(["batchdl: stopping before any transfer" + Self.hint(number)])
  }

  /// What stops the run at once, for a person at a terminal (Ctrl-C); SIGTERM comes from a
  /// supervisor (systemd, cron's kill, `timeout`), which needs no hint.
  static func hint(_ signal: Int32) -> String {
    signal == SIGINT ? " (press Ctrl-C again to stop at once)" : " (SIGTERM)"
  }
}

/// SIGINT and SIGTERM during a run: the first stops the run after checkpointing (exit 3); a second
/// exits at once, leaving the committed checkpoints valid. Its messages go above the progress bars
/// (and the second erases them), so that the terminal is left with whole lines and the prompt on a
/// line of its own. A signal received before the run began (`Interrupts.install`) counts as the
/// first: the run stops at once.
final class InterruptHandler: @unchecked Sendable {
  private let lock = NSLock()
  private var action: (@Sendable () -> Void)?
  private let first: @Sendable () -> Void
  private let area: LiveArea
  private var token = 0

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
    let (token, earlier) = InterruptHub.shared.attach(self)
    self.token = token
    if earlier > 0 { first() }
  }

  deinit {
    InterruptHub.shared.detach(token)
  }

  /// The `seen`th signal since the handlers were installed.
  fileprivate func received(_ seen: Int, signal: Int32) {
    if seen > 1 {
      area.clear(above: ["batchdl: stopped at once; committed checkpoints stay valid"], close: true)
      _exit(ExitStatus.interrupted.rawValue)
    }
    area.print(["batchdl: stopping after checkpoints" + InterruptHub.hint(signal)])
    first()
    onInterrupt?()
  }
}
