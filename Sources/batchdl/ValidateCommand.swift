import ArgumentParser
import BatchDL
import BatchDLSupport

struct ValidateCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "validate",
    abstract: "Check manifests without sending anything.",
    discussion: """
      Reads each manifest and its list files, and prints every problem as \
      FILE:LINE:COLUMN: error: message. Exits 0 when all are valid, 2 otherwise.

      Example:
        batchdl validate manifests/*.yaml
      """
  )

  @Argument(help: "Manifest files to check.")
  var manifests: [String]

  @Flag(name: .shortAndLong, help: "Print nothing for valid manifests.")
  var quiet = false

  func validate() throws {
    if manifests.isEmpty { throw ValidationError("name at least one manifest to check") }
  }

  func run() throws {
    var stderr = StandardError()
    var failed = false
    for path in manifests {
      do {
        let plan = try ManifestCheck.plan(path: path)
        ManifestCheck.report(plan.warnings, for: path, to: &stderr)
        if !quiet {
          print("\(path): valid (\(plan.tasks.count) tasks, \(plan.requests.count) requests)")
        }
      } catch {
        ManifestCheck.report(error.diagnostics, for: path, to: &stderr)
        failed = true
      }
    }
    if failed { throw ExitCode(ExitStatus.invalid.rawValue) }
  }
}
