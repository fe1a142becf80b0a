import Foundation

/// Runs a manifest's shell command (`on_finished`) with `/bin/sh -c`.
enum Hook {
  /// Runs `command` in `folder` with `environment` added to batchdl's own, and waits for it;
  /// returns its exit status (127 when it could not start).
  static func run(_ command: String, in folder: String, environment: [String: String]) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    process.currentDirectoryURL = URL(fileURLWithPath: folder)
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    process.environment = env
    process.standardInput = FileHandle.nullDevice
    do {
      try process.run()
    } catch {
      return 127
    }
    process.waitUntilExit()
    // As a shell says it: 128 + N for a command that signal N ended.
    return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
  }
}
