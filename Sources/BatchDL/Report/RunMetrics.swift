import Foundation

/// `run --metrics FILE`: the run in Prometheus's text exposition format (version 0.0.4), for
/// node_exporter's textfile collector. Every sample carries the manifest's path as `manifest`
/// (and a shard's index as `shard`), so that one collector folder can hold the files of several
/// manifests.
public struct RunMetrics: Sendable {
  /// The manifest's path as given, and the shard (`index/count`), if any.
  public var manifest: String
  public var shard: String?
  /// Each session's tasks of this run, in manifest order.
  public var sessions: [(name: String, summary: RunSummary)] = []
  public var seconds: Double = 0
  public var exitCode: Int32 = 0
  /// When the run ended, and when the last run that ended with exit status 0 did (Unix seconds);
  /// 0 for "never".
  public var ended: Double = 0
  public var lastSuccess: Double = 0

  public init(manifest: String, shard: String? = nil) {
    self.manifest = manifest
    self.shard = shard
  }

  /// A session's tasks by outcome, in a fixed order.
  static func outcomes(_ summary: RunSummary) -> [(name: String, count: Int)] {
    [
      ("completed", summary.completed), ("unchanged", summary.unchanged), ("failed", summary.failed),
      ("deferred", summary.deferred), ("cancelled", summary.cancelled),
    ]
  }

  /// The file's text.
  public var text: String {
    var out = ""
    let run = labels([])
    func family(_ name: String, _ help: String) {
      out += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n"
    }
    family("batchdl_tasks", "Tasks of the last run, by session and outcome.")
    for (session, summary) in sessions {
      for outcome in Self.outcomes(summary) {
        out += "batchdl_tasks\(labels([("session", session), ("outcome", outcome.name)])) \(outcome.count)\n"
      }
    }
    family("batchdl_transferred_bytes", "Body bytes received from the network in the last run, by session.")
    for (session, summary) in sessions {
      out += "batchdl_transferred_bytes\(labels([("session", session)])) \(summary.bytes)\n"
    }
    family("batchdl_run_duration_seconds", "How long the last run took.")
    out += "batchdl_run_duration_seconds\(run) \(Self.number(seconds))\n"
    family(
      "batchdl_exit_code",
      "Exit status of the last run: 0 every task completed, unchanged or deferred; 1 a task failed; 3 interrupted.")
    out += "batchdl_exit_code\(run) \(exitCode)\n"
    family("batchdl_last_run_timestamp_seconds", "When the last run ended, in seconds since the Unix epoch.")
    out += "batchdl_last_run_timestamp_seconds\(run) \(Self.number(ended))\n"
    family(
      "batchdl_last_success_timestamp_seconds",
      "When the last run with exit status 0 ended, in seconds since the Unix epoch (0: none yet); kept across runs.")
    out += "batchdl_last_success_timestamp_seconds\(run) \(Self.number(lastSuccess))\n"
    return out
  }

  /// The last-success time an earlier run of the same manifest (and shard) wrote in `text`, or 0.
  public func lastSuccess(in text: String) -> Double {
    let prefix = "batchdl_last_success_timestamp_seconds" + labels([]) + " "
    for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
      return Double(line.dropFirst(prefix.count)).flatMap { $0.isFinite && $0 >= 0 ? $0 : nil } ?? 0
    }
    return 0
  }

  /// `{manifest="...",shard="...",extra...}`, values escaped as the format asks.
  private func labels(_ extra: [(String, String)]) -> String {
    var pairs = [("manifest", manifest)]
    if let shard { pairs.append(("shard", shard)) }
    pairs += extra
    return "{" + pairs.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "}"
  }

  /// A label value with `\`, `"` and line feeds escaped.
  static func escape(_ value: String) -> String {
    var out = ""
    for character in value {
      switch character {
      case "\\": out += "\\\\"
      case "\"": out += "\\\""
      case "\n": out += "\\n"
      default: out.append(character)
      }
    }
    return out
  }

  /// Seconds with millisecond precision, without an exponent.
  static func number(_ value: Double) -> String {
    let milliseconds = (value * 1000).rounded()
    guard milliseconds.isFinite, abs(milliseconds) < 9e15 else { return "0" }
    let whole = Int64(milliseconds)
    let sign = whole < 0 ? "-" : ""
    let magnitude = whole.magnitude
    let fraction = magnitude % 1000
    let padded = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
    return "\(sign)\(magnitude / 1000).\(padded)"
  }
}
