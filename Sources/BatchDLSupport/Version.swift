/// The version `batchdl --version` prints.
public enum BatchDLVersion {
  public static let current = "0.1.0"
}
