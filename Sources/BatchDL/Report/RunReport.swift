import Foundation

/// The report of a run, built from `completed` events: stable JSON for `git diff` (keys sorted,
/// tasks sorted by id, no times unless asked) and JUnit XML for CI.
public struct RunReport: Sendable {
  public var manifest: String
  public var results: [TaskResult] = []
  public var requests = 0
  /// Wall time of the run, reported with `--timings` only.
  public var seconds: Double?
  /// `I/N` when the run was one shard of the manifest (`report merge` drops it).
  public var shard: String?

  public init(manifest: String) {
    self.manifest = manifest
  }

  public var summary: RunSummary {
    var summary = RunSummary()
    summary.requests = requests
    for result in results { summary.add(result) }
    return summary
  }

  public var sortedResults: [TaskResult] { results.sorted { $0.id < $1.id } }

  /// The JSON report (format `batchdl-report/1`), pretty-printed one task per line.
  public func json(timings: Bool) -> String {
    var head: [String: JSON] = [
      "format": .string("batchdl-report/1"), "manifest": .string(manifest), "summary": summary.json,
    ]
    if timings, let seconds { head["seconds"] = .string(TextFormat.fixed(seconds, decimals: 3)) }
    if let shard { head["shard"] = .string(shard) }
    // Keys sorted: format, manifest, [seconds,] summary, tasks.
    var out = "{\n"
    for key in head.keys.sorted() {
      out += "  "
      JSON.quote(key, into: &out)
      out += ": "
      head[key]?.write(to: &out)
      out += ",\n"
    }
    out += "  \"tasks\": ["
    let tasks = sortedResults
    for (index, result) in tasks.enumerated() {
      out += index == 0 ? "\n    " : ",\n    "
      JSON.object(result.json(timings: timings)).write(to: &out)
    }
    out += tasks.isEmpty ? "]\n}\n" : "\n  ]\n}\n"
    return out
  }

  /// JUnit XML: one test suite per session, one test case per task; failed tasks are failures,
  /// deferred ones skipped.
  public func junit(timings: Bool) -> String {
    let bySession = Dictionary(grouping: sortedResults, by: \.session)
    var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    let failures = results.count { $0.outcome == .failed }
    out += "<testsuites name=\"\(Self.escape(manifest))\" tests=\"\(results.count)\" failures=\"\(failures)\">\n"
    for session in bySession.keys.sorted() {
      let cases = bySession[session] ?? []
      let failed = cases.count { $0.outcome == .failed }
      let skipped = cases.count { $0.outcome == .deferred || $0.outcome == .cancelled }
      out +=
        "  <testsuite name=\"\(Self.escape(session))\" tests=\"\(cases.count)\" failures=\"\(failed)\" skipped=\"\(skipped)\">\n"
      for result in cases {
        let time = timings ? result.seconds.map { " time=\"\(TextFormat.fixed($0, decimals: 3))\"" } ?? "" : ""
        out += "    <testcase classname=\"\(Self.escape(session))\" name=\"\(Self.escape(result.id))\"\(time)"
        switch result.outcome {
        case .failed:
          let code = result.error?.code ?? "failed"
          let message = result.error?.message ?? ""
          out += ">\n      <failure type=\"\(Self.escape(code))\" message=\"\(Self.escape(message))\">"
          out += "\(Self.escape(result.url)): \(Self.escape(message))</failure>\n    </testcase>\n"
        case .deferred, .cancelled:
          out += ">\n      <skipped message=\"\(result.outcome.rawValue)\"/>\n    </testcase>\n"
        case .completed, .unchanged:
          out += "/>\n"
        }
      }
      out += "  </testsuite>\n"
    }
    out += "</testsuites>\n"
    return out
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
