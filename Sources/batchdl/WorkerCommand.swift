import ArgumentParser
import BatchDL
import Foundation

/// The detached process that runs one background session; started by `run`, not by people.
struct WorkerCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "worker",
    abstract: "Run one background session (started by 'batchdl run').",
    shouldDisplay: false
  )

  @Argument(help: "The manifest (absolute path).")
  var manifest: String

  @Option(help: "The background session.")
  var session: String

  @Option(help: ArgumentHelp("State folder (absolute path).", valueName: "dir"))
  var state: String

  @Flag(help: "Delete nothing (run --no-prune).")
  var noPrune = false

  func run() throws {
    // Between passes and while a pass plans, a signal stops the worker in order, as in a run.
    Interrupts.install()
    let sessions = BackgroundSessions(stateFolder: state, manifestPath: manifest)
    let status = sessions.work(session: session, environment: ProcessInfo.processInfo.environment, noPrune: noPrune)
    if status != .success { throw ExitCode(status.rawValue) }
  }
}
