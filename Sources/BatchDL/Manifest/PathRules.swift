/// Lexical rules for the paths a manifest names: normalization and staying inside a root.
public enum PathRules {
  public struct Problem: Error {
    public var message: String
  }

  /// Removes `.` and empty segments and resolves `..` lexically; a trailing `/` is dropped.
  ///
  /// Relative paths may not climb above their start. Absolute paths are rejected unless
  /// `allowAbsolute` is set.
  public static func normalize(_ path: String, allowAbsolute: Bool) -> Result<String, Problem> {
    if path.isEmpty { return .failure(Problem(message: "is empty")) }
    if path.utf8.contains(0) { return .failure(Problem(message: "contains a NUL byte")) }
    let absolute = path.hasPrefix("/")
    if absolute && !allowAbsolute {
      return .failure(Problem(message: "is absolute; write a path relative to the session's dest"))
    }
    var parts: [Substring] = []
    for part in path.split(separator: "/", omittingEmptySubsequences: true) {
      switch part {
      case ".": continue
      case "..":
        if parts.isEmpty {
          if absolute { continue }
          return .failure(Problem(message: "climbs out of its folder with '..'; keep destinations inside the session's dest"))
        }
        parts.removeLast()
      default:
        parts.append(part)
      }
    }
    let joined = parts.joined(separator: "/")
    return .success(absolute ? "/" + joined : joined)
  }

  /// `base` and `relative` joined; `relative` must already be normalized and relative.
  public static func join(_ base: String, _ relative: String) -> String {
    if base.isEmpty { return relative }
    if relative.isEmpty { return base }
    return base.hasSuffix("/") ? base + relative : base + "/" + relative
  }
}
