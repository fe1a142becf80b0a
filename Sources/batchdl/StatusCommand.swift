import ArgumentParser
import BatchDL

struct StatusCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "status",
    abstract: "Show where each task stands: done, partial, pending or failed.",
    discussion: """
      Reads the state folder and the files on disk; sends nothing.

      Example:
        batchdl status mirror.yaml
        batchdl status mirror.yaml --json
      """
  )

  @Argument(help: "The manifest.")
  var manifest: String

  @Option(help: ArgumentHelp("State folder (default: .batchdl/ beside the manifest).", valueName: "dir"))
  var state: String?

  @Flag(help: "Print JSON.")
  var json = false

  func run() throws {
    var stderr = StandardError()
    let plan = try loadPlan(manifest)
    let folder = stateFolder(state, for: plan)
    let prior: PriorState
    do {
      prior = try PriorState.load(from: try StateStore.open(folder: folder, readOnly: true))
    } catch {
      stderr.write("batchdl: cannot read the state folder \(folder): \(error)\n")
      throw ExitCode(ExitStatus.invalid.rawValue)
    }
    let statuses = TaskStatus.all(plan: plan, prior: prior)
    let out = BufferedOutput()
    if json {
      out.write(JSON.object(["tasks": .array(statuses.map(\.json))]).text + "\n")
    } else {
      for status in statuses { out.write(status.line + "\n") }
      var counts: [TaskStatus.State: Int] = [:]
      for status in statuses { counts[status.state, default: 0] += 1 }
      let parts = [TaskStatus.State.done, .partial, .pending, .failed].map { "\(counts[$0] ?? 0) \($0.rawValue)" }
      out.write("\(statuses.count) tasks: " + parts.joined(separator: ", ") + "\n")
      let sessions = BackgroundSessions(stateFolder: Runner.absolute(folder), manifestPath: Runner.absolute(manifest))
      for session in plan.manifest.sessions where session.kind == .background {
        let identifier = session.identifier ?? session.name
        if let pid = sessions.liveWorker(identifier) {
          out.write("worker \(identifier): running (pid \(pid)), log \(sessions.logPath(identifier))\n")
        } else if let status = sessions.status(identifier), status.state == "finished" {
          out.write("worker \(identifier): finished (exit \(status.exitStatus ?? 0)), report \(status.report)\n")
        } else {
          out.write("worker \(identifier): not started\n")
        }
      }
    }
    out.flush()
  }
}
