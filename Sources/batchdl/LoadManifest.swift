import ArgumentParser
import BatchDL
import BatchDLPlan
import BatchDLStore
import BatchDLSupport

/// What every command that works on one manifest does first: check and plan it, print its
/// problems and warnings, and exit 2 when it is invalid. `descriptors`: whether documents named by
/// URL are fetched first (`run`, `plan`) or read from the state folder `state`.
/// `quiet`: the manifest's warnings are left out (`run --quiet`: a warning that a committed
/// manifest gives every night would mail every night; `validate` shows them); errors never are.
func loadPlan(
  _ manifest: String, descriptors: DescriptorMode = .stored, state: String? = nil, quiet: Bool = false,
  outputs: [String] = []
) throws -> Plan {
  var stderr = StandardError()
  do {
    let plan = try ManifestCheck.plan(path: manifest, descriptors: descriptors, state: state, outputs: outputs)
    if !quiet { ManifestCheck.report(plan.warnings, for: manifest, to: &stderr) }
    return plan
  } catch {
    ManifestCheck.report(error.diagnostics, for: manifest, to: &stderr)
    throw ExitCode(ExitStatus.invalid.rawValue)
  }
}

/// The state folder a command uses: `--state`, else `.batchdl/` beside the manifest; `shard`
/// selects a sharded run's sub-folder.
func stateFolder(_ option: String?, for plan: Plan, shard: Shard? = nil) -> StateFolder {
  StateFolder(option: option, manifest: plan.manifest, shard: shard)
}

/// Prints a state folder that cannot be used and exits 5.
func fail(_ error: StateError) -> ExitCode {
  var stderr = StandardError()
  stderr.write("batchdl: \(error)\n")
  return ExitCode(ExitStatus.stateUnusable.rawValue)
}
