import BatchDLSupport

/// A session's `prune:`: remove the files earlier runs of the manifest placed under its `dest`
/// that no task names any more.
public struct PruneSettings: Sendable, Equatable {
  /// Where `prune:` was written.
  public var mark: SourceMark
  /// `max_delete`: a run that would delete more deletes nothing and fails with `prune-limit`; nil:
  /// no limit.
  public var maxDelete: PruneLimit?

  public init(mark: SourceMark, maxDelete: PruneLimit? = nil) {
    self.mark = mark
    self.maxDelete = maxDelete
  }
}

/// `prune.max_delete`: a count of files, or a share of the files the state folder records as
/// placed under the session's `dest`.
public enum PruneLimit: Sendable, Equatable, CustomStringConvertible {
  case count(Int)
  /// Percent, from 0 to 100.
  case percent(Double)

  /// The most files a run may delete when `recorded` files are recorded.
  public func allowed(recorded: Int) -> Int {
    switch self {
    case .count(let count): return count
    case .percent(let percent):
      // A hair over the exact share so that 50% of 10 is 5, not 4.999...
      return Int((percent * Double(recorded) / 100 + 1e-9).rounded(.down))
    }
  }

  /// Why a text is not a limit.
  public struct Problem: Error, Equatable {
    public var message: String
  }

  /// A limit as the manifest (`prune.max_delete`) and the command line (`run --max-delete`) write
  /// it: a count of files (`50`) or a share of the files recorded under the session's `dest`
  /// (`10%`, `2.5%`). `what` names the setting in the message of a text that is neither.
  public static func parse(_ raw: String, what: String) -> Result<PruneLimit, Problem> {
    let text = raw.trimmingSpaces
    let problem = Problem(
      message:
        "\(what) must be a count of files (50) or a share of the files recorded under dest (10%), found '\(raw)'")
    if text.hasSuffix("%") {
      let number = String(text.dropLast()).trimmingSpaces
      guard let percent = Double(number), percent.isFinite, number.first?.isNumber == true else {
        return .failure(problem)
      }
      guard percent >= 0 && percent <= 100 else {
        return .failure(Problem(message: "\(what) must be a share from 0% to 100%, found '\(raw)'"))
      }
      return .success(.percent(percent))
    }
    guard let count = Int(text), text.first?.isNumber == true else { return .failure(problem) }
    guard count <= Limits.count else {
      return .failure(Problem(message: "\(what) must be from 0 to \(Limits.count) files, found \(count)"))
    }
    return .success(.count(count))
  }

  /// As the manifest writes it: `50`, `10%`.
  public var description: String {
    switch self {
    case .count(let count): return String(count)
    case .percent(let percent):
      return percent == percent.rounded() ? "\(Int(percent))%" : "\(percent)%"
    }
  }
}

extension ManifestDecoder {
  package static let pruneKeys = ["max_delete"]

  /// `prune: true`, `prune: false` (nil) or `prune: {max_delete: 50 | "10%"}`.
  package mutating func prune(_ node: YAMLNode) -> PruneSettings? {
    switch node.content {
    case .scalar:
      guard let on = boolean(node, what: "prune") else { return nil }
      return on ? PruneSettings(mark: node.mark) : nil
    case .mapping(let entries):
      checkKeys(entries, known: Self.pruneKeys, in: "prune")
      var settings = PruneSettings(mark: node.mark)
      if let limit = node["max_delete"] { settings.maxDelete = pruneLimit(limit) }
      return settings
    case .sequence:
      diagnostics.error(
        node.mark,
        "prune must be true, false or a mapping such as {max_delete: 50} or {max_delete: \"10%\"}, found a list")
      return nil
    }
  }

  private mutating func pruneLimit(_ node: YAMLNode) -> PruneLimit? {
    guard case .scalar(let raw, _) = node.content, !node.isNull else {
      diagnostics.error(
        node.mark,
        "prune.max_delete must be a count of files (50) or a share of the files recorded under dest (\"10%\"), found \(describe(node))"
      )
      return nil
    }
    switch PruneLimit.parse(raw, what: "prune.max_delete") {
    case .success(let limit): return limit
    case .failure(let problem):
      diagnostics.error(node.mark, problem.message)
      return nil
    }
  }
}
