import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest

/// Checks that `yaml` yields exactly `expected`, in that order (diagnostics come sorted by position).
func expectProblems(
  _ yaml: String, files: [String: String] = [:], environment: [String: String] = [:], _ expected: [Expected],
  sourceLocation: SourceLocation = #_sourceLocation
) {
  let found = ManifestFixture.problems(yaml, files: files, environment: environment)
  expectMatch(found, expected, sourceLocation: sourceLocation)
}

/// Checks diagnostics already rendered as `LINE:COLUMN: severity: message` against `expected`.
func expectMatch(_ found: [String], _ expected: [Expected], sourceLocation: SourceLocation = #_sourceLocation) {
  #expect(
    found.count == expected.count, "expected \(expected.count) problems:\n\(expected)\nfound:\n\(render(found))",
    sourceLocation: sourceLocation)
  for (item, line) in zip(expected, found) {
    #expect(
      line.hasPrefix("\(item.position): \(item.severity): "), "expected \(item), found: \(line)",
      sourceLocation: sourceLocation)
    for word in item.words {
      #expect(line.contains(word), "expected '\(word)' in: \(line)", sourceLocation: sourceLocation)
    }
  }
}

/// Checks that `yaml` is a valid manifest (no errors; warnings are allowed).
func expectValid(
  _ yaml: String, files: [String: String] = [:], environment: [String: String] = [:],
  sourceLocation: SourceLocation = #_sourceLocation
) {
  let found = ManifestFixture.problems(yaml, files: files, environment: environment)
  #expect(found.isEmpty, "unexpected problems:\n\(render(found))", sourceLocation: sourceLocation)
}

func render(_ lines: [String]) -> String { lines.joined(separator: "\n") }

/// The decoded manifest (the manifest layer only, no planning), or the error listing every problem.
func load(_ yaml: String, environment: [String: String] = [:]) throws(ManifestError) -> Manifest {
  try ManifestLoader.parse(Array(yaml.utf8), path: "/virtual/manifest.yaml", environment: environment).manifest
}

/// The diagnostics of the manifest layer alone, rendered like `ManifestFixture.problems`.
func manifestProblems(_ yaml: String, environment: [String: String] = [:]) -> [String] {
  do {
    _ = try load(yaml, environment: environment)
    return []
  } catch {
    return error.diagnostics.map { "\($0.mark.line):\($0.mark.column): \($0.severity.rawValue): \($0.message)" }
  }
}

extension Manifest {
  func session(_ name: String) -> Session? { sessions.first { $0.name == name } }
}

extension Session {
  /// The task specs of the session (list entries left out).
  var specs: [TaskSpec] {
    tasks.compactMap { entry in
      if case .task(let spec) = entry { return spec }
      return nil
    }
  }

  func header(_ name: String) -> String? {
    headers.first { $0.name.lowercased() == name.lowercased() }?.value
  }
}

/// A valid manifest with one session `main` holding one download; lines 1 to 5.
let minimal = """
  version: 1
  sessions:
    main:
      tasks:
        - download: https://example.org/a.bin

  """

/// `minimal` with `lines` (written without indentation) added under session `main`, from line 6 on.
func minimal(adding lines: String) -> String {
  minimal + lines.split(separator: "\n").map { "    " + $0 + "\n" }.joined()
}

/// The diagnostics as `LINE:COLUMN: severity: message`.
func rendered(_ document: MetalinkDocument) -> [String] {
  document.diagnostics.map { "\($0.mark.line):\($0.mark.column): \($0.severity.rawValue): \($0.message)" }
}
