import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import Foundation

/// Loads a manifest and plans it: what every command does before anything else.
public enum ManifestCheck {
  /// The plan of the manifest at `path`, or every problem found in it. Documents that
  /// `metalink:` entries name by URL are fetched first (`.fetch`) or read from the state folder
  /// (`state`: `--state`, else `.batchdl/` beside the manifest); `fetching`: only these sessions'
  /// documents are fetched (`Descriptors.prepare`).
  public static func plan(
    path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
    descriptors mode: DescriptorMode = .stored, state: String? = nil, outputs: [String] = [],
    fetching: Set<String>? = nil
  ) throws(ManifestError) -> Plan {
    let (manifest, diagnostics) = ManifestLoader.read(path: path, environment: environment)
    guard let manifest else { throw ManifestError(diagnostics: diagnostics) }
    var descriptors: DescriptorSet?
    // A manifest with errors is not planned: nothing is fetched for it.
    if Descriptors.needed(by: manifest) && !diagnostics.contains(where: { $0.severity == .error }) {
      descriptors = Descriptors.prepare(
        manifest, state: StateFolder(option: state, manifest: manifest), mode: mode, fetching: fetching)
    }
    let stateFolder = StateFolder(option: state, manifest: manifest)
    let plan = try Planner().plan(
      manifest, warnings: diagnostics, descriptors: descriptors, stateFolder: stateFolder.path, outputs: outputs)
    // `checksums: sidecar`: the files are known now; their sidecars are fetched, and the plan made
    // again with them.
    guard !plan.wantedSidecars.isEmpty, var withSidecars = descriptors else { return plan }
    Descriptors.prepareSidecars(
      plan.wantedSidecars, manifest: manifest, state: stateFolder, mode: mode, fetching: fetching,
      into: &withSidecars)
    return try Planner().plan(
      manifest, warnings: diagnostics, descriptors: withSidecars, stateFolder: stateFolder.path, outputs: outputs)
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
