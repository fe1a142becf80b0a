import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLPlan
@testable import BatchDLSupport

/// A property test of the planner: manifests of many shapes, generated from a seed (sessions with
/// absolute, relative, shared and nested `dest`s; `list:` files of 1 to 20,000 lines with repeated
/// lines and destination columns; explicit and default ids; `after:`), planned with no network.
/// The planner must never trap, and every plan must keep what the contract promises of ids and
/// destinations, whatever the shape.
@Suite struct GeneratedManifestTests {
  /// SplitMix64: one integer seed decides a whole manifest.
  struct Generator {
    var state: UInt64
    mutating func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
  }

  /// A generated manifest: its text and its list files. `root` stands for the absolute folder the
  /// `dest`s are under, so that one manifest can be planned with two roots.
  struct Shape {
    var yaml: String
    var files: [String: String]
    var largest: Int

    func text(root: String) -> String { yaml.replacingOccurrences(of: "@ROOT@", with: root) }
  }

  static let dests = [
    "@ROOT@/srv/mirror", "@ROOT@/srv/mirror/sub", "@ROOT@/srv/other", "m", "m/sub", "", "/srv/mirror",
  ]
  static let names = [
    "f{i}.bin", "{i}.bin", "pkg-{i}.tar.gz", "dir {i}/file {i}.txt", "caf\u{E9}-{i}", "cafe\u{301}-{i}", "a/b/c{i}",
  ]

  static func shape(seed: UInt64) -> Shape {
    var random = Generator(state: seed)
    var yaml = "version: 1\nsessions:\n"
    var files: [String: String] = [:]
    var ids: [String] = []
    var largest = 0
    let sessionCount = 1 + random.below(4)
    for session in 0..<sessionCount {
      yaml += "  s\(session):\n"
      let kind = random.pick(["default", "default", "ephemeral", "background"])
      if kind != "default" { yaml += "    kind: \(kind)\n" }
      if kind == "background" { yaml += "    identifier: org.example.gen.\(seed).\(session)\n" }
      let dest = random.pick(dests)
      if !dest.isEmpty { yaml += "    dest: \"\(dest)\"\n" }
      yaml += "    tasks:\n"
      for entry in 0..<(1 + random.below(4)) {
        let name = random.pick(names)
        let host = "http://127.0.0.\(1 + random.below(3)):9/"
        if random.chance(40) {
          // A list of 1 to 20,000 lines (mostly short), some repeated, some with a destination.
          let lines = random.chance(3) ? 1 + random.below(20_000) : 1 + random.below(200)
          largest = max(largest, lines)
          var text = ""
          for line in 0..<lines {
            let index = random.chance(5) ? max(0, line - 1 - random.below(max(1, line))) : line
            let file = name.replacingOccurrences(of: "{i}", with: String(index))
            let url = host + "l\(entry)/" + file.replacingOccurrences(of: " ", with: "%20")
            text += random.chance(15) ? "\(url) \"d\(entry)/\(file)\"\n" : url + "\n"
          }
          let listName = "list-\(session)-\(entry).txt"
          files[listName] = text
          yaml += "      - list: \(listName)\n"
          if random.chance(30) { yaml += "        to: \"sub\(entry)/\"\n" }
          if kind == "background" || random.chance(50) { yaml += "        kind: download\n" }
        } else {
          let file = name.replacingOccurrences(of: "{i}", with: String(random.below(5)))
          let url = host + "t/" + file.replacingOccurrences(of: " ", with: "%20")
          let taskKind = kind == "background" ? "download" : random.pick(["download", "download", "data"])
          yaml += "      - \(taskKind): \"\(url)\"\n"
          if random.chance(40) { yaml += "        to: \"t\(random.below(3))/\(file)\"\n" }
          if random.chance(25) {
            let id = "id-\(random.below(6))"
            yaml += "        id: \(id)\n"
            ids.append(id)
          }
          if !ids.isEmpty && random.chance(25) { yaml += "        after: [\(random.pick(ids))]\n" }
        }
      }
    }
    return Shape(yaml: yaml, files: files, largest: largest)
  }

  /// What every plan must keep: ids unique and never the machine's path under a relative default,
  /// destinations unique, every task's request exists, and the ids stay the same when every
  /// absolute `dest` moves.
  static func check(_ plan: Plan, moved: Plan?) -> [String] {
    var problems: [String] = []
    var ids = Set<[UInt8]>()
    var destinations = Set<[UInt8]>()
    for task in plan.tasks {
      let id = Array(plan.id(of: task).utf8)
      if !ids.insert(id).inserted { problems.append("two tasks have the id \(plan.id(of: task))") }
      if let destination = plan.destination(of: task), !destinations.insert(Array(destination.utf8)).inserted {
        problems.append("two tasks write \(destination)")
      }
      if Int(task.request) >= plan.requests.count { problems.append("a task names a request that does not exist") }
    }
    if plan.order.count != plan.requests.count { problems.append("the order does not hold every request once") }
    if let moved {
      let before = plan.tasks.map { plan.id(of: $0) }
      let after = moved.tasks.map { moved.id(of: $0) }
      if before != after {
        let changed = zip(before, after).first { $0 != $1 }
        problems.append(
          "ids moved with dest: \(changed.map { "\($0) → \($1)" } ?? "count \(before.count) → \(after.count)")")
      }
    }
    return problems
  }

  /// Plans `shape` under `root`, in `folder`; the plan, or nil when the manifest is invalid.
  static func plan(_ shape: Shape, root: String, in folder: TemporaryDirectory) -> Result<Plan, ManifestError> {
    folder.write("manifest.yaml", shape.text(root: root))
    do {
      return .success(try ManifestCheck.plan(path: folder.path + "/manifest.yaml", environment: [:]))
    } catch {
      return .failure(error)
    }
  }

  /// 300 manifests, each planned twice (its absolute `dest`s under two roots); none traps, and every
  /// valid plan keeps the invariants.
  @Test func generatedManifestsPlanWithoutTrappingAndKeepTheirInvariants() throws {
    var planned = 0
    var invalid = 0
    var problems: [String] = []
    var lines = 0
    for seed in UInt64(1)...300 {
      let shape = Self.shape(seed: seed)
      let folder = TemporaryDirectory()
      for (name, text) in shape.files { folder.write(name, text) }
      if ProcessInfo.processInfo.environment["SHOW_SEED"] == String(seed) { print(shape.yaml, shape.files) }
      lines += shape.files.values.reduce(0) { $0 + $1.utf8.count { $0 == 0x0A } }
      let first = Self.plan(shape, root: "/data/one", in: folder)
      let second = Self.plan(shape, root: "/var/lib/two/deeper", in: folder)
      switch (first, second) {
      case (.success(let plan), .success(let moved)):
        planned += 1
        problems += Self.check(plan, moved: moved).map { "seed \(seed): \($0)" }
      case (.failure(let error), .failure):
        invalid += 1
        if ProcessInfo.processInfo.environment["SHOW_INVALID"] != nil {
          print("seed \(seed): \(error.diagnostics.prefix(2).map(\.message))")
        }
        // An invalid manifest says where: every error has a line.
        if error.diagnostics.contains(where: { $0.severity == .error && $0.mark.line < 1 }) {
          problems.append("seed \(seed): an error without a line: \(error.diagnostics.map(\.message))")
        }
      default:
        problems.append("seed \(seed): valid under one root and not the other")
      }
    }
    print("generated manifests: 300, plans: \(planned * 2), invalid: \(invalid), list lines: \(lines)")
    #expect(problems.isEmpty, "\(problems.prefix(10))")
    #expect(planned > 150, "most generated manifests should be valid: \(planned) of 300")
  }

  /// The built binary's `validate` and `plan --offline` on generated manifests with `dest:
  /// /srv/mirror` (the first line of most mirror manifests): each exits 0 or 2, never by a signal.
  @Test func theBinaryNeverDiesByASignalOnGeneratedManifests() throws {
    var invocations = 0
    var signals: [String] = []
    for seed in UInt64(1001)...1030 {
      let shape = Self.shape(seed: seed)
      let folder = TemporaryDirectory()
      for (name, text) in shape.files { folder.write(name, text) }
      folder.write("manifest.yaml", shape.text(root: "/srv/root"))
      for command in [["validate"], ["plan", "--offline"]] {
        let outcome = try BinaryRunner.run(command + ["manifest.yaml"], in: folder.path)
        invocations += 1
        if ![0, 2].contains(outcome.status) || outcome.stderr.contains("Fatal error") {
          signals.append("seed \(seed) \(command[0]): exit \(outcome.status) \(outcome.stderr.prefix(300))")
        }
      }
    }
    print("binary invocations: \(invocations), deaths by a signal: \(signals.count)")
    #expect(signals.isEmpty, "\(signals)")
  }

  /// Lists under `dest: /srv/mirror` of the lengths and name shapes that made the planner trap.
  @Test(arguments: [10, 100, 150, 2_000]) func listsUnderSrvMirrorPlan(lines: Int) throws {
    for shape in ["f{i}.bin", "{i}.bin", "pkg-{i}.tar.gz"] {
      let folder = TemporaryDirectory()
      let list = (0..<lines).map { "http://127.0.0.1:9/x/" + shape.replacingOccurrences(of: "{i}", with: String($0)) }
      folder.write("list.txt", list.joined(separator: "\n") + "\n")
      folder.write(
        "manifest.yaml", "version: 1\nsessions:\n  s:\n    dest: /srv/mirror\n    tasks:\n      - list: list.txt\n")
      for command in [["validate"], ["plan", "--offline"]] {
        let outcome = try BinaryRunner.run(command + ["manifest.yaml"], in: folder.path)
        #expect(outcome.status == 0, "\(shape) × \(lines), \(command[0]): \(outcome.stderr.prefix(300))")
      }
    }
  }
}
