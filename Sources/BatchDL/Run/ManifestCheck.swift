import Foundation

/// Loads a manifest and plans it: what every command does before anything else.
public enum ManifestCheck {
  /// The plan of the manifest at `path`, or every problem found in it.
  public static func plan(
    path: String, environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(ManifestError) -> Plan {
    let (manifest, diagnostics) = ManifestLoader.read(path: path, environment: environment)
    guard let manifest else { throw ManifestError(diagnostics: diagnostics) }
    return try Planner().plan(manifest, warnings: diagnostics)
  }

  /// Prints diagnostics as `FILE:LINE:COLUMN: severity: message`, then a count of errors.
  public static func report(_ diagnostics: [Diagnostic], for path: String, to out: inout some TextOutputStream) {
    for diagnostic in diagnostics { out.write(diagnostic.description + "\n") }
    let errors = diagnostics.count { $0.severity == .error }
    if errors > 0 {
      out.write("\(path): \(errors) error\(errors == 1 ? "" : "s"); nothing was sent\n")
    }
  }
}
