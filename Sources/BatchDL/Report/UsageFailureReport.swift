import BatchDLSupport

/// The `--report` of a `run` whose command line could not be used (an unknown option, `--jobs 0`,
/// `--shard 3/2`): read from the raw arguments, because the parser refused them, so that the
/// report CI diffs says the run did not run instead of being yesterday's.
public enum UsageFailureReport {
  /// The options of `run` that take a value, as the parser spells them.
  static let valued: Set<String> = [
    "--report", "--junit", "--events", "--metrics", "--state", "--jobs", "--shard", "--shards", "--progress",
  ]

  /// The report path and manifest of a `run` command line (`arguments` without the program's
  /// name), or nil when it is not a `run` or names no report. `{shard}` becomes the shard's index
  /// when `--shard I/N` starts with one, else `all`.
  public static func target(of arguments: [String]) -> (report: String, manifest: String)? {
    guard let first = arguments.firstIndex(where: { !$0.hasPrefix("-") }), arguments[first] == "run" else { return nil }
    var values: [String: String] = [:]
    var manifest: String?
    var index = first + 1
    while index < arguments.count {
      let argument = arguments[index]
      if argument == "--" {
        if manifest == nil, index + 1 < arguments.count { manifest = arguments[index + 1] }
        break
      }
      if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--"),
        valued.contains(String(argument[..<equals]))
      {
        values[String(argument[..<equals])] = String(argument[argument.index(after: equals)...])
      } else if valued.contains(argument) {
        if index + 1 < arguments.count { values[argument] = arguments[index + 1] }
        index += 1
      } else if !argument.hasPrefix("-"), manifest == nil {
        manifest = argument
      }
      index += 1
    }
    guard let report = values["--report"], !report.isEmpty else { return nil }
    let shard = values["--shard"].map { String($0.prefix(while: \.isNumber)) } ?? ""
    return (report.replacingOccurrences(of: "{shard}", with: shard.isEmpty ? "all" : shard), manifest ?? "")
  }

  /// Writes the not-run report of a usage error, when the command line names one; returns a
  /// problem to print when it could not be written.
  public static func write(arguments: [String], status: Int32, reason: String) -> String? {
    guard let (path, manifest) = target(of: arguments) else { return nil }
    do {
      try AtomicFile.makeParent(of: path)
      try RunReport.writeNotRun(to: path, manifest: manifest, status: status, reason: reason)
      return nil
    } catch {
      return "batchdl: cannot write the report \(path): \(error)"
    }
  }
}
