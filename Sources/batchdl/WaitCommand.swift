import ArgumentParser
import BatchDL
import BatchDLSupport

struct WaitCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "wait",
    abstract: "Wait until the manifest's background sessions have finished.",
    discussion: """
      Exits with the sessions' result (0, 1, or 3 when a worker was interrupted or died before \
      finishing: 'batchdl run' then starts it again and it resumes), or 1 with a message when \
      --timeout passes first. Returns at once when no worker is starting or running.

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
    let plan = try loadPlan(manifest, state: state)
    let sessions = BackgroundSessions(state: stateFolder(state, for: plan), manifestPath: manifest)
    let background = plan.manifest.sessions.filter { $0.kind == .background }
    let identifiers = background.map { $0.identifier ?? $0.name }
    guard let states = sessions.wait(for: identifiers, timeout: timeout) else {
      stderr.write("batchdl: timed out after \(timeout ?? 0) s; the background worker is still running\n")
      throw ExitCode(ExitStatus.taskFailed.rawValue)
    }
    for session in background {
      let identifier = session.identifier ?? session.name
      if case .finished(let code) = states[identifier], code != 0 {
        // Why, as the worker decided it (`RunVerdict`): the exit code alone says nothing.
        let reasons = sessions.status(identifier)?.reasons ?? []
        let why = reasons.isEmpty ? "" : ": " + reasons.joined(separator: "; ")
        stderr.write(
          "batchdl: background session \(session.name) (\(identifier)) finished with exit status \(code)\(why); "
            + "its report: \(sessions.reportPath(identifier)); its log: \(sessions.logPath(identifier))\n")
        continue
      }
      guard case .died(let pid) = states[identifier] else { continue }
      stderr.write(
        "batchdl: the worker of background session \(session.name) (\(identifier), pid \(pid)) died before "
          + "finishing; 'batchdl run \(manifest)' starts it again and resumes its downloads; its log: "
          + "\(sessions.logPath(identifier))\n")
    }
    let result = BackgroundSessions.result(of: states)
    if result != .success { throw ExitCode(result.rawValue) }
  }
}
