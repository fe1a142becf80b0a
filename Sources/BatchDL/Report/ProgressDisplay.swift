import BatchDLSupport
import BatchDLTransfer
import Foundation

/// How a run shows progress (`--progress`).
public enum ProgressMode: String, CaseIterable, Sendable {
  /// Bars on a terminal, lines otherwise.
  case auto
  /// Bars even when standard error is not a terminal.
  case always
  /// Lines only.
  case never
}

/// What the run prints while it works: live bars on a terminal (each active transfer and the
/// total, with rate and ETA, redrawn in place at most ten times a second by a `LiveArea`),
/// otherwise one line per finished task and a summary every ten seconds, so that cron mail stays
/// readable.
///
/// Progress and per-task lines go to standard output; failures, warnings and errors of the run
/// itself to standard error, failures and errors even with `--quiet`: a crontab's `>/dev/null`
/// keeps them in the mail. Off a terminal, a task that is unchanged prints no line (a nightly no-op
/// mails nothing but its summary) unless `verbose`.
public final class ProgressDisplay {
  public struct Line: Sendable {
    public var name: String
    public var received: Int64
    public var expected: Int64
  }

  private let bars: Bool
  private let quiet: Bool
  private let verbose: Bool
  private var out = BufferedOutput(descriptor: 1)
  private var err = BufferedOutput(descriptor: 2)
  /// The bars on standard error; the signal handler prints through it too.
  public let area: LiveArea
  private let start = Engine.now()
  private var lastDraw: UInt64 = 0
  private var lastSummary: UInt64
  private var rateSamples: [(time: UInt64, bytes: Int64)] = []
  private let totalTasks: Int
  private var doneTasks = 0
  private var failedTasks = 0
  private var finishedBytes: Int64 = 0
  private var activeBytes: Int64 = 0
  private var expectedBytes: Int64 = 0
  /// The bytes the run's transfers are expected to bring, when every one's size is known in
  /// advance (pinned or listed: `Plan.expectedSize`): the total line says "of" it, and its ETA
  /// counts from it.
  public var plannedBytes: Int64?
  /// Failures not printed yet: one line per cause when the run ends (`FailureGroups`).
  private var failures = FailureGroups()

  public init(
    mode: ProgressMode, quiet: Bool, verbose: Bool = false, totalTasks: Int, area: LiveArea = LiveArea(descriptor: 2)
  ) {
    self.area = area
    let terminal = isatty(2) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    bars = !quiet && (mode == .always || (mode == .auto && terminal))
    self.quiet = quiet
    self.verbose = verbose || isatty(1) == 1
    self.totalTasks = totalTasks
    lastSummary = start
  }

  /// A task ended; prints its line (failures even when quiet).
  public func taskEnded(_ result: TaskResult) {
    doneTasks += 1
    if result.outcome == .failed { failedTasks += 1 }
    if result.outcome == .completed, result.source == "network" { finishedBytes += result.size ?? 0 }
    let failed = result.outcome == .failed
    guard failed || (!quiet && (verbose || result.outcome != .unchanged)) else { return }
    if failed, let error = result.error {
      failures.add(
        name: result.id, code: error.code, message: error.message, names: [result.id, result.to ?? "", result.url])
      return
    }
    var line = TextFormat.padded(result.outcome.rawValue, to: 10) + result.id
    if let error = result.error {
      line += "  \(error.code): \(error.message)"
    } else if let size = result.size {
      line += "  " + Self.bytes(size)
      if let source = result.source, source != "network" { line += " (\(source))" }
    }
    printAboveBars(line, toErrors: failed)
  }

  /// A message of the run's progress (a retry, a source set aside), on standard output.
  public func note(_ text: String) {
    guard !quiet else { return }
    printAboveBars(text)
  }

  /// A message the run prints even with `--quiet`, on standard output: what it deleted (a cron
  /// job's mail says so).
  public func notice(_ text: String) {
    printAboveBars(text)
  }

  /// A warning or an error of the run itself (a hook that failed, a cache that cannot be written),
  /// on standard error, even with `--quiet`.
  public func problem(_ text: String) {
    printAboveBars(text, toErrors: true)
  }

  /// The failures collected so far, one line per cause, on standard error.
  public func printFailures() {
    for line in failures.lines { printAboveBars(line, toErrors: true) }
    failures.removeAll()
  }

  private func printAboveBars(_ line: String, toErrors: Bool = false) {
    if bars {
      // The bars are on standard error: lines above them go there too.
      area.print([line])
    } else if toErrors {
      out.flush()
      err.write(line + "\n")
      err.flush()
    } else {
      out.write(line + "\n")
      out.flush()
    }
  }

  /// Called about ten times a second with the transfers in flight.
  public func tick(active: [Line]) {
    let now = Engine.now()
    activeBytes = active.reduce(0) { $0 + $1.received }
    expectedBytes = active.reduce(0) { $0 + max(0, $1.expected) }
    let total = finishedBytes + activeBytes
    rateSamples.append((now, total))
    while let first = rateSamples.first, now &- first.time > 3000 { rateSamples.removeFirst() }
    if bars {
      guard now &- lastDraw >= 100 else { return }
      lastDraw = now
      draw(active: active)
    } else if !quiet, now &- lastSummary >= 10_000 {
      lastSummary = now
      let of = plannedBytes.map { " of " + Self.bytes($0) } ?? ""
      out.write("progress: \(doneTasks)/\(totalTasks) tasks, \(Self.bytes(total))\(of), \(Self.bytes(rate))/s\n")
      out.flush()
    }
  }

  /// Bytes per second over the last few seconds.
  private var rate: Int64 {
    guard let first = rateSamples.first, let last = rateSamples.last, last.time > first.time else { return 0 }
    return (last.bytes - first.bytes) * 1000 / Int64(last.time - first.time)
  }

  /// The most transfers with a bar of their own; the rest are counted on one line.
  static let maximumBars = 8

  private func draw(active: [Line]) {
    area.draw(frame(active: active, size: area.size))
  }

  /// The bar lines for `active` on a terminal of `size`: one per transfer (the first eight by name),
  /// a line counting the others, and the total, never more than the rows above the cursor's and
  /// never wider than a line (long names lose their start, so that the file name stays).
  func frame(active: [Line], size: LiveArea.Size) -> [String] {
    var lines: [String] = []
    let width = 24
    let columns = max(1, size.columns - 1)
    // Rows for bars and the "more" line: the total and the cursor's line take two.
    let room = max(0, size.rows - 2)
    var shown = min(active.count, Self.maximumBars, room)
    if shown < active.count { shown = min(shown, max(0, room - 1)) }
    for line in active.sorted(by: { $0.name < $1.name }).prefix(shown) {
      var text = "  "
      if line.expected > 0 {
        let fraction = min(1, Double(line.received) / Double(line.expected))
        text += Self.bar(fraction, width: width) + " " + TextFormat.rightAligned(Int(fraction * 100), width: 3) + "% "
      } else {
        text += "[" + String(repeating: " ", count: width) + "]      "
      }
      text += TextFormat.padded(Self.bytes(line.received), to: 10) + " "
      let name = TerminalText.sanitized(line.name)
      let left = columns - TerminalText.width(of: text)
      lines.append(
        left >= 8
          ? text + TerminalText.truncatedKeepingEnd(name, to: left) : TerminalText.truncated(text + name, to: columns))
    }
    if shown < active.count && room > shown { lines.append("  … and \(active.count - shown) more") }
    let fraction = totalTasks > 0 ? Double(doneTasks) / Double(totalTasks) : 1
    var total = Self.bar(fraction, width: width) + " \(doneTasks)/\(totalTasks) tasks  "
    total += Self.bytes(finishedBytes + activeBytes)
    if let plannedBytes { total += " of " + Self.bytes(plannedBytes) }
    total += "  " + Self.bytes(rate) + "/s"
    let remainingBytes = plannedBytes.map { $0 - finishedBytes - activeBytes } ?? (expectedBytes - activeBytes)
    if rate > 0, remainingBytes > 0 { total += "  ETA " + Self.duration(Double(remainingBytes) / Double(rate)) }
    if failedTasks > 0 { total += "  \(failedTasks) failed" }
    lines.append(TerminalText.truncated(total, to: columns))
    return lines
  }

  /// The closing line: counts, bytes and time.
  public func finish(summary: RunSummary) {
    printFailures()
    if bars { area.clear() }
    let seconds = Double(Engine.now() &- start) / 1000
    var line = "done: \(summary.completed) completed"
    if summary.unchanged > 0 { line += ", \(summary.unchanged) unchanged" }
    if summary.deferred > 0 { line += ", \(summary.deferred) deferred" }
    if summary.cancelled > 0 { line += ", \(summary.cancelled) cancelled" }
    line +=
      ", \(summary.failed) failed; \(Self.bytes(summary.bytes)) in " + TextFormat.fixed(seconds, decimals: 1) + " s"
    if (!quiet || summary.failed > 0) && summary.tasks > 0 {
      out.write(line + "\n")
    }
    out.flush()
  }

  /// Erases the bars for good (a run that ends without its closing line).
  public func close() {
    printFailures()
    area.clear(close: true)
  }

  static func bar(_ fraction: Double, width: Int) -> String {
    let filled = Int((fraction * Double(width)).rounded(.down))
    return "[" + String(repeating: "=", count: filled) + String(repeating: " ", count: max(0, width - filled)) + "]"
  }

  /// `1.5 MB`, `312 B`: powers of 1024, as the manifest writes sizes.
  public static func bytes(_ count: Int64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"]
    var value = Double(count)
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
      value /= 1024
      unit += 1
    }
    return unit == 0 ? "\(count) B" : TextFormat.fixed(value, decimals: 1) + " " + units[unit]
  }

  static func duration(_ seconds: Double) -> String {
    let total = Int(seconds.rounded())
    return total >= 3600
      ? "\(total / 3600):" + TextFormat.zeroPadded(total / 60 % 60, width: 2) + ":"
        + TextFormat.zeroPadded(total % 60, width: 2)
      : "\(total / 60):" + TextFormat.zeroPadded(total % 60, width: 2)
  }
}
