import Foundation

/// Runs the built `batchdl` executable, as a user or a cron job would.
public enum BinaryRunner {
  public typealias Outcome = ExternalTool.Outcome

  /// The built executable: `BATCHDL_BIN`, else `batchdl` beside the test bundle in the build folder.
  public static var executable: String {
    if let path = ProcessInfo.processInfo.environment["BATCHDL_BIN"] { return path }
    var folder = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").deletingLastPathComponent()
    for _ in 0..<4 {
      let candidate = folder.appendingPathComponent("batchdl").path
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
      folder = folder.deletingLastPathComponent()
    }
    for bundle in Bundle.allBundles {
      let candidate = bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("batchdl").path
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return ".build/debug/batchdl"
  }

  /// Runs `batchdl arguments...` in `directory` and waits for it (at most `timeout` seconds).
  public static func run(
    _ arguments: [String], in directory: String? = nil, environment: [String: String] = [:],
    timeout: TimeInterval = 60
  ) throws -> Outcome {
    try ExternalTool.run(
      executable, arguments, environment: environment.mapValues { $0 }, in: directory, timeout: timeout)
  }
}

/// Starts processes as a shell or systemd does: every signal unblocked and at its default (a test
/// thread may block some, and a child inherits its mask), stdin from /dev/null.
public enum CleanSpawn {
  /// Starts `executable` with `arguments` (after the program's name) and `environment`, its stdout
  /// into `stdout` (created or truncated) and its stderr to /dev/null; returns its pid.
  public static func start(
    _ executable: String, _ arguments: [String], stdout: String = "/dev/null",
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
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
    var envp = environment.map { strdup($0.key + "=" + $0.value) }
    envp.append(nil)
    defer { for pointer in argv + envp { free(pointer) } }
    var pid: pid_t = 0
    let code = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard code == 0 else { throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO) }
    return pid
  }

  /// Waits for `pid`; returns its raw wait status.
  public static func wait(_ pid: pid_t) -> Int32 {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return status
  }
}
