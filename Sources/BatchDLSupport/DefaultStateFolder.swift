/// The state folder when `--state` names none: `.batchdl/` in the manifest's folder. `StateFolder`
/// keeps its files there; the planner keeps every destination out of it.
public enum DefaultStateFolder {
  public static let name = ".batchdl"
}
