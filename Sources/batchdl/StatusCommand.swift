import ArgumentParser
import BatchDL
import BatchDLPlan
import BatchDLSupport

struct StatusCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "status",
    abstract: "Show where each task stands: done, partial, pending or failed.",
    discussion: """
      Reads the state folder and the files on disk; sends nothing. Without --shard, what every \
      run recorded counts, sharded or not; with --shard I/N, only that shard's tasks and state. \
      Background workers are shown as running, starting, finished or died (then 'run' starts \
      them again).

      Example:
        batchdl status mirror.yaml
        batchdl status mirror.yaml --shard 1/4 --json
      """
  )

  @Argument(help: "The manifest.")
  var manifest: String

  @Option(help: ArgumentHelp("State folder (default: .batchdl/ beside the manifest).", valueName: "dir"))
  var state: String?

  @Option(help: ArgumentHelp("Only this shard's tasks, from its state (I from 0 to N-1).", valueName: "I/N"))
  var shard: String?

  @Flag(help: "Print JSON.")
  var json = false

  func validate() throws {
    if let shard, case .failure(let problem) = Shard.parse(shard) { throw ValidationError(problem.description) }
  }

  func run() throws {
    let plan = try loadPlan(manifest, state: state)
    let selected = shard.flatMap { try? Shard.parse($0).get() }
    let folder = stateFolder(state, for: plan, shard: selected)
    let prior: PriorState
    do {
      prior = try selected == nil ? folder.priorOfAllShards() : folder.prior()
    } catch {
      throw fail(error)
    }
    let statuses = TaskStatus.all(plan: plan, prior: prior, shard: selected)
    let sessions = BackgroundSessions(state: folder, manifestPath: manifest)
    let workers = plan.manifest.sessions.filter { $0.kind == .background }.map { session in
      let identifier = session.identifier ?? session.name
      return (session: session.name, identifier: identifier, found: sessions.state(identifier))
    }
    let out = BufferedOutput()
    if json {
      let workerObjects: [JSON] = workers.map { worker in
        var fields: [String: JSON] = [
          "session": .string(worker.session), "identifier": .string(worker.identifier),
          "state": .string(worker.found.state.name), "log": .string(sessions.logPath(worker.identifier)),
          "report": .string(sessions.reportPath(worker.identifier)),
        ]
        switch worker.found.state {
        case .starting(let pid), .running(let pid), .died(let pid): fields["pid"] = .int(Int(pid))
        case .finished(let code): fields["exit_status"] = .int(Int(code))
        case .notStarted: break
        }
        return .object(fields)
      }
      out.write(JSON.object(["tasks": .array(statuses.map(\.json)), "workers": .array(workerObjects)]).text + "\n")
    } else {
      for status in statuses { out.write(status.line + "\n") }
      var counts: [TaskStatus.State: Int] = [:]
      for status in statuses { counts[status.state, default: 0] += 1 }
      let parts = [TaskStatus.State.done, .partial, .pending, .failed].map { "\(counts[$0] ?? 0) \($0.rawValue)" }
      out.write("\(statuses.count) tasks: " + parts.joined(separator: ", ") + "\n")
      for worker in workers {
        let identifier = worker.identifier
        switch worker.found.state {
        case .running(let pid):
          out.write("worker \(identifier): running (pid \(pid)), log \(sessions.logPath(identifier))\n")
        case .starting(let pid):
          out.write("worker \(identifier): starting (pid \(pid)), log \(sessions.logPath(identifier))\n")
        case .finished(let code):
          out.write("worker \(identifier): finished (exit \(code)), report \(sessions.reportPath(identifier))\n")
        case .died(let pid):
          out.write(
            "worker \(identifier): died (pid \(pid)) before finishing; 'batchdl run \(manifest)' starts it again "
              + "and resumes; log \(sessions.logPath(identifier))\n")
        case .notStarted:
          out.write("worker \(identifier): not started\n")
        }
      }
    }
    out.flush()
  }
}
