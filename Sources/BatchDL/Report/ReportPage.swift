import BatchDLManifest
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
import Crypto
import Foundation

/// `report html`: a report as one HTML page that needs nothing else (no fonts, scripts, images or
/// styles from elsewhere): the summary, the failures, a chart of the transfers over time (for
/// `--timings` reports) and a table of every task.
///
/// Everything but the table is written here, so that it reads with JavaScript off. The table is
/// drawn by a small inline script from the tasks embedded as JSON, one page of rows at a time:
/// 10,000 tasks stay a page of about 2.5 MB that sorts in a moment, where a `<tr>` each would be
/// several times that and slow to sort. Every value from the report is escaped (HTML text and
/// attributes here; JSON with `<`, `>` and `&` as `\u` escapes inside the script element; the
/// script puts values into the page with `textContent` only), and the page's Content-Security-Policy
/// allows no source at all and only its own style and script, by hash: markup that slipped through
/// could neither load nor run anything.
public struct ReportPage {
  public var report: RunReport
  /// Failures of one error code listed in the page itself; the table has all of them.
  public static let failureLimit = 200
  /// Up to this many failures, every code's list is open; above, the codes show their counts.
  public static let openFailures = 40

  public init(report: RunReport) {
    self.report = report
  }

  /// How the table orders outcomes by default: failures first.
  static let outcomeOrder: [TaskOutcome] = [.failed, .cancelled, .deferred, .completed, .unchanged]

  /// The page.
  public var html: String {
    let results = report.results.map(Self.masked).sorted { a, b in
      let x = Self.rank(a.outcome)
      let y = Self.rank(b.outcome)
      return x != y ? x < y : a.id < b.id
    }
    let summary = report.summary
    var out = "<!DOCTYPE html>\n<html lang=\"en\" class=\"nojs\">\n<head>\n<meta charset=\"utf-8\">\n"
    out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
    out += "style-src '\(Self.styleHash)'; script-src '\(Self.scriptHash)'; base-uri 'none'; form-action 'none'\">\n"
    out += "<meta name=\"generator\" content=\"batchdl \(Self.escape(BatchDLVersion.current))\">\n"
    out += "<title>batchdl report: \(Self.escape(Redactor().text(report.manifest)))</title>\n"
    out += "<style>\(Self.style)</style>\n</head>\n<body>\n"
    writeHeader(summary, to: &out)
    writeFailures(results.filter { $0.outcome == .failed }, to: &out)
    writeChart(to: &out)
    writeTable(results, summary: summary, to: &out)
    out += "</body>\n</html>\n"
    return out
  }

  /// `result` with URL user-info masked wherever it could be (run reports mask it already; a
  /// report made by other means may not have).
  static func masked(_ result: TaskResult) -> TaskResult {
    let redactor = Redactor()
    var result = result
    result.id = redactor.text(result.id)
    result.url = redactor.url(result.url)
    result.to = result.to.map(redactor.text)
    result.error = result.error.map { ($0.code, redactor.text($0.message)) }
    result.sourceErrors = result.sourceErrors.map {
      SourceFailure(url: redactor.url($0.url), code: $0.code, message: redactor.text($0.message))
    }
    return result
  }

  static func rank(_ outcome: TaskOutcome) -> Int { outcomeOrder.firstIndex(of: outcome) ?? outcomeOrder.count }

  private func writeHeader(_ summary: RunSummary, to out: inout String) {
    out +=
      "<header>\n<h1>batchdl report <span class=\"manifest\">\(Self.escape(Redactor().text(report.manifest)))</span></h1>\n"
    var facts = ["\(summary.tasks) task\(summary.tasks == 1 ? "" : "s")", "\(summary.requests) requests"]
    if let shard = report.shard { facts.append("shard \(Self.escape(shard))") }
    if let seconds = report.seconds { facts.append("run took \(TextFormat.fixed(seconds, decimals: 3)) s") }
    out += "<p class=\"facts\">\(facts.joined(separator: " · "))</p>\n<dl class=\"counts\">\n"
    let counts: [(String, Int)] = [
      ("completed", summary.completed), ("unchanged", summary.unchanged), ("failed", summary.failed),
      ("deferred", summary.deferred), ("cancelled", summary.cancelled),
    ]
    for (name, count) in counts {
      let state = count == 0 ? " zero" : ""
      out += "<div class=\"count \(name)\(state)\"><dt>\(name)</dt><dd>\(count)</dd></div>\n"
    }
    out += "<div class=\"count bytes\"><dt>received</dt>"
    out += "<dd title=\"\(summary.bytes) bytes\">\(ProgressDisplay.bytes(summary.bytes))</dd></div>\n"
    if let seconds = report.seconds {
      out += "<div class=\"count seconds\"><dt>seconds</dt><dd>\(TextFormat.fixed(seconds, decimals: 1))</dd></div>\n"
    }
    out += "</dl>\n</header>\n"
  }

  /// The failures by error code, the commonest first; each code's list opens on a click when
  /// there are many (a `<details>`: no script needed), and shows at most `failureLimit` tasks.
  private func writeFailures(_ failures: [TaskResult], to out: inout String) {
    out += "<section id=\"failures\">\n<h2>Failures (\(failures.count))</h2>\n"
    guard !failures.isEmpty else {
      out += "<p class=\"none\">No task failed.</p>\n</section>\n"
      return
    }
    var groups: [String: [TaskResult]] = [:]
    for failure in failures { groups[failure.error?.code ?? "failed", default: []].append(failure) }
    let ordered = groups.sorted { $0.value.count != $1.value.count ? $0.value.count > $1.value.count : $0.key < $1.key }
    let open = failures.count <= Self.openFailures ? " open" : ""
    if open.isEmpty {
      out += "<p class=\"none\">By error code, the commonest first: open one to see its tasks.</p>\n"
    }
    for (code, members) in ordered {
      // The commonest message of the code heads its list; tasks repeat only other messages.
      var messages: [String: Int] = [:]
      for member in members { messages[member.error?.message ?? "", default: 0] += 1 }
      let common = messages.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }?.key ?? ""
      out += "<details class=\"group\"\(open)><summary><code class=\"code\">\(Self.escape(code))</code> "
      out += "<span class=\"times\">× \(members.count)</span> <span class=\"message\">\(Self.escape(common))</span>"
      out += "</summary>\n<ol class=\"failures\">\n"
      for failure in members.prefix(Self.failureLimit) {
        out += "<li><span class=\"id\">\(Self.escape(failure.id))</span>"
        if let status = failure.status { out += " <span class=\"status\">HTTP \(status)</span>" }
        if failure.attempts > 1 { out += " <span class=\"attempts\">after \(failure.attempts) attempts</span>" }
        if let message = failure.error?.message, message != common, !message.isEmpty {
          out += " <span class=\"message\">\(Self.escape(message))</span>"
        }
        out += "<div class=\"url\">\(Self.escape(failure.url))</div>"
        if !failure.sourceErrors.isEmpty {
          out += "\n<ul class=\"sources\">\n"
          for source in failure.sourceErrors {
            out += "<li><code>\(Self.escape(source.code.rawValue))</code> "
            out += "<span class=\"url\">\(Self.escape(source.url))</span> "
            out += "<span class=\"message\">\(Self.escape(source.message))</span></li>\n"
          }
          out += "</ul>"
        }
        out += "</li>\n"
      }
      out += "</ol>\n"
      if members.count > Self.failureLimit {
        out += "<p class=\"more\">\(members.count - Self.failureLimit) more are in the table below.</p>\n"
      }
      out += "</details>\n"
    }
    out += "</section>\n"
  }

  private func writeChart(to out: inout String) {
    out += "<section id=\"timeline\">\n<h2>Transfers over time</h2>\n"
    guard let timeline = TransferTimeline(report.results, runSeconds: report.seconds) else {
      let why =
        report.results.contains { $0.seconds != nil }
        ? "No task in this report has a start time: none needed a transfer (all unchanged or cached), "
          + "or the report is older than start times."
        : "This report has no times."
      out += "<p class=\"none\">\(why) The chart needs a report of <code>batchdl run --timings</code>.</p>\n"
      out += "</section>\n"
      return
    }
    timeline.write(to: &out)
    out += "</section>\n"
  }

  private func writeTable(_ results: [TaskResult], summary: RunSummary, to out: inout String) {
    let started = results.contains { $0.started != nil }
    let ended = results.contains { $0.seconds != nil }
    var columns: [(name: String, label: String, numeric: Bool)] = [
      ("id", "id", false), ("session", "session", false), ("kind", "kind", false), ("outcome", "outcome", false),
      ("status", "status", true), ("size", "size", true), ("sha256", "sha256", false),
      ("attempts", "attempts", true),
    ]
    if started {
      columns += [("started", "start s", true), ("took", "took s", true)]
    } else if ended {
      columns.append(("ended", "end s", true))
    }
    columns.append(("url", "url → to", false))
    out += "<section id=\"tasks\">\n<h2>Tasks (\(results.count))</h2>\n"
    let firstPage = Self.firstPage(results)
    out += "<noscript><p class=\"none\">Without JavaScript, the table shows the first \(firstPage.count) "
    out += "of the \(results.count) tasks, failures first, without sorting, filtering or paging; the report's "
    out += "JSON has every task.</p></noscript>\n"
    out += "<div class=\"needs-js\">\n<div class=\"tools\">\n"
    out +=
      "<input id=\"filter\" type=\"search\" placeholder=\"Filter: id, URL, error…\" aria-label=\"Filter the tasks\">\n"
    out += "<select id=\"outcome\" aria-label=\"Outcome\"><option value=\"\">all outcomes</option>"
    let counts: [TaskOutcome: Int] = [
      .failed: summary.failed, .cancelled: summary.cancelled, .deferred: summary.deferred,
      .completed: summary.completed, .unchanged: summary.unchanged,
    ]
    for outcome in Self.outcomeOrder where counts[outcome, default: 0] > 0 {
      out += "<option value=\"\(outcome.rawValue)\">\(outcome.rawValue) (\(counts[outcome, default: 0]))</option>"
    }
    out += "</select>\n<span id=\"shown\"></span>\n"
    out +=
      "<button class=\"prev\" type=\"button\">‹ previous</button><button class=\"next\" type=\"button\">next ›</button>\n"
    out += "</div>\n</div>\n<div class=\"scroll\"><table id=\"table\">\n<thead><tr>"
    for column in columns {
      out += "<th data-column=\"\(column.name)\"\(column.numeric ? " class=\"num\"" : "")>"
      out += "<button type=\"button\">\(column.label)</button></th>"
    }
    // The first page is in the page itself (CI servers often serve archived HTML with scripts
    // blocked); the script redraws it, and adds sorting, filtering and paging.
    out += "</tr></thead>\n<tbody>"
    for result in firstPage { writeRow(result, columns: columns.map(\.name), to: &out) }
    out += "</tbody>\n</table></div>\n<div class=\"needs-js\"><div class=\"tools pager\">"
    out +=
      "<button class=\"prev\" type=\"button\">‹ previous</button><button class=\"next\" type=\"button\">next ›</button>"
    out += "</div></div>\n"
    out += "<script type=\"application/json\" id=\"data\">"
    writeData(results, to: &out)
    out += "</script>\n<script>\(Self.script)</script>\n</section>\n"
  }

  /// The rows the script shows first: failures first (outcome order), then by id, at most a page.
  static func firstPage(_ results: [TaskResult]) -> [TaskResult] {
    let ordered = results.enumerated().sorted { lhs, rhs in
      let (a, b) = (rank(lhs.element.outcome), rank(rhs.element.outcome))
      return a != b ? a < b : lhs.offset < rhs.offset
    }
    return ordered.prefix(pageSize).map(\.element)
  }

  /// Rows on a page of the table (the script's `PAGE`).
  static let pageSize = 250

  /// One row of the table as the script draws it.
  private func writeRow(_ result: TaskResult, columns: [String], to out: inout String) {
    func cell(_ text: String, _ cls: String? = nil, title: String? = nil, note: String? = nil) {
      out +=
        "<td" + (cls.map { " class=\"\($0)\"" } ?? "") + (title.map { " title=\"\(Self.escape($0))\"" } ?? "") + ">"
      out += Self.escape(text)
      if let note { out += "<small>\(Self.escape(note))</small>" }
      out += "</td>"
    }
    func seconds(_ value: Double?) -> String { value.map { TextFormat.fixed($0, decimals: 3) } ?? "" }
    out += "<tr class=\"\(result.outcome.rawValue)\">"
    for column in columns {
      switch column {
      case "id": cell(result.id, "id")
      case "session": cell(result.session)
      case "kind": cell(result.kind.rawValue)
      case "outcome":
        if let error = result.error {
          cell(result.outcome.rawValue, "outcome", title: error.message, note: error.code)
        } else {
          let source = result.source.flatMap { $0 != "network" && !$0.isEmpty ? $0 : nil }
          cell(result.outcome.rawValue, "outcome", note: source)
        }
      case "status": cell(result.status.map(String.init) ?? "", "num")
      case "size": cell(result.size.map(ProgressDisplay.bytes) ?? "", "num", title: result.size.map { "\($0) bytes" })
      case "sha256": cell(result.sha256.map { String($0.prefix(12)) + "…" } ?? "", "sha", title: result.sha256)
      case "attempts": cell(String(result.attempts), "num")
      case "started": cell(seconds(result.started), "num")
      case "took":
        let took = result.started.flatMap { start in result.seconds.map { max(0, $0 - start) } }
        cell(seconds(took), "num")
      case "ended": cell(seconds(result.seconds), "num")
      default:
        let to = result.to.flatMap { $0 == result.id ? nil : $0 }
        cell(result.url, "url", note: to.map { "→ " + $0 })
      }
    }
    out += "</tr>\n"
  }

  /// The tasks for the script, as compact rows (see `ReportPage.script` for the fields).
  private func writeData(_ results: [TaskResult], to out: inout String) {
    var sessions: [String: Int] = [:]
    var sessionNames: [String] = []
    var json = "{\"outcomes\":["
    json += Self.outcomeOrder.map { "\"\($0.rawValue)\"" }.joined(separator: ",")
    json += "],\"kinds\":["
    json += TaskKind.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ",")
    json += "],\"rows\":["
    func number(_ value: Double?) -> String { value.map { TextFormat.fixed($0, decimals: 3) } ?? "null" }
    for (index, result) in results.enumerated() {
      let session =
        sessions[result.session]
        ?? {
          sessions[result.session] = sessionNames.count
          sessionNames.append(result.session)
          return sessionNames.count - 1
        }()
      json += index == 0 ? "\n[" : ",\n["
      JSON.quote(result.id, into: &json)
      json += ",\(session),\(TaskKind.allCases.firstIndex(of: result.kind) ?? 0),\(Self.rank(result.outcome)),"
      json += "\(result.status.map(String.init) ?? "null"),\(result.size.map(String.init) ?? "null"),"
      JSON.quote(result.sha256 ?? "", into: &json)
      json += ",\(result.attempts),\(number(result.started)),\(number(result.seconds)),"
      JSON.quote(result.url, into: &json)
      json += ","
      if let to = result.to {
        if to == result.id { json += "1" } else { JSON.quote(to, into: &json) }
      } else {
        json += "0"
      }
      json += ","
      JSON.quote(result.error?.code ?? "", into: &json)
      json += ","
      JSON.quote(result.error?.message ?? "", into: &json)
      json += ","
      JSON.quote(result.source ?? "", into: &json)
      json += "]"
    }
    json += "],\"sessions\":["
    for (index, name) in sessionNames.enumerated() {
      if index > 0 { json += "," }
      JSON.quote(name, into: &json)
    }
    json += "]}"
    out += Self.scriptSafe(json)
  }

  /// JSON that can sit inside a `<script>` element: `<`, `>` and `&` (only ever inside strings) as
  /// `\u` escapes, so that no `</script>` or `<!--` ends or bends the element. U+2028 and U+2029 too.
  static func scriptSafe(_ json: String) -> String {
    var out = ""
    out.reserveCapacity(json.utf8.count)
    for scalar in json.unicodeScalars {
      switch scalar {
      case "<": out += "\\u003c"
      case ">": out += "\\u003e"
      case "&": out += "\\u0026"
      case "\u{2028}": out += "\\u2028"
      case "\u{2029}": out += "\\u2029"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out
  }

  /// Text for HTML text and quoted attribute values: `& < > " '` as references, control
  /// characters (other than tab and line feed) left out.
  static func escape(_ text: String) -> String { RunReport.escape(text) }

  /// The `'sha256-…'` source of the inline style and script, for the Content-Security-Policy.
  static func hashSource(_ text: String) -> String {
    "sha256-" + Data(SHA256.hash(data: Data(text.utf8))).base64EncodedString()
  }

  static let styleHash = hashSource(style)
  static let scriptHash = hashSource(script)
}

/// Transfers in flight and bytes per second over the run, from the tasks' `started` and
/// `seconds`, averaged over equal intervals, as two inline SVG charts.
struct TransferTimeline {
  static let intervals = 240
  /// The run's length in seconds.
  var duration: Double
  /// Average transfers in flight in each interval.
  var inFlight: [Double]
  /// Bytes per second in each interval: each transfer's bytes spread evenly over its time.
  var throughput: [Double]
  var transfers = 0
  var peak = 0

  /// Nil when no task has a start time.
  init?(_ results: [TaskResult], runSeconds: Double?) {
    // Tasks that share a request (`duplicate`) share its transfer: counted once.
    var spans: [(start: Double, end: Double, bytes: Int64)] = []
    var seen = Set<String>()
    for result in results where result.source != "duplicate" {
      guard let start = result.started, let end = result.seconds else { continue }
      guard seen.insert("\(start) \(end) \(result.url)").inserted else { continue }
      let bytes = result.outcome == .completed && result.source == "network" ? result.transferred : 0
      spans.append((start, max(start, end), bytes))
    }
    guard !spans.isEmpty else { return nil }
    duration = max(runSeconds ?? 0, spans.map(\.end).max() ?? 0, 0.001)
    transfers = spans.count
    let count = Self.intervals
    let width = duration / Double(count)
    inFlight = Array(repeating: 0, count: count)
    throughput = Array(repeating: 0, count: count)
    for span in spans {
      let first = min(count - 1, max(0, Int(span.start / width)))
      let last = min(count - 1, max(first, Int(span.end / width)))
      let length = span.end - span.start
      for index in first...last {
        let from = max(span.start, Double(index) * width)
        let to = min(span.end, Double(index + 1) * width)
        let overlap = max(0, to - from)
        inFlight[index] += overlap / width
        throughput[index] += length > 0 ? Double(span.bytes) * overlap / length / width : 0
      }
      if length <= 0 { throughput[first] += Double(span.bytes) / width }
    }
    // The most transfers at once, from the starts and ends in order.
    var edges = spans.flatMap { [($0.start, 1), ($0.end, -1)] }
    edges.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
    var current = 0
    for edge in edges {
      current += edge.1
      peak = max(peak, current)
    }
  }

  func write(to out: inout String) {
    let total = throughput.reduce(0, +) * duration / Double(throughput.count)
    out += "<p class=\"facts\">\(transfers) transfers, at most \(peak) at once; "
    out += "\(ProgressDisplay.bytes(Int64(total))) in \(TextFormat.fixed(duration, decimals: 1)) s. "
    out += "Each point is the average over \(TextFormat.fixed(duration / Double(inFlight.count), decimals: 3)) s; "
    out += "a transfer's bytes count as spread evenly over its time.</p>\n<div class=\"charts\">\n"
    Self.chart(
      inFlight, duration: duration, title: "Transfers in flight", axis: "transfers", unit: (1, ""), integral: true,
      kind: "flight", to: &out)
    let peakRate = throughput.max() ?? 0
    let units: [(Double, String)] = [(1, "B/s"), (1024, "KB/s"), (1_048_576, "MB/s"), (1_073_741_824, "GB/s")]
    let unit = units.last { $0.0 <= max(peakRate, 1) } ?? (1, "B/s")
    Self.chart(
      throughput, duration: duration, title: "Throughput", axis: unit.1, unit: unit, integral: false, kind: "rate",
      to: &out)
    out += "</div>\n"
  }

  /// A step chart of `values` (one per equal interval of `duration`) with labelled axes.
  static func chart(
    _ values: [Double], duration: Double, title: String, axis: String, unit: (Double, String), integral: Bool,
    kind: String, to out: inout String
  ) {
    let (width, height) = (640.0, 240.0)
    let (left, right, top, bottom) = (66.0, 626.0, 26.0, 190.0)
    let scaled = values.map { $0 / unit.0 }
    var yStep = niceStep(max(scaled.max() ?? 0, integral ? 1 : 0.001) / 4)
    if integral { yStep = max(1, yStep.rounded(.up)) }
    let yMax = max(yStep, (max(scaled.max() ?? 0, 0) / yStep).rounded(.up) * yStep)
    let xStep = niceStep(duration / 6)
    func x(_ t: Double) -> String { TextFormat.fixed(left + (right - left) * t / duration, decimals: 1) }
    func y(_ v: Double) -> String { TextFormat.fixed(bottom - (bottom - top) * v / yMax, decimals: 1) }
    out += "<figure class=\"chart \(kind)\">\n<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" "
    out += "aria-label=\"\(title) over time\">\n<title>\(title) over time</title>\n"
    out += "<text class=\"title\" x=\"\(Int(left))\" y=\"14\">\(title)</text>\n<g class=\"grid\">"
    var tick = 0.0
    while tick <= yMax + yStep / 1000 {
      out += "<line x1=\"\(Int(left))\" x2=\"\(Int(right))\" y1=\"\(y(tick))\" y2=\"\(y(tick))\"/>"
      tick += yStep
    }
    out += "</g>\n<g class=\"labels y\">"
    tick = 0
    let decimals = yStep >= 1 ? 0 : yStep >= 0.1 ? 1 : 2
    while tick <= yMax + yStep / 1000 {
      out +=
        "<text x=\"\(Int(left) - 6)\" y=\"\(y(tick))\" dy=\"4\">\(TextFormat.fixed(tick, decimals: decimals))</text>"
      tick += yStep
    }
    out += "</g>\n<g class=\"labels x\">"
    tick = 0
    let xDecimals = xStep >= 1 ? 0 : xStep >= 0.1 ? 1 : xStep >= 0.01 ? 2 : 3
    while tick <= duration + xStep / 1000 {
      out +=
        "<line class=\"tick\" x1=\"\(x(tick))\" x2=\"\(x(tick))\" y1=\"\(Int(bottom))\" y2=\"\(Int(bottom) + 4)\"/>"
      out += "<text x=\"\(x(tick))\" y=\"\(Int(bottom) + 18)\">\(TextFormat.fixed(tick, decimals: xDecimals))</text>"
      tick += xStep
    }
    out += "</g>\n<text class=\"axis\" x=\"\(TextFormat.fixed((left + right) / 2, decimals: 0))\" "
    out += "y=\"\(Int(height) - 8)\">seconds since the run started</text>\n"
    out += "<text class=\"axis\" transform=\"translate(16 \(TextFormat.fixed((top + bottom) / 2, decimals: 0))) "
    out += "rotate(-90)\">\(axis)</text>\n"
    var path = "M\(x(0)) \(y(0))"
    let step = duration / Double(max(values.count, 1))
    for (index, value) in scaled.enumerated() {
      path += "L\(x(Double(index) * step)) \(y(value))L\(x(Double(index + 1) * step)) \(y(value))"
    }
    path += "L\(x(duration)) \(y(0))Z"
    out += "<path class=\"area\" d=\"\(path)\"/>\n"
    out +=
      "<line class=\"axis-line\" x1=\"\(Int(left))\" x2=\"\(Int(right))\" y1=\"\(Int(bottom))\" y2=\"\(Int(bottom))\"/>"
    out +=
      "<line class=\"axis-line\" x1=\"\(Int(left))\" x2=\"\(Int(left))\" y1=\"\(Int(top))\" y2=\"\(Int(bottom))\"/>\n"
    out += "</svg>\n</figure>\n"
  }

  /// 1, 2 or 5 times a power of ten, at least `raw`.
  static func niceStep(_ raw: Double) -> Double {
    guard raw > 0, raw.isFinite else { return 1 }
    let magnitude = pow(10, (log10(raw)).rounded(.down))
    let residual = raw / magnitude
    return (residual <= 1 ? 1 : residual <= 2 ? 2 : residual <= 5 ? 5 : 10) * magnitude
  }
}
