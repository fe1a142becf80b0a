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

        Example:
          batchdl report diff reports/last.json report.json
          batchdl report diff old.json new.json --json --fail-on failure
        """
    )

    @Argument(help: "The earlier report.")
    var old: String

    @Argument(help: "The later report.")
    var new: String

    @Flag(help: "Print JSON (format batchdl-report-diff/1).")
    var json = false

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

    func validate() throws { _ = try rules() }

    func run() throws {
      var stderr = StandardError()
      do {
        let diff = ReportDiff(
          old: try RunReport.read(path: old), new: try RunReport.read(path: new), rules: try rules())
        print(json ? diff.json.text : diff.text, terminator: json ? "\n" : "")
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
