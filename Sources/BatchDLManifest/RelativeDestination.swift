import BatchDLSupport

/// A task's destination as it is written, normalized: relative to its session's `dest` (or to an
/// entry's `to:` folder), without empty, `.` or `..` segments, never absolute.
///
/// The one normalization of destinations: the decoder checks each `to:` with it, the planner
/// normalizes `to:`, an entry's folder and a list line's second column with it (the list fast
/// path's prefix included), and the Metalink reader takes each `<file name>` through it.
/// `DestinationForm` (Plan/) joins the result with the session's `dest`.
public struct RelativeDestination: Hashable, Sendable {
  /// The normalized path; empty when it names the folder it is relative to.
  public let path: String

  /// The folder itself (no `to:`).
  public static let folder = RelativeDestination(path: "")

  private init(path: String) {
    self.path = path
  }

  /// Why a written destination cannot be one.
  public struct Problem: Error {
    /// The destination as written.
    public var written: String
    /// What is wrong with it: empty, absolute, climbing out with `..`, a control character, too long.
    public var reason: PathRules.Problem

    /// How a diagnostic says it: `to 'WRITTEN' REASON`, the value escaped (at most 200 characters).
    public var message: String { "to '\(ShownText.escaped(written, limit: 200))' \(reason.message)" }
  }

  /// `written` normalized, or why it cannot be a destination.
  public static func parse(_ written: String) -> Result<RelativeDestination, Problem> {
    switch PathRules.normalize(written, allowAbsolute: false) {
    case .success(let path): return .success(RelativeDestination(path: path))
    case .failure(let reason): return .failure(Problem(written: written, reason: reason))
    }
  }

  /// Whether it names the folder it is relative to, not a file in it.
  public var isFolder: Bool { path.isEmpty }

  /// `name` (a file name or a normalized relative path, not empty) inside this one.
  public func appending(_ name: String) -> RelativeDestination {
    RelativeDestination(path: PathRules.join(path, name))
  }
}
