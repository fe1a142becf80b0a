/// Failures told apart by their cause: the same error code and the same message once what names
/// the task (its id, destination and URL) and the numbers in it are set aside. A bad signature over
/// a checksum file fails a hundred tasks with one cause: the run prints it once, with a count and
/// the first few names (`ProgressDisplay`), and `report diff` says it once (`ReportDiff`).
public struct FailureCause: Hashable, Sendable {
  /// The error code (`http-404`, `signature`...).
  public var code: String
  /// The message's shape: the task's own names become `*`, runs of digits `#`.
  public var shape: String

  /// Names shown in a grouped line before "and N more".
  public static let namesShown = 3

  /// The cause of a failure with `code` and `message`, of the task named by `names` (its id,
  /// destination and URL: whichever appear in the message are set aside).
  public init(code: String, message: String, names: [String]) {
    self.code = code
    shape = Self.shape(of: message, names: names)
  }

  /// `message` with `names` (longest first) replaced by `*` and runs of ASCII digits by `#`.
  public static func shape(of message: String, names: [String]) -> String {
    var text = message
    for name in names.filter({ !$0.isEmpty }).sorted(by: { $0.utf8.count > $1.utf8.count }) {
      text = text.replacing(name, with: "*")
    }
    var out = ""
    out.reserveCapacity(text.utf8.count)
    var inDigits = false
    for scalar in text.unicodeScalars {
      if ("0"..."9").contains(scalar) {
        if !inDigits { out += "#" }
        inDigits = true
      } else {
        inDigits = false
        out.unicodeScalars.append(scalar)
      }
    }
    return out
  }

  /// `names` as a grouped line lists them: the first few, then how many more.
  public static func list(_ names: [String], total: Int) -> String {
    let shown = names.prefix(namesShown).joined(separator: ", ")
    let more = total - min(total, namesShown)
    return more > 0 ? "\(shown) and \(more) more" : shown
  }
}

/// Failures collected by cause, in the order each cause first came.
struct FailureGroups {
  struct Group {
    var cause: FailureCause
    /// The first failure's message, and whether every other one had the same.
    var message: String
    var sameMessage = true
    /// The first `FailureCause.namesShown` names, in byte order.
    var names: [String] = []
    var count = 0
  }

  private(set) var groups: [Group] = []
  private var index: [FailureCause: Int] = [:]
  /// Groups by their exact code and message: a failure that says word for word what another said
  /// is of its cause, even when its own name appears in the message (a checksum file whose
  /// signature is bad fails with the same words as the files it covers).
  private var exact: [String: Int] = [:]

  /// Adds a failure of the task `name` (shown), with `code` and `message`; `names`: what names the
  /// task in a message (its id, destination and URL).
  mutating func add(name: String, code: String, message: String, names: [String]) {
    let cause = FailureCause(code: code, message: message, names: names)
    let number: Int
    if let found = exact[code + "\n" + message] {
      number = found
    } else if let found = index[cause] {
      number = found
    } else {
      number = groups.count
      index[cause] = number
      groups.append(Group(cause: cause, message: message))
    }
    if exact[code + "\n" + message] == nil { exact[code + "\n" + message] = number }
    groups[number].count += 1
    // The first names in byte order, whatever order the tasks ended in: the mail reads the same.
    var names = groups[number].names
    let at = names.firstIndex { name.utf8.lexicographicallyPrecedes($0.utf8) } ?? names.endIndex
    if at < FailureCause.namesShown {
      names.insert(name, at: at)
      if names.count > FailureCause.namesShown { names.removeLast() }
      groups[number].names = names
    }
    if groups[number].message != message { groups[number].sameMessage = false }
  }

  /// One line per cause: a lone failure as `failed    ID  CODE: MESSAGE`, a cause of several as
  /// `failed    N tasks  CODE: MESSAGE (A, B, C and M more)`.
  var lines: [String] {
    groups.map { group in
      let message = group.sameMessage ? group.message : group.cause.shape
      guard group.count > 1 else { return "failed    \(group.names.first ?? "")  \(group.cause.code): \(message)" }
      return "failed    \(group.count) tasks  \(group.cause.code): \(message) "
        + "(\(FailureCause.list(group.names, total: group.count)))"
    }
  }

  mutating func removeAll() {
    groups = []
    index = [:]
    exact = [:]
  }
}
