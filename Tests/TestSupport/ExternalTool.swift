import Foundation

/// Another program the tests check batchdl's output with (promtool, cmark-gfm, ...).
public enum ExternalTool {
  /// The tool's path, or nil when it is not installed (scripts/setup installs it).
  public static func find(_ name: String) -> String? {
    for folder in ["/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin"] {
      let path = "\(folder)/\(name)"
      if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
  }

  /// Runs `path arguments...` with `input` on its standard input; its status and its standard
  /// output and error together.
  public static func run(
    _ path: String, _ arguments: [String], input: String = ""
  ) throws -> (
    status: Int32, output: String
  ) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let stdin = Pipe()
    let stdout = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stdout
    try process.run()
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
  }
}
