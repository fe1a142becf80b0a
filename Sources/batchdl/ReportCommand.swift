import ArgumentParser
import BatchDL

struct ReportCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "report",
    abstract: "Compare or merge run reports.",
    subcommands: [Diff.self, Merge.self]
  )

  struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "diff",
      abstract: "Show what changed between two reports; exit 1 on a regression.",
      discussion: """
        Lists tasks added and removed, outcome changes, SHA-256 and size changes. A regression \
        (exit 1) is, by default: a task that passed now fails, a new task that fails, or a \
        completed task whose checksum or size changed. --fail-on chooses from failure, \
        new-failure, checksum, size, removed (comma-separated; 'none' for never).

        --markdown prints the diff as GitHub-flavoured Markdown for a CI job summary or a \
        pull-request comment: regressions first, at most 200 rows, then the summary counts \
        before and after. Text from the reports is escaped, so no markup or HTML gets through.

        Example:
          batchdl report diff reports/last.json report.json
          batchdl report diff old.json new.json --json --fail-on failure
          batchdl report diff reports/last.json report.json --markdown >> "$GITHUB_STEP_SUMMARY"
        """
    )

    @Argument(help: "The earlier report.")
    var old: String

    @Argument(help: "The later report.")
    var new: String

    @Flag(help: "Print JSON (format batchdl-report-diff/1).")
    var json = false

    @Flag(help: "Print GitHub-flavoured Markdown (for $GITHUB_STEP_SUMMARY or a pull-request comment).")
    var markdown = false

    @Option(help: ArgumentHelp("What counts as a regression.", valueName: "rules"))
    var failOn: String?

    func rules() throws -> Set<ReportDiff.Rule> {
      guard let failOn else { return ReportDiff.Rule.defaults }
      if failOn == "none" { return [] }
      var rules: Set<ReportDiff.Rule> = []
      for name in failOn.split(separator: ",") {
        guard let rule = ReportDiff.Rule(rawValue: String(name)) else {
          let names = ReportDiff.Rule.allCases.map(\.rawValue).joined(separator: ", ")
          throw ValidationError("unknown rule '\(name)' for --fail-on: use \(names) or none")
        }
        rules.insert(rule)
      }
      return rules
    }

    func validate() throws {
      if json && markdown { throw ValidationError("--json and --markdown exclude each other: choose one") }
      _ = try rules()
    }

    func run() throws {
      var stderr = StandardError()
      do {
        let diff = ReportDiff(
          old: try RunReport.read(path: old), new: try RunReport.read(path: new), rules: try rules())
        if json {
          print(diff.json.text)
        } else {
          print(markdown ? diff.markdown() : diff.text, terminator: "")
        }
        if !diff.regressions.isEmpty { throw ExitCode(ExitStatus.taskFailed.rawValue) }
      } catch let error as RunReport.ReadError {
        stderr.write("batchdl: \(error)\n")
        throw ExitCode(ExitStatus.invalid.rawValue)
      }
    }
  }

  struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "merge",
      abstract: "Join the reports of a manifest's shards into one.",
      discussion: """
        Refuses reports of different manifests, and shards that share a task. The result is the \
        report an unsharded run would have written.

        Example:
          batchdl report merge report-0.json report-1.json report-2.json -o report.json
        """
    )

    @Argument(help: "Shard reports.")
    var reports: [String]

    @Option(name: .shortAndLong, help: ArgumentHelp("Where to write the merged report.", valueName: "file"))
    var output: String

    func validate() throws {
      if reports.isEmpty { throw ValidationError("name the shard reports to merge") }
    }

    func run() throws {
      var stderr = StandardError()
      do {
        let merged = try RunReport.merge(
          try reports.map { path throws(RunReport.ReadError) in (path, try RunReport.read(path: path)) })
        try AtomicFile.write(merged.json(timings: false), to: output)
        print("merged \(reports.count) reports (\(merged.results.count) tasks) into \(output)")
      } catch let error as RunReport.ReadError {
        stderr.write("batchdl: \(error)\n")
        throw ExitCode(ExitStatus.invalid.rawValue)
      }
    }
  }
}
