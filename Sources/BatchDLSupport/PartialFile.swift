import Crypto

/// batchdl's partial files: `PATH.batchdl-part`, beside the file they become, or in a session's
/// `partial_dir:` (same filesystem either way, so that the final rename is atomic). A download in
/// progress keeps its bytes in its destination's (`Plan.partialPath(of:session:)`), `AtomicFile`
/// writes a whole file beside its path before it renames it into place, and no destination may
/// name one (`ReservedPaths`). The one spelling of the suffix.
public enum PartialFile {
  /// The suffix of partial files.
  public static let suffix = ".batchdl-part"

  /// Longest file name kept in a partial file's name in a `partial_dir:` (bytes); a longer one is
  /// left out (the digest alone names the file), so that the name stays under `NAME_MAX`.
  static let longestKeptName = 200

  /// The partial file of the file at `path`, beside it.
  public static func path(of path: String) -> String { path + suffix }

  /// The partial file of the file at `path` (absolute) in the folder `folder` (absolute), or
  /// beside it when `folder` is nil: `DIGEST-NAME.batchdl-part`, where DIGEST is the first 16 hex
  /// digits of the SHA-256 of the path's bytes, so that two destinations of one name in two
  /// folders never share a partial file.
  public static func path(of path: String, in folder: String?) -> String {
    guard let folder else { return Self.path(of: path) }
    let digest = SHA256.hash(data: Array(path.utf8)).hexString.prefix(16)
    let name = FileAccess.name(of: path)
    let kept = name.utf8.count <= longestKeptName ? "-" + name : ""
    let slash = folder.hasSuffix("/") ? "" : "/"
    return folder + slash + digest + kept + suffix
  }

  /// Whether a file named `name` (UTF-8, one path component) is a partial file.
  package static func isPartial(name: UnsafeRawBufferPointer) -> Bool {
    let suffix = Self.suffix.utf8
    return name.count >= suffix.count && name.suffix(suffix.count).elementsEqual(suffix)
  }
}
