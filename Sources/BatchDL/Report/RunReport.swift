import BatchDLPlan
import BatchDLSupport
import BatchDLTransfer
import Foundation

/// A session's `on_finished` command as it ended.
public struct HookResult: Sendable, Equatable {
  public var session: String
  /// Its exit status (non-zero: it failed; 127 when `/bin/sh` could not run it, 128+N when signal N
  /// ended it).
  public var status: Int32

  public init(session: String, status: Int32) {
    self.session = session
    self.status = status
  }
}

/// What a session's `prune:` did in a run: listed as `prune`, and its files as `pruned`.
public struct PruneOutcome: Sendable, Equatable {
  public enum Outcome: String, Sendable {
    /// The files no task names any more were deleted (maybe none).
    case pruned
    /// Not attempted: `--no-prune`, an interrupted run, or a task or descriptor of the session
    /// failed (`reason`).
    case skipped
    /// More files than `max_delete` allows: nothing was deleted (`prune-limit`).
    case refused
  }

  public var session: String
  public var outcome: Outcome
  /// Paths deleted (relative to the manifest's folder, as tasks' `to`), sorted.
  public var deleted: [String] = []
  /// Why it was skipped or refused.
  public var reason: String?
  /// Files a refused prune would have deleted.
  public var wouldDelete: Int?
  /// The files a refused prune would have deleted (as `deleted`), sorted: `report diff` says
  /// nothing of their tasks, which are gone from the manifest while the files stay.
  public var pending: [String] = []

  public init(session: String, outcome: Outcome) {
    self.session = session
    self.outcome = outcome
  }

  var json: JSON {
    var fields: [String: JSON] = ["session": .string(session), "outcome": .string(outcome.rawValue)]
    switch outcome {
    case .pruned: fields["deleted"] = .array(deleted.map { .string($0) })
    case .skipped: fields["reason"] = .string(reason ?? "")
    case .refused:
      fields["error"] = .object(["code": .string("prune-limit"), "message": .string(reason ?? "")])
      fields["would_delete"] = .int(wouldDelete ?? 0)
      fields["pending"] = .array(pending.map { .string($0) })
    }
    return .object(fields)
  }
}

/// The report of a run, built from `completed` events: stable JSON for `git diff` (keys sorted,
/// tasks sorted by id, no times unless asked) and JUnit XML for CI.
public struct RunReport: Sendable {
  public var manifest: String
  public var results: [TaskResult] = []
  public var requests = 0
  /// Of `requests`, those of descriptors (`RunSummary.descriptorRequests`).
  public var descriptorRequests = 0
  /// Wall time of the run, reported with `--timings` only.
  public var seconds: Double?
  /// `I/N` when the run was one shard of the manifest (`report merge` drops it).
  public var shard: String?
  /// Documents fetched before planning (`metalink:` by URL): listed as `descriptors`.
  public var descriptors: [PlannedDescriptor] = []
  /// The sessions' `on_finished` commands that ran, with their exit status (127: it could not
  /// start): listed as `hooks`.
  public var hooks: [HookResult] = []
  /// Why nothing ran (an invalid manifest, a lock held, a state folder that cannot be used), with
  /// the exit status: listed as `not_run`, so that a CI step never diffs a stale report.
  public var notRun: (status: Int32, reason: String)?
  /// What each session with `prune:` did (listed as `prune`, with every file deleted under
  /// `pruned`); empty when no session of the run prunes, and then neither key is written.
  public var prune: [PruneOutcome] = []

  public init(manifest: String) {
    self.manifest = manifest
  }

  /// Writes, atomically, the report of a run that did not run: no task, and why.
  public static func writeNotRun(to path: String, manifest: String, status: Int32, reason: String) throws(SystemError) {
    var report = RunReport(manifest: manifest)
    report.notRun = (status, reason)
    try AtomicFile.writeOutput(report.json(timings: false), to: path)
  }

  public var summary: RunSummary {
    var summary = RunSummary()
    summary.requests = requests
    summary.descriptorRequests = descriptorRequests
    for result in results { summary.add(result) }
    return summary
  }

  public var sortedResults: [TaskResult] { results.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) } }

  /// The JSON report (format `batchdl-report/1`), pretty-printed one task per line.
  public func json(timings: Bool) -> String {
    var out = ""
    writeJSON(tasks: sortedResults, summary: summary, timings: timings, to: &out)
    return out
  }

  /// The JSON report with `tasks` (sorted by id) in place of `results`, written task by task: a
  /// run keeps its results compact and makes each one whole only here.
  func writeJSON(
    tasks: some Sequence<TaskResult>, summary: RunSummary, timings: Bool, to out: inout some TextOutputStream
  ) {
    var head: [String: JSON] = [
      "format": .string("batchdl-report/1"), "manifest": .string(manifest), "summary": summary.json,
    ]
    if timings, let seconds { head["seconds"] = .string(TextFormat.fixed(seconds, decimals: 3)) }
    if let shard { head["shard"] = .string(shard) }
    if !descriptors.isEmpty {
      head["descriptors"] = .array(
        descriptors.map { descriptor in
          var fields: [String: JSON] = [
            "url": .string(descriptor.url), "outcome": .string(descriptor.outcome.rawValue),
          ]
          if let sha256 = descriptor.sha256 { fields["sha256"] = .string(sha256) }
          return .object(fields)
        })
    }
    if let notRun {
      head["not_run"] = .object(["exit_status": .int(Int64(notRun.status)), "reason": .string(notRun.reason)])
    }
    if !hooks.isEmpty {
      head["hooks"] = .array(
        hooks.map { .object(["session": .string($0.session), "exit_status": .int(Int64($0.status))]) })
    }
    if !prune.isEmpty {
      head["prune"] = .array(prune.map(\.json))
      head["pruned"] = .array(
        prune.flatMap(\.deleted).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { .string($0) })
    }
    // Keys sorted: [descriptors,] format, [hooks,] manifest, [not_run,] [prune, pruned,] [seconds,]
    // [shard,] summary, tasks.
    var text = "{\n"
    for key in head.keys.sorted() {
      text += "  "
      JSON.quote(key, into: &text)
      text += ": "
      head[key]?.write(to: &text)
      text += ",\n"
    }
    text += "  \"tasks\": ["
    var first = true
    for result in tasks {
      text += first ? "\n    " : ",\n    "
      first = false
      JSON.object(result.json(timings: timings)).write(to: &text)
      if text.utf8.count >= 1 << 16 {
        out.write(text)
        text.removeAll(keepingCapacity: true)
      }
    }
    text += first ? "]\n}\n" : "\n  ]\n}\n"
    out.write(text)
  }

  /// JUnit XML: one test suite per session, one test case per task; failed tasks are failures,
  /// deferred ones skipped.
  public func junit(timings: Bool) -> String {
    let sorted = sortedResults
    var out = ""
    writeJUnit(
      tasks: { session in sorted.filter { session == nil || $0.session == session } }, timings: timings, to: &out)
    return out
  }

  /// JUnit XML of the tasks `tasks(nil)` gives (sorted by id); `tasks(name)` gives one session's.
  func writeJUnit<Tasks: Sequence<TaskResult>>(
    tasks: (String?) -> Tasks, timings: Bool, to out: inout some TextOutputStream
  ) {
    var counts: [String: (tests: Int, failed: Int, skipped: Int)] = [:]
    var total = 0
    var failures = 0
    for result in tasks(nil) {
      total += 1
      var count = counts[result.session] ?? (0, 0, 0)
      count.tests += 1
      if result.outcome == .failed {
        count.failed += 1
        failures += 1
      }
      if result.outcome == .deferred || result.outcome == .cancelled { count.skipped += 1 }
      counts[result.session] = count
    }
    var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    text += "<testsuites name=\"\(Self.escape(manifest))\" tests=\"\(total)\" failures=\"\(failures)\">\n"
    for session in counts.keys.sorted() {
      let count = counts[session] ?? (0, 0, 0)
      text +=
        "  <testsuite name=\"\(Self.escape(session))\" tests=\"\(count.tests)\" failures=\"\(count.failed)\" skipped=\"\(count.skipped)\">\n"
      for result in tasks(session) {
        let time = timings ? result.seconds.map { " time=\"\(TextFormat.fixed($0, decimals: 3))\"" } ?? "" : ""
        text += "    <testcase classname=\"\(Self.escape(session))\" name=\"\(Self.escape(result.id))\"\(time)"
        switch result.outcome {
        case .failed:
          let code = result.error?.code ?? "failed"
          let message = result.error?.message ?? ""
          text += ">\n      <failure type=\"\(Self.escape(code))\" message=\"\(Self.escape(message))\">"
          text += "\(Self.escape(result.url)): \(Self.escape(message))</failure>\n    </testcase>\n"
        case .deferred, .cancelled:
          text += ">\n      <skipped message=\"\(result.outcome.rawValue)\"/>\n    </testcase>\n"
        case .completed, .unchanged:
          text += "/>\n"
        }
        if text.utf8.count >= 1 << 16 {
          out.write(text)
          text.removeAll(keepingCapacity: true)
        }
      }
      text += "  </testsuite>\n"
    }
    text += "</testsuites>\n"
    out.write(text)
  }

  static func escape(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&apos;"
      default:
        if scalar.value < 0x20 && scalar != "\n" && scalar != "\t" { continue }
        out.unicodeScalars.append(scalar)
      }
    }
    return out
  }
}

/// `--events FILE`: one JSON object per line, flushed as events happen.
public final class EventLog {
  private let output: BufferedOutput
  private let descriptor: Int32
  private let start: UInt64

  /// Creates (or truncates) `path`.
  public init(path: String) throws(SystemError) {
    try AtomicFile.makeParent(of: path)
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw SystemError("create \(path)") }
    descriptor = fd
    output = BufferedOutput(descriptor: fd)
    start = Engine.now()
  }

  deinit {
    output.flush()
    close(descriptor)
  }

  public func record(_ event: RunEvent) {
    var fields = event.json
    let elapsed = Double(Engine.now() &- start) / 1000
    fields["time"] = .string(TextFormat.fixed(elapsed, decimals: 3))
    output.write(JSON.object(fields).text + "\n")
    if case .progress = event { return }
    output.flush()
  }

  public func flush() { output.flush() }
}
