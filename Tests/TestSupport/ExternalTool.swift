import Foundation

/// Other programs the tests run: checkers of batchdl's output (promtool, cmark-gfm, Chromium,
/// systemd-analyze) and the project's scripts.
public enum ExternalTool {
  public struct Outcome: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// It ran past its time and was stopped (SIGTERM, then SIGKILL).
    public var timedOut: Bool

    /// Standard output, then standard error.
    public var output: String { stdout + stderr }
  }

  /// The tool's path, or nil when it is not installed (scripts/setup installs it).
  public static func find(_ name: String) -> String? {
    for folder in ["/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin"] {
      let path = "\(folder)/\(name)"
      if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
  }

  /// Runs `path arguments...` with `input` on its standard input (none when nil), `environment`
  /// changed (a nil value removes the variable), in `directory`, for at most `timeout` seconds.
  /// Its output goes to files, so that a chatty program never blocks on a full pipe.
  public static func run(
    _ path: String, _ arguments: [String], input: String? = nil, environment changes: [String: String?] = [:],
    in directory: String? = nil, timeout: TimeInterval = 120
  ) throws -> Outcome {
    let folder = TemporaryDirectory()
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    var environment = ProcessInfo.processInfo.environment
    for (name, value) in changes { environment[name] = value }
    process.environment = environment
    let stdoutPath = folder.path + "/stdout"
    let stderrPath = folder.path + "/stderr"
    _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
    _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
    let stdout = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
    let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
    defer {
      try? stdout.close()
      try? stderr.close()
    }
    process.standardOutput = stdout
    process.standardError = stderr
    if let input {
      let inputPath = folder.write("stdin", input)
      process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inputPath))
    } else {
      process.standardInput = FileHandle.nullDevice
    }
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(20_000) }
    let timedOut = process.isRunning
    if timedOut {
      process.terminate()
      let grace = Date().addingTimeInterval(5)
      while process.isRunning && Date() < grace { usleep(20_000) }
      // A program whose SIGTERM is blocked (a mask inherited from the test's thread) still stops.
      if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
    process.waitUntilExit()
    // Bytes that are not UTF-8 (a hostile server's, echoed) become U+FFFD rather than lose the rest.
    let read = { (path: String) in String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
    }
    return Outcome(
      status: process.terminationStatus, stdout: read(stdoutPath), stderr: read(stderrPath), timedOut: timedOut)
  }
}
