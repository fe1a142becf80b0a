import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import Foundation

/// What `run` checks before it sends the first request, documents included: that no other run
/// holds the state folder's lock (exit 4) and that the state folder can be read (exit 5). The
/// documents a manifest names by URL are fetched before planning, and their copies are written to
/// the state folder: a run that then stops on the lock or a damaged database has already sent
/// requests, and written beside another run.
public enum RunPreflight {
  /// Takes the state folder's lock and checks that the folder can be used, for a manifest whose
  /// documents are fetched before planning: returns the lock (the run keeps it to its end, so that
  /// no second run fetches documents into the folder meanwhile), or nil when the run takes it
  /// itself later (nothing is fetched before planning). Throws the run's error for a held lock or
  /// a state folder that cannot be used.
  public static func check(
    manifestPath: String, statePath: String?, shard: Shard?,
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(RunError) -> StateLock? {
    let (manifest, diagnostics) = ManifestLoader.read(path: manifestPath, environment: environment)
    // An invalid manifest is the planner's to report.
    // (Ephemeral sessions too: their runs take the lock as well, and two of them at once must not
    // both fetch.)
    guard let manifest, !diagnostics.contains(where: { $0.severity == .error }), Descriptors.needed(by: manifest)
    else { return nil }
    let state = StateFolder(option: statePath, manifest: manifest, shard: shard)
    if let held = StateLock.holding(folder: state.path, name: state.lockName) { throw .locked(held) }
    // The folder is made now, as the documents' copies would make it: one that cannot be (a file
    // in its place, no permission) stops the run before anything is sent.
    do {
      try FileAccess.makeDirectories(state.path)
    } catch {
      throw .stateFolder("cannot use the state folder \(state.path): \(error); nothing was sent")
    }
    let lock = try Runner.lock(state, name: state.lockName)
    var info = stat()
    guard stat(state.database, &info) == 0 else { return lock }
    do throws(StateError) {
      let store = try state.openStore(readOnly: true)
      _ = try state.load(store)
    } catch {
      throw .state(error)
    }
    return lock
  }
}
