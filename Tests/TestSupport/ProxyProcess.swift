import Foundation

/// A proxy program a test starts on 127.0.0.1 (TinyProxy, MicroSocks): its process, its output in a
/// file of its folder, and its stop. The folder names the test process in `proxy-owner.pid` and the
/// proxy in `proxy.pid`, so that the proxies of a test run killed half-way are stopped by the next.
final class ProxyProcess: @unchecked Sendable {
  let pid: pid_t
  private var exited = false

  /// Starts a proxy on a free port, up to five times: `command(port)` gives the executable and its
  /// arguments for a port (writing any configuration it reads). Its standard output and error go
  /// to `output`. Returns once the port accepts connections.
  static func start(
    name: String, folder: String, output: String, command: (Int) throws -> (String, [String])
  ) throws -> (ProxyProcess, Int) {
    _ = orphansReaped
    try "\(getpid())\n".write(toFile: folder + "/proxy-owner.pid", atomically: true, encoding: .utf8)
    var lastProblem = NginxServer.Problem("\(name) did not start")
    for _ in 0..<5 {
      let port = try NginxServer.freePort()
      let (executable, arguments) = try command(port)
      let proxy = ProxyProcess(pid: try spawn(executable, arguments, output: output))
      try "\(proxy.pid)\n".write(toFile: folder + "/proxy.pid", atomically: true, encoding: .utf8)
      let deadline = Date().addingTimeInterval(10)
      while proxy.isRunning && Date() < deadline && !NginxServer.accepts(port: port) { usleep(20_000) }
      if proxy.isRunning && NginxServer.accepts(port: port) { return (proxy, port) }
      proxy.stop()
      let said = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
      lastProblem = NginxServer.Problem("\(name) did not start on port \(port): \(said)")
    }
    throw lastProblem
  }

  /// Starts `executable` as a shell would (every signal unblocked and at its default: a test
  /// thread may block SIGTERM, and a child inherits its mask), stdin from /dev/null, stdout and
  /// stderr into `output` (created or truncated).
  private static func spawn(_ executable: String, _ arguments: [String], output: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigdefault(&attributes, &all)
    var argv = ([executable] + arguments).map { strdup($0) }
    argv.append(nil)
    var envp = ProcessInfo.processInfo.environment.map { strdup($0.key + "=" + $0.value) }
    envp.append(nil)
    defer { for pointer in argv + envp { free(pointer) } }
    var pid: pid_t = 0
    let code = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard code == 0 else { throw NginxServer.Problem("cannot start \(executable): \(String(cString: strerror(code)))") }
    return pid
  }

  private init(pid: pid_t) {
    self.pid = pid
  }

  /// Whether it has not exited yet (reaps it when it has).
  var isRunning: Bool {
    if exited { return false }
    var status: Int32 = 0
    let result = waitpid(pid, &status, WNOHANG)
    if result == pid || (result < 0 && errno == ECHILD) { exited = true }
    return !exited
  }

  /// Stops it: SIGTERM, then SIGKILL after 5 s.
  func stop() {
    guard isRunning else { return }
    kill(pid, SIGTERM)
    let deadline = Date().addingTimeInterval(5)
    while isRunning && Date() < deadline { usleep(10_000) }
    if isRunning {
      kill(pid, SIGKILL)
      var status: Int32 = 0
      while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
      exited = true
    }
  }

  /// Stops the proxies of test processes that died without stopping them, once per process.
  static let orphansReaped: Bool = {
    let temporary = NSTemporaryDirectory()
    let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []
    for name in names where name.hasPrefix("batchdl-test-") {
      let base = (temporary as NSString).appendingPathComponent(name)
      guard let owner = try? String(contentsOfFile: base + "/proxy-owner.pid", encoding: .utf8),
        let ownerPID = pid_t(owner.trimmingCharacters(in: .whitespacesAndNewlines)),
        kill(ownerPID, 0) != 0, errno == ESRCH
      else { continue }
      if let proxy = try? String(contentsOfFile: base + "/proxy.pid", encoding: .utf8),
        let proxyPID = pid_t(proxy.trimmingCharacters(in: .whitespacesAndNewlines))
      {
        kill(proxyPID, SIGKILL)
      }
      try? FileManager.default.removeItem(atPath: base)
    }
    return true
  }()
}
