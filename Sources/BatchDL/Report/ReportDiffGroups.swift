/// Changes with one cause, said once: a hundred tasks whose failure had one cause (a bad signature
/// over their checksum file) and that pass again are one line of the text diff and one row of the
/// Markdown one, with a count and the first few ids, as the run printed them (`FailureCause`). The
/// JSON diff keeps every change.
extension ReportDiff {
  /// One line (or row) of a diff: a change, or the changes of one cause.
  struct ChangeLine {
    var mark: String
    /// The first change's id, or `N tasks`.
    var subject: String
    var text: String
    var regression: Rule?
    /// The ids after the text (`(A, B, C and M more)`), for a group.
    var ids: String?
    /// How many changes the line stands for.
    var count = 1
  }

  /// Whether a change is about a failure (a task that failed before or fails now): those group.
  private static func isFailure(_ change: Change) -> Bool {
    change.old?.outcome == .failed || change.new?.outcome == .failed
  }

  /// The changes in order, those of one cause (same mark, regression and description once the
  /// tasks' own names and numbers are set aside) joined at the place of the first.
  func changeLines(_ changes: [Change], mark: (Change) -> String) -> [ChangeLine] {
    struct Key: Hashable {
      var mark: String
      var regression: Rule?
      var shape: String
    }
    var lines: [ChangeLine] = []
    var members: [[Change]] = []
    var texts: [[String]] = []
    var keys: [Key: Int] = [:]
    // The same words with the same mark are one cause, whatever names are in them.
    var exact: [Key: Int] = [:]
    for change in changes {
      let text = describeChange(change)
      let names = [change.old, change.new].compactMap { $0 }.flatMap { [$0.id, $0.to ?? "", $0.url] }
      let key = Key(
        mark: mark(change), regression: change.regression, shape: FailureCause.shape(of: text, names: names))
      let words = Key(mark: key.mark, regression: key.regression, shape: text)
      if Self.isFailure(change), let number = exact[words] ?? keys[key] {
        members[number].append(change)
        texts[number].append(text)
        if exact[words] == nil { exact[words] = number }
        continue
      }
      if Self.isFailure(change) {
        keys[key] = lines.count
        exact[words] = lines.count
      }
      lines.append(ChangeLine(mark: key.mark, subject: change.id, text: text, regression: change.regression))
      members.append([change])
      texts.append([text])
    }
    for number in lines.indices where members[number].count > 1 {
      let count = members[number].count
      let first = texts[number][0]
      let names = members[number].compactMap { [$0.old, $0.new].compactMap { $0 }.first }
      lines[number].subject = "\(count) tasks"
      lines[number].count = count
      lines[number].text =
        texts[number].allSatisfy({ $0 == first })
        ? first
        : FailureCause.shape(of: first, names: names.first.map { [$0.id, $0.to ?? "", $0.url] } ?? [])
      lines[number].ids = FailureCause.list(members[number].prefix(FailureCause.namesShown).map(\.id), total: count)
    }
    return lines
  }
}
