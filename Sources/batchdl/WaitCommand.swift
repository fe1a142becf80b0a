import ArgumentParser
import BatchDL

struct WaitCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "wait",
    abstract: "Wait until the manifest's background sessions have finished.",
    discussion: """
      Exits with the sessions' result (0, 1, or 3 when a worker was interrupted), or 1 with a \
      message when --timeout passes first. Returns at once when no worker is running.

      Example:
        batchdl run nightly.yaml && batchdl wait nightly.yaml --timeout 3600
      """
  )

  @Argument(help: "The manifest.")
  var manifest: String

  @Option(help: ArgumentHelp("State folder (default: .batchdl/ beside the manifest).", valueName: "dir"))
  var state: String?

  @Option(help: "Give up after this many seconds.")
  var timeout: Double?

  func validate() throws {
    if let timeout, !(timeout >= 0 && timeout <= Limits.waitSeconds) {
      throw ValidationError("--timeout must be from 0 to \(Int(Limits.waitSeconds)) seconds (about ten years)")
    }
  }

  func run() throws {
    var stderr = StandardError()
    let plan = try loadPlan(manifest)
    let folder = state ?? FileAccess.resolve(".batchdl", against: plan.manifest.absoluteDirectory)
    let sessions = BackgroundSessions(stateFolder: Runner.absolute(folder), manifestPath: Runner.absolute(manifest))
    let identifiers = plan.manifest.sessions.filter { $0.kind == .background }.map { $0.identifier ?? $0.name }
    guard let result = sessions.wait(for: identifiers, timeout: timeout) else {
      stderr.write("batchdl: timed out after \(timeout ?? 0) s; the background worker is still running\n")
      throw ExitCode(ExitStatus.taskFailed.rawValue)
    }
    if result != .success { throw ExitCode(result.rawValue) }
  }
}
