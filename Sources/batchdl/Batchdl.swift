import ArgumentParser
import BatchDL
import BatchDLSupport

#if canImport(Glibc)
  import Glibc
#endif

@main
struct Batchdl: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "batchdl",
    abstract: "A scriptable batch downloader driven by a YAML manifest.",
    discussion: """
      Declare sessions and their data, download and upload tasks in a manifest; check it with \
      'validate', see what would be sent with 'plan', and run it with 'run'. Running again \
      continues where the last run stopped, and a finished manifest costs no request. 'status' \
      and 'wait' follow runs and background sessions; 'report diff' and 'report merge' compare \
      and join reports.

      Exit codes: 0 every task completed, unchanged or deferred; 1 a task failed; 2 invalid \
      manifest or usage; 3 interrupted by a signal; 4 another run holds the state folder's lock; \
      5 the state folder cannot be used (damaged database, full disk); 6 a session's prune would \
      have deleted more files than its prune.max_delete allows (prune-limit): nothing was deleted.

      Example:
        batchdl validate mirror.yaml
        batchdl run mirror.yaml --report report.json
        batchdl --generate-completion-script bash > /etc/bash_completion.d/batchdl
      """,
    version: BatchDLVersion.current,
    subcommands: [
      RunCommand.self, PlanCommand.self, ValidateCommand.self, StatusCommand.self, WaitCommand.self,
      ReportCommand.self, CacheCommand.self, WorkerCommand.self,
    ]
  )

  /// Usage errors exit 2, as MANIFEST.md says (argument-parser's default is 64).
  static func main() {
    do {
      var command = try parseAsRoot()
      try command.run()
    } catch {
      let code = exitCode(for: error)
      if code == .validationFailure {
        var stderr = StandardError()
        let message = fullMessage(for: error)
        stderr.write(message + "\n")
        // The report CI diffs must not stay yesterday's: it says the run did not run, and why.
        let reason = "usage: " + (message.split(separator: "\n").first.map(String.init) ?? "invalid command line")
        if let problem = UsageFailureReport.write(
          arguments: Array(CommandLine.arguments.dropFirst()), status: ExitStatus.invalid.rawValue, reason: reason)
        {
          stderr.write(problem + "\n")
        }
        Glibc.exit(ExitStatus.invalid.rawValue)
      }
      exit(withError: error)
    }
  }
}
