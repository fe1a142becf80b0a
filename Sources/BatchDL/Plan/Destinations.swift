/// Where each task's file goes, by one rule that every command and the run read: the planner
/// normalizes a `to:` once (relative to the manifest's folder); these turn it into the absolute
/// path, the partial file beside it, and the task whose destination a shared request's body is
/// written to.
extension Plan {
  /// The suffix of partial files: `DEST.batchdl-part`, beside the destination (same filesystem, so
  /// the final rename is atomic).
  public static let partialSuffix = ".batchdl-part"

  /// The partial file of a destination.
  public static func partialPath(of destination: String) -> String { destination + partialSuffix }

  /// A path the manifest names (a destination, an upload's file), absolute: resolved against the
  /// manifest's folder.
  public func absolute(_ path: String) -> String { FileAccess.resolve(path, against: manifest.absoluteDirectory) }

  /// A task's destination as an absolute path; nil when the task has none.
  public func absoluteDestination(of task: PlannedTask) -> String? {
    destination(of: task).map(absolute)
  }

  /// A data task's `become_download` rule, when it has one.
  public func becomeDownload(of task: PlannedTask) -> BecomeDownload? {
    guard task.kind == .data, case .task(let spec) = entry(of: task) else { return nil }
    return spec.becomeDownload
  }

  /// The task whose destination a request's body is written to, through a partial file: the
  /// first download or upload with a destination, else the first data task that may become a
  /// download and has one. nil when the body stays in memory (data tasks, whose files are
  /// written whole at the end).
  public func owner(of request: PlannedRequest) -> PlannedTask? {
    let tasks = tasks(of: request)
    return tasks.first { $0.kind != .data && !$0.to.isNone }
      ?? tasks.first { becomeDownload(of: $0) != nil && !$0.to.isNone }
  }

  /// The partial file a request's body goes to, when it goes to a file.
  public func partialPath(of request: PlannedRequest) -> String? {
    owner(of: request).flatMap(absoluteDestination(of:)).map(Self.partialPath(of:))
  }
}
