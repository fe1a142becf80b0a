import BatchDLManifest
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
import Foundation

/// A report read back from its JSON (`batchdl-report/1`).
extension RunReport {
  public struct ReadError: Error, CustomStringConvertible {
    public var description: String
  }

  /// Parses a report written by `run --report` (or `report merge`).
  public static func read(path: String) throws(ReadError) -> RunReport {
    let data: Data
    do {
      data = try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
      throw ReadError(description: "\(path): cannot read the report: \(Self.reason(readingFailedAt: path))")
    }
    guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
      throw ReadError(description: "\(path): not a JSON report")
    }
    guard object["format"] as? String == "batchdl-report/1" else {
      throw ReadError(description: "\(path): not a batchdl report (format batchdl-report/1)")
    }
    var report = RunReport(manifest: object["manifest"] as? String ?? "")
    report.shard = object["shard"] as? String
    report.requests = (object["summary"] as? [String: Any])?["requests"] as? Int ?? 0
    report.descriptorRequests = (object["summary"] as? [String: Any])?["descriptor_requests"] as? Int ?? 0
    report.seconds = seconds(object["seconds"])
    if let notRun = object["not_run"] as? [String: Any] {
      report.notRun = (Int32(clamping: notRun["exit_status"] as? Int ?? 1), notRun["reason"] as? String ?? "")
    }
    report.prune = (object["prune"] as? [[String: Any]] ?? []).compactMap(PruneOutcome.init(json:))
    if let seconds = report.seconds, seconds > maxSeconds {
      throw ReadError(
        description: "\(path): the run's seconds, \(seconds), are out of range (at most \(Int(maxSeconds)))")
    }
    for entry in object["tasks"] as? [[String: Any]] ?? [] {
      guard let id = entry["id"] as? String, let outcome = (entry["outcome"] as? String).flatMap(TaskOutcome.init)
      else {
        throw ReadError(description: "\(path): a task without id or outcome")
      }
      var result = TaskResult(
        id: id, session: entry["session"] as? String ?? "",
        kind: (entry["kind"] as? String).flatMap(TaskKind.init) ?? .download, url: entry["url"] as? String ?? "",
        to: entry["to"] as? String, outcome: outcome, status: entry["status"] as? Int,
        size: (entry["size"] as? Int).map { Int64($0) }, sha256: entry["sha256"] as? String,
        resumedFrom: Int64(entry["resumed_from"] as? Int ?? 0), attempts: entry["attempts"] as? Int ?? 0,
        source: entry["source"] as? String)
      if let error = entry["error"] as? [String: Any] {
        result.error = (error["code"] as? String ?? "", error["message"] as? String ?? "")
        result.sourceErrors = (error["sources"] as? [[String: Any]] ?? []).compactMap { source in
          guard let url = source["url"] as? String, let code = (source["code"] as? String).flatMap(FailureCode.init)
          else { return nil }
          return SourceFailure(url: url, code: code, message: source["message"] as? String ?? "")
        }
      }
      result.sources = (entry["sources"] as? [[String: Any]] ?? []).compactMap { source in
        guard let url = source["url"] as? String, let bytes = source["bytes"] as? Int else { return nil }
        return SourceBytes(url: url, bytes: Int64(bytes))
      }
      result.seconds = seconds(entry["seconds"])
      result.started = seconds(entry["started"])
      result.httpVersion = entry["protocol"] as? String
      if let problem = outOfRange(result, bytes: result.sources.map(\.bytes)) {
        throw ReadError(description: "\(path): task \(id): \(problem)")
      }
      // What this run received: the body past the byte it resumed from.
      result.transferred = max(0, (result.size ?? 0) - result.resumedFrom)
      report.results.append(result)
    }
    return report
  }

  /// Why the file at `path` cannot be read, in the system's words (`No such file or directory`,
  /// `Permission denied`, `Is a directory`).
  static func reason(readingFailedAt path: String) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return String(cString: strerror(errno)) }
    defer { close(fd) }
    var byte: UInt8 = 0
    return Glibc.read(fd, &byte, 1) < 0 ? String(cString: strerror(errno)) : "it could not be read whole"
  }

  /// The most a report's numbers may be: ten years, a petabyte, a million attempts. Reports are
  /// input (a CI job diffs what a run wrote, or what anyone wrote): past these, sums and charts
  /// would overflow or never end.
  static let maxSeconds = 10 * 365 * 86_400.0
  static let maxBytes: Int64 = 1 << 50

  /// Why a task's numbers cannot be a run's, or nil.
  private static func outOfRange(_ result: TaskResult, bytes: [Int64]) -> String? {
    if let size = result.size, !(0...maxBytes).contains(size) { return "size \(size) is out of range" }
    if !(0...(result.size ?? maxBytes)).contains(result.resumedFrom) {
      return "resumed_from \(result.resumedFrom) is out of range"
    }
    if !(0...1_000_000).contains(result.attempts) { return "attempts \(result.attempts) is out of range" }
    if let status = result.status, !(0...999).contains(status) { return "status \(status) is out of range" }
    if bytes.contains(where: { !(0...maxBytes).contains($0) }) { return "a source's bytes are out of range" }
    for time in [result.seconds, result.started].compactMap({ $0 }) where time > maxSeconds {
      return "a time of \(time) seconds is out of range"
    }
    return nil
  }

  /// A time as `--timings` writes it (`"1.250"`); a number is taken too.
  private static func seconds(_ value: Any?) -> Double? {
    let number = (value as? String).flatMap(Double.init) ?? (value as? NSNumber)?.doubleValue
    return number.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
  }

  /// Whether the report has times (`run --timings`): `report merge` keeps them.
  public var hasTimings: Bool { seconds != nil || results.contains { $0.seconds != nil || $0.started != nil } }

  /// Joins shard reports of one manifest into one report, as an unsharded run would have written it.
  /// Times stay as each shard's run wrote them (seconds since that shard's run started); the
  /// merged run's `seconds` is the longest shard's.
  public static func merge(_ reports: [(path: String, report: RunReport)]) throws(ReadError) -> RunReport {
    guard let first = reports.first else { throw ReadError(description: "no report to merge") }
    var merged = RunReport(manifest: first.report.manifest)
    var seen: [ByteString: String] = [:]
    for (path, report) in reports {
      guard report.manifest == first.report.manifest else {
        throw ReadError(
          description:
            "\(path) is a report of \(report.manifest), not of \(first.report.manifest): only shards of one manifest merge"
        )
      }
      for result in report.results {
        if let other = seen[ByteString(result.id)] {
          throw ReadError(
            description: "task \(result.id) is in both \(other) and \(path): shards of one run never share a task")
        }
        seen[ByteString(result.id)] = path
        merged.results.append(result)
      }
      let (requests, overflow) = merged.requests.addingReportingOverflow(report.requests)
      merged.requests = overflow ? .max : requests
      let (documents, over) = merged.descriptorRequests.addingReportingOverflow(report.descriptorRequests)
      merged.descriptorRequests = over ? .max : documents
      if let seconds = report.seconds { merged.seconds = max(merged.seconds ?? 0, seconds) }
      for outcome in report.prune { merged.mergePrune(outcome) }
    }
    return merged
  }
}

extension PruneOutcome {
  /// An entry of a report's `prune` read back.
  init?(json entry: [String: Any]) {
    guard let session = entry["session"] as? String,
      let outcome = (entry["outcome"] as? String).flatMap(Outcome.init(rawValue:))
    else { return nil }
    self.init(session: session, outcome: outcome)
    reason = entry["reason"] as? String ?? (entry["error"] as? [String: Any])?["message"] as? String
    wouldDelete = entry["would_delete"] as? Int
    deleted = entry["deleted"] as? [String] ?? []
    pending = entry["pending"] as? [String] ?? []
  }
}

extension RunReport {
  /// Joins one shard's prune of a session into the merged report's: a refused prune in any shard
  /// is refused, else a skipped one is skipped, else the files deleted add up.
  mutating func mergePrune(_ outcome: PruneOutcome) {
    guard let index = prune.firstIndex(where: { $0.session == outcome.session }) else {
      prune.append(outcome)
      return
    }
    var kept = prune[index]
    let rank: [PruneOutcome.Outcome: Int] = [.pruned: 0, .skipped: 1, .refused: 2]
    if rank[outcome.outcome, default: 0] > rank[kept.outcome, default: 0] {
      kept.outcome = outcome.outcome
      kept.reason = outcome.reason
      kept.wouldDelete = outcome.wouldDelete
    }
    if outcome.outcome == .refused {
      kept.pending = (kept.pending + outcome.pending).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
    kept.deleted = (kept.deleted + outcome.deleted).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    prune[index] = kept
  }
}

/// What changed between two reports, and whether it is a regression.
public struct ReportDiff: Sendable {
  /// What counts as a regression (`--fail-on`).
  public enum Rule: String, CaseIterable, Sendable {
    /// A task that completed (or was unchanged) now fails.
    case failure
    /// A task that is new in the second report fails.
    case newFailure = "new-failure"
    /// A completed task's SHA-256 changed.
    case checksum
    /// A completed task's size changed.
    case size
    /// A task of the first report is missing from the second.
    case removed
    /// The second report is of a run that did not run (an invalid manifest, a lock held...), or
    /// has tasks that did not run to their end (`cancelled`: the run was interrupted).
    case notRun = "not-run"
    /// The second report's run refused to prune a session: it would have deleted more files than
    /// `prune.max_delete` allows (exit 6).
    case pruneLimit = "prune-limit"

    /// A task that passed and now fails, a new task that fails, a run that did not run, a prune
    /// refused by its limit. A changed size or digest of a file that completed is an update of a
    /// living mirror: shown, not failing unless asked (`--fail-on checksum`, `size`).
    public static let defaults: Set<Rule> = [.failure, .newFailure, .notRun, .pruneLimit]
  }

  public struct Change: Sendable {
    public var id: String
    public var old: TaskResult?
    public var new: TaskResult?
    /// What changed: `added`, `removed`, `pruned` (removed, and its file deleted by the new run's
    /// prune), `outcome`, `sha256`, `size`; `prune-limit` for a session
    /// whose prune was refused (its id `(prune SESSION)`).
    public var kinds: [String]
    public var regression: Rule?
    /// What a change that is not a task's says (`prune-limit`: the message).
    public var detail: String? = nil
  }

  public var old: RunReport
  public var new: RunReport
  public var changes: [Change] = []

  public var regressions: [Change] {
    changes.filter { $0.regression != nil } + (notRunRegression ? [notRunChange] : [])
  }

  /// Whether the second report's run did not run and that counts (`not-run`).
  var notRunRegression = false
  /// The change that stands for a run that did not run.
  var notRunChange: Change {
    Change(id: "(run)", old: nil, new: nil, kinds: ["not-run"], regression: .notRun)
  }
  /// Tasks of the first report missing from the second.
  public var removedCount: Int { changes.count { $0.kinds == ["removed"] } }
  /// Tasks of the first report whose files the second report's run pruned.
  public var prunedCount: Int { changes.count { $0.kinds == ["pruned"] } }

  static func passed(_ result: TaskResult) -> Bool { result.outcome == .completed || result.outcome == .unchanged }

  public init(old: RunReport, new: RunReport, rules: Set<Rule> = Rule.defaults) {
    self.old = old
    self.new = new
    notRunRegression = new.notRun != nil && rules.contains(.notRun)
    let prunedFiles = Set(new.prune.flatMap(\.deleted).map { ByteString($0) })
    let refusedFiles = Set(new.prune.filter { $0.outcome == .refused }.flatMap(\.pending).map { ByteString($0) })
    // Ids by their bytes: `café` in NFC and in NFD are two tasks (two files), never one.
    let before = Dictionary(old.results.map { (ByteString($0.id), $0) }, uniquingKeysWith: { first, _ in first })
    let after = Dictionary(new.results.map { (ByteString($0.id), $0) }, uniquingKeysWith: { first, _ in first })
    let ids = Set(before.keys).union(after.keys).sorted { $0.text.utf8.lexicographicallyPrecedes($1.text.utf8) }
    for key in ids {
      let id = key.text
      let was = before[key]
      let now = after[key]
      var change = Change(id: id, old: was, new: now, kinds: [], regression: nil)
      switch (was, now) {
      case (nil, let now?):
        change.kinds = ["added"]
        if now.outcome == .failed, rules.contains(.newFailure) { change.regression = .newFailure }
      case (let was?, nil):
        // A task gone from the manifest whose file the new run's prune deleted is `pruned`; one
        // whose file a refused prune left in place says nothing here (the prune-limit line does).
        let destination = was.to.map { ByteString($0) }
        if let destination, refusedFiles.contains(destination) { continue }
        change.kinds = [destination.map(prunedFiles.contains) == true ? "pruned" : "removed"]
        if rules.contains(.removed) { change.regression = .removed }
      case (let was?, let now?):
        let bothPassed = Self.passed(was) && Self.passed(now)
        // `completed` and `unchanged` are both a file in place: which one is not worth a line.
        if was.outcome != now.outcome && !bothPassed { change.kinds.append("outcome") }
        if bothPassed, let a = was.sha256, let b = now.sha256, a != b { change.kinds.append("sha256") }
        if bothPassed, let a = was.size, let b = now.size, a != b { change.kinds.append("size") }
        if Self.passed(was) && now.outcome == .failed && rules.contains(.failure) {
          change.regression = .failure
        } else if change.kinds.contains("sha256") && rules.contains(.checksum) {
          change.regression = .checksum
        } else if change.kinds.contains("size") && rules.contains(.size) {
          change.regression = .size
        }
      case (nil, nil):
        continue
      }
      // A task the new run did not finish (a signal stopped it: `cancelled`) did not run: the
      // mirror may lack its file, whatever the old report said (`not-run`).
      if now?.outcome == .cancelled, rules.contains(.notRun) {
        if change.kinds.isEmpty { change.kinds = ["outcome"] }
        if change.regression == nil { change.regression = .notRun }
      }
      if !change.kinds.isEmpty { changes.append(change) }
    }
    // Files the new run's prune deleted whose tasks had left the manifest before the old report
    // (a prune refused or skipped then): pruned, by path.
    let said = Set(changes.filter { $0.kinds == ["pruned"] }.compactMap { $0.old?.to }.map { ByteString($0) })
    for outcome in new.prune {
      for path in outcome.deleted where !said.contains(ByteString(path)) {
        changes.append(Change(id: path, old: nil, new: nil, kinds: ["pruned"], regression: nil))
      }
    }
    // A prune its limit refused: nothing was deleted, and the run exited 6.
    for outcome in new.prune where outcome.outcome == .refused {
      changes.append(
        Change(
          id: "(prune \(outcome.session))", old: nil, new: nil, kinds: ["prune-limit"],
          regression: rules.contains(.pruneLimit) ? .pruneLimit : nil, detail: outcome.reason))
    }
  }

  /// The diff for people.
  public var text: String {
    var out = "report diff: \(old.manifest)\n"
    if let notRun = new.notRun {
      out += "! the new report's run did not run (exit \(notRun.status)): \(notRun.reason)"
      out += notRunRegression ? "  [regression: not-run]\n" : "\n"
    }
    if let warning = removedWarning { out += warning + "\n" }
    if changes.isEmpty && new.notRun == nil { out += "no changes\n" }
    let lines = changeLines(changes) { change in
      change.regression != nil
        ? "!" : change.kinds == ["added"] ? "+" : change.kinds == ["removed"] || change.kinds == ["pruned"] ? "-" : "~"
    }
    for change in lines {
      var line = "\(change.mark) \(change.subject): \(change.text)"
      if let ids = change.ids { line += " (\(ids))" }
      if let rule = change.regression { line += "  [regression: \(rule.rawValue)]" }
      out += line + "\n"
    }
    let a = old.summary
    let b = new.summary
    out += "summary: tasks \(a.tasks) → \(b.tasks), completed \(a.completed) → \(b.completed), "
    out +=
      "unchanged \(a.unchanged) → \(b.unchanged), failed \(a.failed) → \(b.failed), deferred \(a.deferred) → \(b.deferred)\n"
    out += "regressions: \(regressions.count)\n"
    return out
  }

  /// Said when most tasks of the first report are missing from the second: ids that changed (another
  /// manifest, another `dest`), not files that went away.
  public var removedWarning: String? {
    let removed = removedCount
    guard new.notRun == nil, old.results.count >= 2, removed * 2 > old.results.count else { return nil }
    return
      "warning: \(removed) of the \(old.results.count) tasks of the old report are missing from the new one: another manifest, or ids that changed? (--fail-on removed makes this fail)"
  }

  static func describe(_ result: TaskResult?) -> String {
    guard let result else { return "absent" }
    if let error = result.error, result.outcome == .failed { return "failed (\(error.code): \(error.message))" }
    return result.outcome.rawValue
  }

  /// The diff for machines: sorted keys, one entry per changed task.
  public var json: JSON {
    func side(_ result: TaskResult?) -> JSON {
      guard let result else { return .null }
      var fields: [String: JSON] = ["outcome": .string(result.outcome.rawValue)]
      if let size = result.size { fields["size"] = .int(size) }
      if let sha256 = result.sha256 { fields["sha256"] = .string(sha256) }
      if let error = result.error {
        fields["error"] = .object(["code": .string(error.code), "message": .string(error.message)])
      }
      return .object(fields)
    }
    let entries: [JSON] = changes.map { change in
      var fields: [String: JSON] = [
        "id": .string(change.id), "changes": .array(change.kinds.map { .string($0) }), "old": side(change.old),
        "new": side(change.new),
      ]
      if let rule = change.regression { fields["regression"] = .string(rule.rawValue) }
      return .object(fields)
    }
    var object: [String: JSON] = [
      "format": .string("batchdl-report-diff/1"), "manifest": .string(old.manifest), "changes": .array(entries),
      "regressions": .int(regressions.count), "summary": .object(["old": old.summary.json, "new": new.summary.json]),
      "removed": .int(Int64(removedCount)),
    ]
    if let notRun = new.notRun {
      object["not_run"] = .object(["exit_status": .int(Int64(notRun.status)), "reason": .string(notRun.reason)])
    }
    return .object(object)
  }
}
