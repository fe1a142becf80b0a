import Foundation

/// Runs the built `batchdl` executable, as a user or a cron job would.
public enum BinaryRunner {
  public struct Outcome: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
  }

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
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    process.environment = env
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let group = DispatchGroup()
    nonisolated(unsafe) var stdoutData = Data()
    nonisolated(unsafe) var stderrData = Data()
    group.enter()
    DispatchQueue.global().async {
      stdoutData = out.fileHandleForReading.readDataToEndOfFile()
      group.leave()
    }
    group.enter()
    DispatchQueue.global().async {
      stderrData = err.fileHandleForReading.readDataToEndOfFile()
      group.leave()
    }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
      process.terminate()
      process.waitUntilExit()
    }
    group.wait()
    process.waitUntilExit()
    return Outcome(
      status: process.terminationStatus, stdout: String(decoding: stdoutData, as: UTF8.self),
      stderr: String(decoding: stderrData, as: UTF8.self))
  }
}
