import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLPlan
@testable import BatchDLSupport

/// A plan together with the folder its manifest was written to (kept alive for the test's length).
struct Planned {
  let folder: TemporaryDirectory
  let plan: Plan

  /// The requests in scheduled order.
  var ordered: [PlannedRequest] { plan.order.map { plan.requests[Int($0)] } }

  /// The normalized URLs of the requests, in scheduled order.
  var orderedURLs: [String] { ordered.map { plan.url(of: $0) } }

  /// The destinations (or ids, for tasks without one) of each request's tasks, in scheduled order.
  var orderedTasks: [[String]] {
    ordered.map { request in plan.tasks(of: request).map { plan.destination(of: $0) ?? plan.id(of: $0) } }
  }

  /// The request whose normalized URL is `url` (the first, when several share it).
  func request(_ url: String) -> PlannedRequest? {
    plan.requests.first { plan.url(of: $0) == url }
  }

  /// The task whose id is `id`.
  func task(id: String) -> PlannedTask? {
    plan.tasks.first { plan.id(of: $0) == id }
  }

  /// The position (0-based) of the request with normalized URL `url` in the scheduled order.
  func position(_ url: String) -> Int? {
    orderedURLs.firstIndex(of: url)
  }

  /// Warnings rendered like `ManifestFixture.problems` renders errors.
  var warnings: [String] {
    plan.warnings.map { render($0, folder: folder) }
  }

  /// The plan listing as text.
  func text(shard: Shard? = nil, shardCount: Int? = nil) -> String {
    var out = ""
    PlanListing(plan: plan, shard: shard, shardCount: shardCount).writeText(to: &out)
    return out
  }

  /// The plan listing as JSON text.
  func json(shard: Shard? = nil, shardCount: Int? = nil) -> String {
    var out = ""
    PlanListing(plan: plan, shard: shard, shardCount: shardCount).writeJSON(to: &out)
    return out
  }
}

struct PlanFailed: Error, CustomStringConvertible {
  var description: String
}

/// Plans `yaml` (written as `manifest.yaml` beside `files`); throws every problem when it is invalid.
func planned(_ yaml: String, files: [String: String] = [:], environment: [String: String] = [:]) throws -> Planned {
  let (folder, result) = ManifestFixture.plan(yaml, files: files, environment: environment)
  switch result {
  case .success(let plan):
    return Planned(folder: folder, plan: plan)
  case .failure(let error):
    throw PlanFailed(description: error.diagnostics.map { render($0, folder: folder) }.joined(separator: "\n"))
  }
}

/// `LINE:COLUMN: severity: message`, prefixed with the file name for files other than the manifest,
/// and with the test folder's path removed from the message.
func render(_ diagnostic: Diagnostic, folder: TemporaryDirectory) -> String {
  let file = diagnostic.mark.file
  let prefix = file == folder.path + "/manifest.yaml" ? "" : String(file.dropFirst(folder.path.count + 1)) + ":"
  let message = diagnostic.message.replacingOccurrences(of: folder.path + "/", with: "")
  return "\(prefix)\(diagnostic.mark.line):\(diagnostic.mark.column): \(diagnostic.severity.rawValue): \(message)"
}

/// The problems of an invalid manifest, rendered by `render(_:folder:)`; [] when it plans.
func problems(_ yaml: String, files: [String: String] = [:], environment: [String: String] = [:]) -> [String] {
  let (folder, result) = ManifestFixture.plan(yaml, files: files, environment: environment)
  guard case .failure(let error) = result else { return [] }
  return error.diagnostics.map { render($0, folder: folder) }
}

/// Checks rendered diagnostics against `expected`, in order.
func expectMatch(_ found: [String], _ expected: [Expected], sourceLocation: SourceLocation = #_sourceLocation) {
  let message = "expected \(expected.count) problems:\n\(expected.map(\.description).joined(separator: "\n"))\nfound:\n"
  #expect(
    found.count == expected.count, "\(message)\(found.joined(separator: "\n"))", sourceLocation: sourceLocation)
  for (item, line) in zip(expected, found) {
    #expect(
      line.hasPrefix("\(item.position): \(item.severity): "), "expected \(item), found: \(line)",
      sourceLocation: sourceLocation)
    for word in item.words {
      #expect(line.contains(word), "expected '\(word)' in: \(line)", sourceLocation: sourceLocation)
    }
  }
}

/// Checks that planning `yaml` fails with exactly `expected`.
func expectProblems(
  _ yaml: String, files: [String: String] = [:], environment: [String: String] = [:], _ expected: [Expected],
  sourceLocation: SourceLocation = #_sourceLocation
) {
  expectMatch(problems(yaml, files: files, environment: environment), expected, sourceLocation: sourceLocation)
}

/// A manifest with one session `s` (kind `kind`, `dest` when given) holding `tasks` (YAML list items,
/// indented by the caller as if at column 1).
func manifest(_ tasks: String, dest: String? = nil, kind: String? = nil) -> String {
  var yaml = "version: 1\nsessions:\n  s:\n"
  if let kind { yaml += "    kind: \(kind)\n" }
  if let dest { yaml += "    dest: \(dest)\n" }
  yaml += "    tasks:\n"
  for line in tasks.split(separator: "\n", omittingEmptySubsequences: false) {
    yaml += line.isEmpty ? "\n" : "      " + line + "\n"
  }
  return yaml
}

/// `text` parsed by Foundation's JSON parser.
func parseJSON(_ text: String) throws -> Any {
  try JSONSerialization.jsonObject(with: Data(text.utf8))
}
