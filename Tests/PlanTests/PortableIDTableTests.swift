import Foundation
import Testing

@testable import BatchDLPlan

/// The default ids of tasks whose files share a name, across every pair of `dest` forms: an id is
/// never the machine's path, two tasks never share one, and in a manifest of several sessions a
/// task under an absolute `dest` is `SESSION:RELATIVE` whether or not another file has its name
/// (so that its id never changes when another session's listing grows).
@Suite struct PortableIDTableTests {
  struct Row: CustomTestStringConvertible, Sendable {
    var first: String
    var second: String
    var ids: [String]
    var testDescription: String { "\(first.isEmpty ? "(none)" : first) × \(second.isEmpty ? "(none)" : second)" }
  }

  static let rows: [Row] = [
    Row(first: "/srv/a", second: "/srv/b", ids: ["one:f.bin", "two:f.bin"]),
    Row(first: "/srv/a", second: "/srv/a/sub", ids: ["one:f.bin", "two:f.bin"]),
    Row(first: "/srv/a", second: "m", ids: ["one:f.bin", "m/f.bin"]),
    Row(first: "/srv/a", second: "", ids: ["one:f.bin", "f.bin"]),
    Row(first: "m", second: "/srv/b", ids: ["m/f.bin", "two:f.bin"]),
    Row(first: "", second: "/srv/b", ids: ["f.bin", "two:f.bin"]),
    Row(first: "m", second: "n", ids: ["m/f.bin", "n/f.bin"]),
    Row(first: "/srv/a/deep/er", second: "/srv/b", ids: ["one:f.bin", "two:f.bin"]),
  ]

  @Test(arguments: rows) func idsOfOneNameUnderTwoDests(row: Row) throws {
    func session(_ name: String, _ dest: String, _ path: String) -> String {
      "  \(name):\n" + (dest.isEmpty ? "" : "    dest: \(dest)\n")
        + "    tasks:\n      - download: http://127.0.0.1:9/\(path)/f.bin\n"
    }
    let yaml = "version: 1\nsessions:\n" + session("one", row.first, "a") + session("two", row.second, "b")
    let plan = try planned(yaml).plan
    #expect(plan.tasks.map { plan.id(of: $0) } == row.ids)
  }

  /// A list of many names under an absolute `dest`, then a second session's file of one of them:
  /// ids stay relative, and only the repeated name is qualified.
  @Test(arguments: [1, 10, 150, 2_000]) func aListUnderAnAbsoluteDestKeepsRelativeIDs(lines: Int) throws {
    let list = (0..<lines).map { "http://127.0.0.1:9/x/pkg-\($0).tar.gz" }.joined(separator: "\n") + "\n"
    let yaml = """
      version: 1
      sessions:
        one:
          dest: /srv/mirror
          tasks:
            - list: list.txt
        two:
          tasks:
            - download: http://127.0.0.1:9/y/pkg-0.tar.gz
      """
    let plan = try planned(yaml, files: ["list.txt": list]).plan
    let ids = plan.tasks.map { plan.id(of: $0) }
    #expect(ids.count == lines + 1)
    #expect(Set(ids).count == ids.count)
    #expect(ids.first == "one:pkg-0.tar.gz")
    #expect(ids.last == "pkg-0.tar.gz")
    #expect(!ids.contains { $0.hasPrefix("/") })
  }
}
