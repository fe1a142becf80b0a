/// The diff as GitHub-flavoured Markdown, for `$GITHUB_STEP_SUMMARY` and pull-request comments.
extension ReportDiff {
  /// Rows shown before the table says how many more there are: GitHub keeps 1 MiB of a step's
  /// summary and a comment's body is limited to 65,536 characters.
  public static let markdownRowLimit = 200

  /// Regressions first, then the other changes, each in task order; at most `rowLimit` rows.
  public func markdown(rowLimit: Int = ReportDiff.markdownRowLimit) -> String {
    let regressionCount = regressions.count
    var out = "### batchdl report diff: \(Self.markdownText(old.manifest))\n\n"
    out +=
      regressionCount == 0
      ? "**No regressions**" : "**\(regressionCount) regression\(regressionCount == 1 ? "" : "s")**"
    out += " · \(changes.count) change\(changes.count == 1 ? "" : "s")\n\n"
    if let notRun = new.notRun {
      out += "❌ **The new report's run did not run** (exit \(notRun.status)): \(Self.markdownText(notRun.reason))\n\n"
    }
    if let warning = removedWarning { out += "⚠️ \(Self.markdownText(warning))\n\n" }
    if !changes.isEmpty {
      out += "| | task | change | regression |\n|---|---|---|---|\n"
      let ordered = changeLines(changes.filter { $0.regression != nil } + changes.filter { $0.regression == nil }) {
        change in
        change.regression != nil
          ? "❌" : change.kinds == ["added"] ? "➕" : change.kinds == ["removed"] ? "➖" : "✏️"
      }
      for change in ordered.prefix(rowLimit) {
        let text = change.text + (change.ids.map { " (\($0))" } ?? "")
        out += "| \(change.mark) | \(Self.markdownText(change.subject)) | \(Self.markdownText(text)) | "
        out += "\(change.regression?.rawValue ?? "") |\n"
      }
      if ordered.count > rowLimit {
        let hidden = ordered.dropFirst(rowLimit).reduce(0) { $0 + $1.count }
        out += "\n\(hidden) more changes are not shown: "
        out += "`batchdl report diff --json` lists them all.\n"
      }
      out += "\n"
    }
    let a = old.summary
    let b = new.summary
    out += "| | before | after |\n|---|--:|--:|\n"
    let rows: [(String, Int64, Int64)] = [
      ("tasks", Int64(a.tasks), Int64(b.tasks)), ("completed", Int64(a.completed), Int64(b.completed)),
      ("unchanged", Int64(a.unchanged), Int64(b.unchanged)), ("failed", Int64(a.failed), Int64(b.failed)),
      ("deferred", Int64(a.deferred), Int64(b.deferred)), ("cancelled", Int64(a.cancelled), Int64(b.cancelled)),
      ("bytes", a.bytes, b.bytes),
    ]
    for (name, before, after) in rows {
      let changed = before != after
      out += changed ? "| **\(name)** | \(before) | **\(after)** |\n" : "| \(name) | \(before) | \(after) |\n"
    }
    return out
  }

  /// One change in words, as the text diff says it.
  func describeChange(_ change: Change) -> String {
    switch change.kinds {
    case ["added"]: return "added, \(Self.describe(change.new))"
    case ["removed"]: return "removed (was \(Self.describe(change.old)))"
    case ["pruned"]: return "pruned (no task names it any more: prune deleted its file)"
    case ["prune-limit"]: return "prune refused (prune-limit): \(change.detail ?? "")"
    default:
      var parts: [String] = []
      if change.kinds.contains("outcome") {
        parts.append("\(Self.describe(change.old)) → \(Self.describe(change.new))")
      }
      if change.kinds.contains("sha256") {
        parts.append("sha256 \(change.old?.sha256?.prefix(12) ?? "")… → \(change.new?.sha256?.prefix(12) ?? "")…")
      }
      if change.kinds.contains("size") { parts.append("size \(change.old?.size ?? 0) → \(change.new?.size ?? 0)") }
      return parts.joined(separator: "; ")
    }
  }

  /// Text from a report (task ids, URLs, server error messages) as literal Markdown inside a table
  /// cell or the heading. Inline Markdown is all that applies there, so the characters that start
  /// inline markup are backslash-escaped (CommonMark makes any ASCII punctuation literal that way,
  /// and GitHub's tables take `\|` as a literal bar): emphasis, code, links, images, HTML and
  /// entities, strikethrough, math, a heading's closing `#`. A `:` and the `.` of `www.` are escaped
  /// too, which keeps GitHub from turning URLs in the text into links. Line breaks become spaces so
  /// the row stays one line; other control characters become U+FFFD.
  static func markdownText(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\n", "\r", "\t": out += " "
      case "\\", "`", "*", "_", "[", "]", "<", ">", "|", "~", "!", "#", "&", "$", ":":
        out += "\\" + String(scalar)
      case "." where out.lowercased().hasSuffix("www"): out += "\\."
      default:
        if scalar.value < 0x20 || scalar.value == 0x7F { out += "\u{FFFD}" } else { out.unicodeScalars.append(scalar) }
      }
    }
    return out
  }
}
