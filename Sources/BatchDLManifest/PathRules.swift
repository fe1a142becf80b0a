/// Lexical rules for the paths a manifest names: normalization and staying inside a root.
public enum PathRules {
  public struct Problem: Error {
    public var message: String
    /// True when the path climbs above its start with `..`.
    public var climbsOut = false
  }

  /// Linux's PATH_MAX and NAME_MAX: a longer path or name cannot be made, and checking each one
  /// keeps the cost of a path in bounds.
  public static let maxPathBytes = 4096
  public static let maxNameBytes = 255

  /// Removes `.` and empty segments and resolves `..` lexically; a trailing `/` is dropped.
  ///
  /// Relative paths may not climb above their start. Absolute paths are rejected unless
  /// `allowAbsolute` is set. (A task's destination goes through `RelativeDestination`.)
  public static func normalize(_ path: String, allowAbsolute: Bool) -> Result<String, Problem> {
    if path.isEmpty { return .failure(Problem(message: "is empty")) }
    if path.utf8.contains(0) { return .failure(Problem(message: "contains a NUL byte")) }
    if let problem = lengthOrControlProblem(path) { return .failure(problem) }
    if isPlainRelative(path) { return .success(path) }
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
          return .failure(
            Problem(
              message: "climbs out of its folder with '..'; keep destinations inside the session's dest",
              climbsOut: true))
        }
        parts.removeLast()
      default:
        parts.append(part)
      }
    }
    let joined = parts.joined(separator: "/")
    return .success(absolute ? "/" + joined : joined)
  }

  /// A control character (C0, DEL, C1: printed, it would drive the terminal that shows it, or forge
  /// a line of output), or a path or a name past Linux's limits; one pass over the bytes.
  package static func lengthOrControlProblem(_ path: String) -> Problem? {
    var total = 0
    var segment = 0
    var previous: UInt8 = 0
    for byte in path.utf8 {
      total += 1
      segment = byte == 0x2F ? 0 : segment + 1
      // C1 controls are U+0080...U+009F: 0xC2 0x80...0x9F in UTF-8.
      if byte < 0x20 || byte == 0x7F || (previous == 0xC2 && (0x80...0x9F).contains(byte)) {
        let code = String(byte, radix: 16, uppercase: true)
        return Problem(
          message: "contains a control character (U+\(String(repeating: "0", count: 4 - code.count))\(code))")
      }
      if segment > maxNameBytes {
        return Problem(message: "has a name longer than \(maxNameBytes) bytes, the most a file name may be (NAME_MAX)")
      }
      previous = byte
    }
    if total > maxPathBytes {
      return Problem(message: "is longer than \(maxPathBytes) bytes, the most a path may be (PATH_MAX)")
    }
    return nil
  }

  /// True when `path` is relative and has no empty, `.` or `..` segment and no trailing `/`: it is
  /// already normalized (the common case, checked without splitting).
  package static func isPlainRelative(_ path: String) -> Bool {
    var segmentLength = 0
    var dots = 0
    for byte in path.utf8 {
      if byte == 0x2F {
        if segmentLength == 0 || segmentLength == dots { return false }
        segmentLength = 0
        dots = 0
      } else {
        segmentLength += 1
        if byte == 0x2E { dots += 1 }
      }
    }
    return segmentLength > 0 && !(segmentLength == dots && dots <= 2)
  }

  /// What `join(base, name)` puts before a `name` that is not empty: `base` with a trailing `/`,
  /// or nothing when `base` is empty.
  public static func folderPrefix(_ base: String) -> String {
    if base.isEmpty || base.hasSuffix("/") { return base }
    return base + "/"
  }

  /// `base` and `relative` joined; `relative` must already be normalized and relative.
  public static func join(_ base: String, _ relative: String) -> String {
    if base.isEmpty { return relative }
    if relative.isEmpty { return base }
    return base.hasSuffix("/") ? base + relative : base + "/" + relative
  }
}
