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
