import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLPlan

/// `prune:` as the manifest writes it: every mistake at its `LINE:COLUMN`, and ephemeral sessions
/// refuse it.
@Suite struct PruneManifestTests {
  static func session(_ prune: String, kind: String = "default") -> String {
    """
    version: 1
    sessions:
      s:
        kind: \(kind)
        prune: \(prune)
        tasks:
          - download: http://example.org/a
    """
  }

  @Test func readsTrueACountAndAShare() throws {
    #expect(try planned(Self.session("true")).plan.manifest.sessions[0].prune?.maxDelete == nil)
    #expect(try planned(Self.session("false")).plan.manifest.sessions[0].prune == nil)
    #expect(try planned(Self.session("{max_delete: 50}")).plan.manifest.sessions[0].prune?.maxDelete == .count(50))
    #expect(
      try planned(Self.session("{max_delete: \"10%\"}")).plan.manifest.sessions[0].prune?.maxDelete == .percent(10))
    #expect(
      try planned(Self.session("{max_delete: 2.5%}")).plan.manifest.sessions[0].prune?.maxDelete == .percent(2.5))
  }

  @Test func mistakesAreReportedWhereTheyAre() {
    expectProblems(Self.session("yes"), [Expected("5:12", "prune must be true or false", "YAML 1.2")])
    expectProblems(Self.session("[1]"), [Expected("5:12", "prune must be true, false or a mapping")])
    expectProblems(
      Self.session("{max_delet: 5}"),
      [Expected("5:13", "unknown key 'max_delet' in prune", "did you mean 'max_delete'?")])
    expectProblems(Self.session("{max_delete: lots}"), [Expected("5:25", "prune.max_delete must be a count of files")])
    expectProblems(Self.session("{max_delete: -1}"), [Expected("5:25", "prune.max_delete must be a count of files")])
    expectProblems(Self.session("{max_delete: 101%}"), [Expected("5:25", "from 0% to 100%")])
    expectProblems(Self.session("{max_delete: 2000000}"), [Expected("5:25", "from 0 to 1000000 files")])
  }

  @Test func anEphemeralSessionRefusesIt() {
    expectProblems(
      Self.session("true", kind: "ephemeral"),
      [Expected("5:12", "prune is not allowed in an ephemeral session", "keeps no record")])
  }

  @Test func defaultsGiveItToEverySessionButEphemeralOnes() throws {
    let plan = try planned(
      """
      version: 1
      defaults:
        prune: {max_delete: 3}
      sessions:
        kept:
          tasks:
            - download: http://example.org/a
        once:
          kind: ephemeral
          tasks:
            - download: http://example.org/b
      """
    ).plan
    #expect(plan.manifest.sessions[0].prune?.maxDelete == .count(3))
    #expect(plan.manifest.sessions[1].prune == nil)
  }
}

/// `plan`'s space lines: the bytes the run expects to write per filesystem.
@Suite struct PlanSpaceTests {
  @Test func sumsKnownSizesAndCountsTheOthers() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        a:
          dest: out/
          tasks:
            - download: http://example.org/one
              size: 1000
            - download: http://example.org/two
            - data: http://example.org/three
        b:
          dest: out/b/
          tasks:
            - download: http://example.org/four
              size: 24
      """)
    let lines = PlanSpace.lines(plan: planned.plan, included: { _ in true }, action: { _ in .send })
    // Both dests are on the test folder's filesystem, though neither exists yet.
    #expect(lines.count == 1)
    let line = try #require(lines.first)
    #expect(line.expected == 1024)
    #expect(line.unknown == 1)
    #expect(line.sessions == ["a", "b"])
    #expect(line.dests == ["out/", "out/b/"])
    #expect(line.free != nil)
    #expect(line.text.hasPrefix("space: 1.0 KiB to write and 1 file of unknown size in out/, out/b/ (sessions a, b); "))
    // Nothing to send: nothing to write.
    let skipped = PlanSpace.lines(plan: planned.plan, included: { _ in true }, action: { _ in .unchanged })
    #expect(skipped.first?.expected == 0)
    #expect(skipped.first?.unknown == 0)
  }
}
