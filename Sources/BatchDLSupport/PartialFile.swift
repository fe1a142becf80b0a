/// batchdl's partial files: `PATH.batchdl-part`, beside the file they become (same filesystem, so
/// that the final rename is atomic). A download in progress keeps its bytes in its destination's
/// (`Plan.partialPath(of:)`), `AtomicFile` writes a whole file there before it renames it into
/// place, and no destination may name one (`ReservedPaths`). The one spelling of the suffix.
public enum PartialFile {
  /// The suffix of partial files.
  public static let suffix = ".batchdl-part"

  /// The partial file of the file at `path`.
  public static func path(of path: String) -> String { path + suffix }

  /// Whether a file named `name` (UTF-8, one path component) is a partial file.
  package static func isPartial(name: UnsafeRawBufferPointer) -> Bool {
    let suffix = Self.suffix.utf8
    return name.count >= suffix.count && name.suffix(suffix.count).elementsEqual(suffix)
  }
}
