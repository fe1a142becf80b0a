import Foundation

/// Reads a manifest file: YAML, then the typed model. Every problem is collected before failing.
public enum ManifestLoader {
  /// Loads and checks `path`. `${VAR}` references expand from `environment`.
  ///
  /// - Throws: `ManifestError` with every problem found, in order of position.
  /// - Returns: the manifest and its warnings.
  public static func load(
    path: String, environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(ManifestError) -> (manifest: Manifest, warnings: [Diagnostic]) {
    let start = SourceMark(file: path, line: 1, column: 1)
    let bytes: [UInt8]
    do {
      bytes = try FileAccess.readAll(path)
    } catch {
      throw ManifestError(diagnostics: [Diagnostic(.error, at: start, "cannot read the manifest: \(error.reason)")])
    }
    return try parse(bytes, path: path, environment: environment)
  }

  /// Checks manifest text that claims to come from `path` (used by `load` and by tests).
  public static func parse(
    _ bytes: [UInt8], path: String, environment: [String: String]
  ) throws(ManifestError) -> (manifest: Manifest, warnings: [Diagnostic]) {
    var diagnostics = Diagnostics()
    let start = SourceMark(file: path, line: 1, column: 1)
    guard let root = YAMLParser().parse(bytes, file: path, diagnostics: &diagnostics) else {
      if !diagnostics.hasErrors {
        diagnostics.error(start, "the manifest is empty: it needs 'version: 1' and 'sessions:'")
      }
      throw ManifestError(diagnostics: diagnostics.sorted)
    }
    var decoder = ManifestDecoder(file: path, environment: environment)
    let manifest = decoder.decode(root, path: path, directory: FileAccess.directory(of: path))
    diagnostics.append(contentsOf: decoder.diagnostics)
    guard let manifest, !diagnostics.hasErrors else {
      throw ManifestError(diagnostics: diagnostics.sorted)
    }
    return (manifest, diagnostics.sorted)
  }
}
