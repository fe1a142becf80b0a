import BatchDLSupport
import Foundation

/// `partial_dir:` (session): where a session's partial files live instead of beside their
/// destinations, so that a killed run leaves nothing half-written in the published tree. It must be
/// on `dest`'s filesystem, or the final rename would not be atomic: checked here, on the folder or
/// its nearest parent that exists.
extension ManifestDecoder {
  /// `partial_dir:` as written, normalized lexically (relative paths may climb out of `dest` with
  /// `..`: a folder beside the published tree is the point).
  mutating func partialDir(_ node: YAMLNode) -> (path: String, mark: SourceMark)? {
    guard let written = string(node, what: "partial_dir", expand: .plain) else { return nil }
    switch PathRules.normalize(written, allowAbsolute: true) {
    case .success(let path): return (path, node.mark)
    case .failure(let problem) where problem.climbsOut:
      // Climbing is allowed here; only the other problems (NUL, control bytes, length) are not.
      return (written, node.mark)
    case .failure(let problem):
      diagnostics.error(node.mark, "partial_dir '\(written)' \(problem.message)")
      return nil
    }
  }

  /// Reports a `partial_dir:` (`written`) that is not on the filesystem of `dest`.
  mutating func checkPartialDir(_ written: String, dest: String, at mark: SourceMark) {
    let root = FileAccess.normalize(FileAccess.resolve(dest.isEmpty ? "." : dest, against: absoluteDirectory))
    let folder = Self.partialFolder(written, root: root)
    guard let (destDevice, destFound) = Self.device(nearest: root),
      let (folderDevice, folderFound) = Self.device(nearest: folder)
    else { return }
    if let problem = Self.sameFilesystemProblem(
      partialDir: written, dest: dest.isEmpty ? "." : dest, destDevice: destDevice, folderDevice: folderDevice,
      destFound: destFound, folderFound: folderFound)
    {
      diagnostics.error(mark, problem)
    }
  }

  /// The folder `partial_dir:` names (`written`, as normalized), absolute: relative to `root`
  /// (the session's `dest`, absolute and normalized) unless it is absolute.
  package static func partialFolder(_ written: String, root: String) -> String {
    FileAccess.normalize(FileAccess.resolve(written, against: root))
  }

  /// Why a `partial_dir:` on device `folderDevice` (told by `folderFound`, the folder or its
  /// nearest parent that exists) cannot serve a `dest` on `destDevice`; nil when it can.
  package static func sameFilesystemProblem(
    partialDir: String, dest: String, destDevice: UInt64, folderDevice: UInt64, destFound: String,
    folderFound: String
  ) -> String? {
    guard destDevice != folderDevice else { return nil }
    return
      "partial_dir '\(partialDir)' (\(folderFound)) is on another filesystem than dest '\(dest)' (\(destFound)): a finished file could not be renamed into place atomically; choose a folder on dest's filesystem, e.g. one beside dest"
  }

  /// The device of `path` or of its nearest parent that exists (links followed: where the files
  /// go), with the path looked at; nil when nothing up to `/` can be looked at.
  static func device(nearest path: String) -> (UInt64, String)? {
    var current = path
    var info = stat()
    // Bounded: each turn drops one component, and `/` is its own parent.
    while stat(current, &info) != 0 {
      let up = FileAccess.directory(of: current)
      if up == current || up.isEmpty { return nil }
      current = up
    }
    return (UInt64(info.st_dev), current)
  }
}
