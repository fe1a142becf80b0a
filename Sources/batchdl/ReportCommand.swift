import ArgumentParser
import BatchDL
import BatchDLSupport
import Foundation

struct ReportCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "report",
    abstract: "Compare, merge or show run reports.",
    subcommands: [Diff.self, Show.self, Merge.self, Html.self]
  )

  /// Runs `body`; a report that cannot be read, or an `output` that cannot be written, ends the
  /// command with exit status 2 and a line that says which.
  static func handlingErrors<T>(writing output: String? = nil, _ body: () throws -> T) throws -> T {
    var stderr = StandardError()
    do {
      return try body()
    } catch let error as RunReport.ReadError {
      stderr.write("batchdl: \(error)\n")
      throw ExitCode(ExitStatus.invalid.rawValue)
    } catch let error as SystemError {
      stderr.write("batchdl: cannot write \(output ?? "the output"): \(error)\n")
      throw ExitCode(ExitStatus.invalid.rawValue)
    }
  }

  struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "diff",
      abstract: "Show what changed between two reports; exit 1 on a regression.",
      discussion: """
        Lists tasks added and removed, outcome changes, SHA-256 and size changes. A regression \
        (exit 1) is, by default: a task that passed now fails, a new task that fails, a new \
        report of a run that did not run (an invalid manifest, a lock held), or one whose prune \
        was refused by prune.max_delete. A completed file whose checksum or size changed is an \
        update, shown but not failing. --fail-on chooses from failure, new-failure, not-run, \
        prune-limit, checksum, size, removed, and default for the four defaults \
        (comma-separated, e.g. default,checksum; 'none' for never). A diff in which \
        most tasks of the old report are missing says so.

        With one argument, a manifest, it compares the last two runs the manifest's state folder \
        keeps (report_history, default 10; every run keeps its report there, with or without \
        --report): a nightly job needs no report files of its own. --state names the state \
        folder, as for run.

        --markdown prints the diff as GitHub-flavoured Markdown for a CI job summary or a \
        pull-request comment: regressions first, at most 200 rows, then the summary counts \
        before and after. Text from the reports is escaped, so no markup or HTML gets through.

        Example:
          batchdl report diff mirror.yaml
          batchdl report diff reports/last.json report.json
          batchdl report diff old.json new.json --json --fail-on failure
          batchdl report diff reports/last.json report.json --markdown >> "$GITHUB_STEP_SUMMARY"
        """
    )

    @Argument(
      help: ArgumentHelp(
        "The earlier report and the later one; or a manifest, for its last two runs.",
        valueName: "old.json new.json | manifest"))
    var paths: [String] = []

    @Option(help: ArgumentHelp("State folder of the manifest (default: .batchdl/ beside it).", valueName: "dir"))
    var state: String?

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
        if name == "default" {
          rules.formUnion(ReportDiff.Rule.defaults)
          continue
        }
        guard let rule = ReportDiff.Rule(rawValue: String(name)) else {
          let names = ReportDiff.Rule.allCases.map(\.rawValue).joined(separator: ", ")
          throw ValidationError("unknown rule '\(name)' for --fail-on: use \(names), default or none")
        }
        rules.insert(rule)
      }
      return rules
    }

    func validate() throws {
      if json && markdown { throw ValidationError("--json and --markdown exclude each other: choose one") }
      guard paths.count == 1 || paths.count == 2 else {
        throw ValidationError(
          "name two reports (old.json new.json), or a manifest to compare its last two runs; found \(paths.count) paths"
        )
      }
      if state != nil && paths.count == 2 {
        throw ValidationError("--state goes with a manifest (report diff MANIFEST --state DIR), not with two reports")
      }
      _ = try rules()
    }

    func run() throws {
      var compared: String?
      let diff = try ReportCommand.handlingErrors {
        if paths.count == 2 {
          return ReportDiff(
            old: try RunReport.read(path: paths[0]), new: try RunReport.read(path: paths[1]), rules: try rules())
        }
        let new = try RunReport.read(manifest: paths[0], state: state, run: -1)
        let old = try RunReport.read(manifest: paths[0], state: state, run: -2)
        compared = "comparing the last two runs of \(paths[0]): \(old.path) → \(FileAccess.name(of: new.path))\n"
        return ReportDiff(old: old.report, new: new.report, rules: try rules())
      }
      if json {
        print(diff.json.text)
      } else {
        if !markdown, let compared { print(compared, terminator: "") }
        print(markdown ? diff.markdown() : diff.text, terminator: "")
      }
      if !diff.regressions.isEmpty { throw ExitCode(ExitStatus.taskFailed.rawValue) }
    }
  }

  struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "show",
      abstract: "Print a run's report from the manifest's history.",
      discussion: """
        Every run keeps its JSON report in the state folder (the last report_history runs, \
        default 10), with or without --report. --run -1 (the default) is the last run, -2 the one \
        before, and so on.

        Example:
          batchdl report show mirror.yaml
          batchdl report show mirror.yaml --run -2 > before.json
        """
    )

    @Argument(help: "The manifest.")
    var manifest: String

    @Option(
      name: .customLong("run"), parsing: .unconditional,
      help: ArgumentHelp("Which run: -1 the last, -2 the one before...", valueName: "-N"))
    var offset = -1

    @Option(help: ArgumentHelp("State folder (default: .batchdl/ beside the manifest).", valueName: "dir"))
    var state: String?

    func validate() throws {
      if offset >= 0 { throw ValidationError("--run counts back from the last run: -1 is the last, -2 the one before") }
    }

    func run() throws {
      let path = try ReportCommand.handlingErrors {
        try RunReport.read(manifest: manifest, state: state, run: offset).path
      }
      guard let data = FileManager.default.contents(atPath: path) else {
        var stderr = StandardError()
        stderr.write("batchdl: \(path): cannot read the report: \(String(cString: strerror(errno)))\n")
        throw ExitCode(ExitStatus.invalid.rawValue)
      }
      FileHandle.standardOutput.write(data)
    }
  }

  struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "merge",
      abstract: "Join the reports of a manifest's shards into one.",
      discussion: """
        Refuses reports of different manifests, and shards that share a task. The result is the \
        report an unsharded run would have written. Reports of --timings runs keep their times: \
        each task's as its shard's run wrote them, and the longest shard's run seconds.

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
      let merged = try ReportCommand.handlingErrors(writing: output) {
        let merged = try RunReport.merge(
          try reports.map { path throws(RunReport.ReadError) in (path, try RunReport.read(path: path)) })
        try AtomicFile.writeOutput(merged.json(timings: merged.hasTimings), to: output)
        return merged
      }
      print("merged \(reports.count) reports (\(merged.results.count) tasks) into \(output)")
    }
  }

  struct Html: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "html",
      abstract: "Write a report as one self-contained HTML page.",
      discussion: """
        The page needs nothing else (no network, fonts or files beside it): the manifest, shard \
        and summary counts, the failures first with their error codes and messages (and each \
        source's error for a download with mirrors), then a table of every task that sorts by a \
        click on a column's header (again: the other way) with a filter box and an outcome \
        choice. Failures come first in the table too. The summary and the failures read without \
        JavaScript; the table is drawn by a small inline script, a page of 250 rows at a time, so \
        a report of 10,000 tasks stays a page of about 2.5 MB. The address keeps the view: \
        report.html#sort=-size&outcome=failed.

        A report of 'batchdl run --timings' adds charts of the transfers in flight and the \
        throughput over the run (from each task's 'started' and 'seconds'); other reports say \
        that the charts need --timings. Every value from the report is escaped, and the page's \
        Content-Security-Policy lets nothing but its own style and script run or load.

        Example:
          batchdl run mirror.yaml --timings --report report.json
          batchdl report html report.json -o report.html
        """
    )

    @Argument(help: "A report written by 'batchdl run --report' or 'batchdl report merge'.")
    var report: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Where to write the page.", valueName: "file"))
    var output: String

    func run() throws {
      let (count, html) = try ReportCommand.handlingErrors(writing: output) {
        let report = try RunReport.read(path: report)
        let html = ReportPage(report: report).html
        try AtomicFile.writeOutput(html, to: output)
        return (report.results.count, html)
      }
      print("wrote \(output) (\(count) tasks, \(ProgressDisplay.bytes(Int64(html.utf8.count))))")
    }
  }
}
