import ArgumentParser
import BatchDL
import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import Foundation

extension ProgressMode: ExpressibleByArgument {}

struct RunCommand: ParsableCommand {
  var environment: [String: String] { ProcessInfo.processInfo.environment }

  static let configuration = CommandConfiguration(
    commandName: "run",
    abstract: "Plan and execute a manifest.",
    discussion: """
      Checks the manifest, then sends each request once (in plan order, under the sessions' \
      connection caps), retries what a retry can fix, checks sha256 and size, and renames each \
      file into place only when it is complete and correct.

      Re-running a manifest continues where the last run stopped: finished files that still \
      match are skipped without a request, partial downloads resume from their checkpoint.

      Exit codes: 0 every task completed or was unchanged; 1 a task failed; 2 invalid manifest \
      or usage; 3 interrupted by a signal (after checkpointing); 4 another run holds the state \
      folder's lock; 5 the state folder cannot be used (damaged database, full disk): nothing \
      was sent; 6 a session's prune would have deleted more files than its prune.max_delete \
      allows, so nothing was deleted (code prune-limit; a failed task makes it 1): the message \
      names the files; 'run --max-delete N' lets one run delete them.

      Example:
        batchdl run mirror.yaml --report report.json --junit junit.xml
        MIRROR_TOKEN=... batchdl run mirror.yaml --quiet --progress never
      """
  )

  @Argument(help: "The manifest.")
  var manifest: String

  @Option(help: ArgumentHelp("Write the JSON report (stable for diff) to this file.", valueName: "file"))
  var report: String?

  @Option(help: ArgumentHelp("Write a JUnit XML report to this file.", valueName: "file"))
  var junit: String?

  @Option(help: ArgumentHelp("Stream events as JSON lines to this file.", valueName: "file"))
  var events: String?

  @Option(
    help: ArgumentHelp(
      "Write Prometheus text-format metrics (node_exporter's textfile collector) to this file.",
      valueName: "file"))
  var metrics: String?

  @Option(help: ArgumentHelp("State folder (default: .batchdl/ beside the manifest).", valueName: "dir"))
  var state: String?

  @Option(help: "At most this many transfers at once (default: the largest max_concurrent).")
  var jobs: Int?

  @Option(
    help: ArgumentHelp(
      "Run only this shard's requests (I from 0 to N-1), or 'auto' for a Kubernetes Indexed Job or a Slurm array.",
      valueName: "I/N|auto"))
  var shard: String?

  @Option(help: "Shard count for --shard auto in a Kubernetes Indexed Job (its completions).")
  var shards: Int?

  @Option(help: "Progress display: auto (bars on a terminal), always, never.")
  var progress: ProgressMode = .auto

  @Flag(name: .shortAndLong, help: "Print only failures and their summary.")
  var quiet = false

  @Flag(
    name: .shortAndLong,
    help: "Print a line for every task; off a terminal, tasks that are unchanged print none by default.")
  var verbose = false

  @Flag(help: "Add times to the JSON and JUnit reports (the run's; each task's start and end).")
  var timings = false

  @Flag(help: "Ask the server whether finished downloads changed (conditional requests).")
  var refresh = false

  @Flag(help: "Re-hash finished files to decide whether they are unchanged (slower; size and time otherwise).")
  var verify = false

  @Flag(help: "Run background sessions here too, instead of in a detached worker (for CI).")
  var foreground = false

  @Flag(help: "Delete nothing this run, whatever the sessions' prune: says.")
  var noPrune = false

  @Option(
    help: ArgumentHelp(
      "Let this run's prune delete up to N files (or P% of those recorded), in place of prune.max_delete.",
      valueName: "N|P%"))
  var maxDelete: String?

  /// `--max-delete` read, or nil when not given.
  var maxDeleteLimit: PruneLimit? {
    maxDelete.flatMap { try? PruneLimit.parse($0, what: "--max-delete").get() }
  }

  func validate() throws {
    if let maxDelete, case .failure(let problem) = PruneLimit.parse(maxDelete, what: "--max-delete") {
      throw ValidationError(problem.message)
    }
    if let shard, case .failure(let problem) = Shard.resolve(shard, shards: shards, environment: environment) {
      throw ValidationError(problem.description)
    }
    if let jobs, jobs < 1 || jobs > Limits.count {
      throw ValidationError("--jobs must be from 1 to \(Limits.count), found \(jobs)")
    }
    if let shards, shards < 1 || shards > Limits.count {
      throw ValidationError("--shards must be from 1 to \(Limits.count), found \(shards)")
    }
  }

  func run() throws {
    // First of all: a signal while the manifest is read and planned stops the run in order (exit
    // 3, the report written) rather than kill the process.
    Interrupts.install()
    var stderr = StandardError()
    let plan: Plan
    // The run's own outputs, which no file a document names may overwrite.
    let shardIndex =
      shard.flatMap { try? Shard.resolve($0, shards: shards, environment: environment).get() }.map {
        String($0.index)
      } ?? "all"
    let outputs = [report, junit, events, metrics].compactMap {
      $0?.replacingOccurrences(of: "{shard}", with: shardIndex)
    }
    // Documents are fetched before planning: the lock and the state folder are checked first, so
    // that a run that stops on them has sent nothing.
    let heldLock: StateLock?
    do {
      let resolvedShard = shard.flatMap { try? Shard.resolve($0, shards: shards, environment: environment).get() }
      heldLock = try RunPreflight.check(manifestPath: manifest, statePath: state, shard: resolvedShard)
    } catch {
      stderr.write("batchdl: \(error)\n")
      writeNotRun(status: error.status, reason: error.description)
      throw ExitCode(error.status.rawValue)
    }
    do {
      plan = try loadPlan(manifest, descriptors: .fetch, state: state, quiet: quiet, outputs: outputs)
    } catch {
      writeNotRun(status: .invalid, reason: "the manifest is invalid (batchdl validate \(manifest) lists why)")
      throw error
    }
    var options = RunOptions()
    options.statePath = state
    options.jobs = jobs
    options.shard = shard.flatMap { try? Shard.resolve($0, shards: shards, environment: environment).get() }
    // `{shard}` in an output path becomes the shard's index, so shards on shared storage write apart.
    let index = options.shard.map { String($0.index) } ?? "all"
    options.reportPath = report?.replacingOccurrences(of: "{shard}", with: index)
    options.junitPath = junit?.replacingOccurrences(of: "{shard}", with: index)
    options.eventsPath = events?.replacingOccurrences(of: "{shard}", with: index)
    options.metricsPath = metrics?.replacingOccurrences(of: "{shard}", with: index)
    // Outputs that cannot be written are a usage error before anything is sent, not a failure
    // found once every task ran.
    for (option, path) in [
      ("--report", options.reportPath), ("--junit", options.junitPath), ("--metrics", options.metricsPath),
    ] {
      guard let path, let problem = Self.unwritable(path) ?? Self.readByTheRun(path, manifest: plan) else { continue }
      let reason = "cannot write \(option) \(path): \(problem); nothing was sent"
      stderr.write("batchdl: \(reason)\n")
      if option != "--report" { writeNotRun(status: .invalid, reason: reason) }
      throw ExitCode(ExitStatus.invalid.rawValue)
    }
    options.progress = progress
    options.quiet = quiet
    options.verbose = verbose
    options.timings = timings
    options.refresh = refresh
    options.verify = verify
    options.noPrune = noPrune
    options.maxDelete = maxDeleteLimit
    let background = plan.manifest.sessions.filter { $0.kind == .background }
    if !foreground && !background.isEmpty {
      options.sessions = Set(plan.manifest.sessions.filter { $0.kind != .background }.map(\.name))
      let sessions = BackgroundSessions(state: stateFolder(state, for: plan), manifestPath: manifest)
      for session in background {
        do {
          switch try sessions.launch(session: session, noPrune: noPrune) {
          case .started(let pid):
            if !quiet {
              print(
                "background session \(session.name): worker started (pid \(pid)); 'batchdl wait \(manifest)' waits for it"
              )
            }
          case .attached(let pid):
            if !quiet {
              print("background session \(session.name): worker pid \(pid) is running; it takes the new tasks next")
            }
          }
        } catch {
          // Nothing has run yet: the code of a state folder that cannot be used (workers live there).
          let reason = "cannot start the background worker of session \(session.name): \(error); nothing was sent"
          stderr.write("batchdl: \(reason)\n")
          writeNotRun(status: .stateUnusable, reason: reason)
          throw ExitCode(ExitStatus.stateUnusable.rawValue)
        }
      }
    }
    do {
      // The lock taken before the documents were fetched is held until the process exits.
      let runner = Runner(plan: plan, options: options, lock: heldLock)
      let status = try runner.run()
      // Everything is written: end the process here, without tearing down the plan and the run's
      // records one object at a time (for a big manifest, a noticeable part of the run).
      fflush(nil)
      Glibc.exit(status.rawValue)
    } catch {
      stderr.write("batchdl: \(error)\n")
      // A run whose state cannot be used wrote its report already (every task cancelled, and why).
      switch error {
      case .locked, .stateFolder, .usage: writeNotRun(status: error.status, reason: error.description)
      case .state, .setup: break
      }
      throw ExitCode(error.status.rawValue)
    }
  }

  /// `--report` for a run that stops before running: no task, and why (`not_run`), so that a CI
  /// step never diffs yesterday's report and passes.
  func writeNotRun(status: ExitStatus, reason: String) {
    guard let report else { return }
    let index: String
    if let shard, case .success(let resolved) = Shard.resolve(shard, shards: shards, environment: environment) {
      index = String(resolved.index)
    } else {
      index = "all"
    }
    let path = report.replacingOccurrences(of: "{shard}", with: index)
    do {
      try AtomicFile.makeParent(of: path)
      try RunReport.writeNotRun(to: path, manifest: manifest, status: status.rawValue, reason: reason)
    } catch {
      // The report CI would diff is stale: say so.
      var stderr = StandardError()
      stderr.write("batchdl: cannot write the report \(path): \(error)\n")
    }
  }

  /// Why an output path would overwrite what the run reads or writes (the manifest, a list or
  /// document, a task's destination), or nil.
  static func readByTheRun(_ path: String, manifest plan: Plan) -> String? {
    func resolved(_ path: String) -> String {
      URL(fileURLWithPath: StateFolder.absolute(path)).resolvingSymlinksInPath().path
    }
    if resolved(path) == resolved(plan.manifest.path) { return "it is the manifest itself" }
    // Destinations are kept relative to the manifest's folder (absolute outside it): the output is
    // put in that form once, then compared with each task's bytes, without a String per task.
    var output = FileAccess.normalize(StateFolder.absolute(path))
    let folder = FileAccess.normalize(plan.manifest.absoluteDirectory) + "/"
    if output.hasPrefix(folder) { output.removeFirst(folder.count) }
    guard let task = plan.tasks.first(where: { !$0.to.isNone && plan.text.equals($0.to, output) }) else { return nil }
    return "it is the destination of task \(plan.id(of: task))"
  }

  /// Why an output path cannot be written, or nil: its folder cannot be made or written to, or
  /// the path is a folder.
  static func unwritable(_ path: String) -> String? {
    var info = stat()
    if stat(path, &info) == 0 {
      if info.st_mode & S_IFMT == S_IFDIR { return "it is a folder" }
      return access(path, W_OK) == 0 ? nil : String(cString: strerror(errno))
    }
    do {
      try AtomicFile.makeParent(of: path)
    } catch {
      return "\(error)"
    }
    let folder = (path as NSString).deletingLastPathComponent
    return access(folder.isEmpty ? "." : folder, W_OK) == 0 ? nil : String(cString: strerror(errno))
  }
}
