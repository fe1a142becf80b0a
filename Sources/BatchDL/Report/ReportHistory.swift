import BatchDLManifest
import BatchDLStore
import BatchDLSupport
import Foundation

/// The run reports a manifest's state folder keeps (`report_history`), read back for `report diff
/// MANIFEST` and `report show MANIFEST`.
extension RunReport {
  /// The history of the manifest at `manifestPath` in its state folder (`state`: `--state`, else
  /// `.batchdl/` beside the manifest), the folder `run` keeps it in.
  public static func history(manifest manifestPath: String, state: String?) throws(ReadError) -> RunHistory {
    let (manifest, diagnostics) = ManifestLoader.read(path: manifestPath)
    guard let manifest else {
      let why = diagnostics.first { $0.severity == .error }?.description ?? "\(manifestPath): cannot read the manifest"
      throw ReadError(description: why)
    }
    return StateFolder(option: state, manifest: manifest).runHistory
  }

  /// Run `offset` of the manifest's history (-1 the last run, -2 the one before), its path and
  /// its report.
  public static func read(
    manifest: String, state: String?, run offset: Int
  ) throws(ReadError) -> (path: String, report: RunReport) {
    let history = try history(manifest: manifest, state: state)
    guard let entry = history.entry(run: offset) else {
      throw ReadError(description: missingRun(offset, of: manifest, in: history))
    }
    return (entry.path, try read(path: entry.path))
  }

  /// Why run `offset` is not in `history`, and what to do.
  static func missingRun(_ offset: Int, of manifest: String, in history: RunHistory) -> String {
    let count = history.entries().count
    guard count > 0 else {
      return
        "\(manifest): no run is kept yet in \(history.folder): each 'batchdl run \(manifest)' keeps its report there (report_history, default 10)"
    }
    return
      "\(manifest): there is no run \(offset): \(history.summary); report_history: N at the top of the manifest keeps more"
  }
}
