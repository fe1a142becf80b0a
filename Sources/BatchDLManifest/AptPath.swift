import BatchDLSupport

/// Lexical checks of the paths an APT repository's documents name (bytes from the network): a
/// Release's index paths, relative to `dists/SUITE/`, and an index's pool paths, relative to the
/// repository's root. Each returns why the path is refused, or nil.
public enum AptPath {
  /// Why `path` cannot be a relative path inside its folder: empty, absolute, an empty, `.` or `..`
  /// segment, a control character, bytes that are not UTF-8, or past Linux's PATH_MAX or NAME_MAX.
  public static func problem(_ path: [UInt8]) -> String? {
    if path.isEmpty { return "the path is empty" }
    if path.count > PathRules.maxPathBytes {
      return "the path is longer than \(PathRules.maxPathBytes) bytes, the most a path may be (PATH_MAX)"
    }
    if path[0] == 0x2F { return "the path is absolute" }
    if let bad = path.firstIndex(where: { $0 < 0x20 || $0 == 0x7F }) {
      return "the path contains a control character (byte 0x\(String(path[bad], radix: 16, uppercase: true)))"
    }
    guard let text = String(validating: path, as: UTF8.self) else { return "the path is not UTF-8" }
    if let problem = PathRules.lengthOrControlProblem(text) { return "the path \(problem.message)" }
    for segment in path.split(separator: 0x2F, omittingEmptySubsequences: false) {
      if segment.isEmpty { return "the path has an empty segment ('//', or a '/' at its end)" }
      if segment.elementsEqual([0x2E]) { return "the path has a '.' segment" }
      if segment.elementsEqual([0x2E, 0x2E]) { return "the path climbs out of its folder with '..'" }
    }
    return nil
  }

  /// `problem(_:)`, and why a pool file may not be at `path` (relative to the repository's root):
  /// it is in the `dists/` tree, which only the Release and its index files fill, or it names
  /// batchdl's own files (the `.batchdl` state folder, a `.batchdl-part` partial file).
  public static func poolProblem(_ path: [UInt8]) -> String? {
    if let problem = problem(path) { return problem }
    if path.starts(with: Array("dists/".utf8)) {
      return "the path is in the 'dists/' tree, which holds the Release and its index files, never a package"
    }
    if let own = ownFileProblem(path) { return own }
    return nil
  }

  /// Why `path` names one of batchdl's own files: a segment `.batchdl` (the default state folder)
  /// or one ending in `.batchdl-part` (a partial file).
  public static func ownFileProblem(_ path: [UInt8]) -> String? {
    let state = Array(DefaultStateFolder.name.utf8)
    let partial = Array(PartialFile.suffix.utf8)
    for segment in path.split(separator: 0x2F) {
      if segment.elementsEqual(state) { return "the path names batchdl's state folder (\(DefaultStateFolder.name))" }
      if segment.count >= partial.count, segment.suffix(partial.count).elementsEqual(partial) {
        return "the path names a batchdl partial file (*\(PartialFile.suffix))"
      }
    }
    return nil
  }

  /// A path shown in a message: its text with control characters escaped, at most 120 characters.
  public static func shown(_ path: [UInt8]) -> String {
    ShownText.escaped(String(decoding: path, as: UTF8.self), limit: 120)
  }
}
