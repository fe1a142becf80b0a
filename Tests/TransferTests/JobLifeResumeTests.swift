import Testing

@testable import BatchDLTransfer

/// A file completed from kept bytes (a resume in this run or a later one) whose size or digest
/// fails is fetched again whole from its source, once, before the source is blamed
/// (docs/sources.md): the kept bytes may be of another version under the same validators.
@Suite struct JobLifeResumeTests {
  static func life(checksContent: Bool, mirrors: Bool) -> JobLife {
    var life = JobLifeTests.life(mirrors: mirrors ? ["https://b.test/f"] : [])
    life.rules.checksContent = checksContent
    return life
  }

  static func result(resumedFrom: Int64) -> TransferResult {
    var result = JobLifeTests.result()
    result.resumedFrom = resumedFrom
    return result
  }

  /// Which complete bodies the engine checks before the run does: those with mirrors or pieces
  /// (always), and those resumed under an expected size or digest.
  @Test(
    arguments: [
      // checks content, resumed from, mirrors → actions
      (false, 0, false, ["complete success"]),
      (false, 100, false, ["complete success"]),
      (true, 0, false, ["complete success"]),
      (true, 100, false, ["check"]),
      (false, 0, true, ["check"]),
      (true, 100, true, ["check"]),
    ] as [(Bool, Int64, Bool, [String])])
  func aResumedBodyUnderAnExpectationIsChecked(checks: Bool, resumedFrom: Int64, mirrors: Bool, expected: [String]) {
    var life = Self.life(checksContent: checks, mirrors: mirrors)
    let end = JobLife.AttemptEnd(.success(Self.result(resumedFrom: resumedFrom)))
    #expect(JobLifeTests.lines(life.attemptEnded(end, now: 0)) == expected)
  }

  /// What a failed check of a body from one stream does, the first time and the second.
  @Test(
    arguments: [
      // resumed from, problem, mirrors → first actions, second actions
      (100, FailureCode.checksumMismatch, false, ["send-again from-start"], ["complete checksum-mismatch attempts=1"]),
      (100, .sizeMismatch, false, ["send-again from-start"], ["complete size-mismatch attempts=1"]),
      (
        0, .checksumMismatch, false, ["complete checksum-mismatch attempts=1"],
        ["complete checksum-mismatch attempts=1"]
      ),
      (
        100, .checksumMismatch, true, ["send-again from-start"],
        ["source-failed https://a.test/f checksum-mismatch", "switch https://b.test/f resume=- extents=kept"]
      ),
      (
        0, .checksumMismatch, true,
        ["source-failed https://a.test/f checksum-mismatch", "switch https://b.test/f resume=- extents=kept"],
        ["source-failed https://b.test/f checksum-mismatch", "complete all-sources-failed attempts=1"]
      ),
    ] as [(Int64, FailureCode, Bool, [String], [String])])
  func aResumedBodyThatFailsIsFetchedWholeOnce(
    resumedFrom: Int64, code: FailureCode, mirrors: Bool, first: [String], second: [String]
  ) {
    var life = Self.life(checksContent: true, mirrors: mirrors)
    let result = Self.result(resumedFrom: resumedFrom)
    let end = JobLife.AttemptEnd(.success(result))
    let problem = JobLifeTests.failure(code)
    #expect(
      JobLifeTests.lines(life.contentChecked(result, pieces: .unchecked, problem: problem, end: end, now: 0)) == first)
    // The second time the body is the one fetched again (whole, or still resumed from a mirror).
    #expect(
      JobLifeTests.lines(life.contentChecked(result, pieces: .unchecked, problem: problem, end: end, now: 0)) == second)
  }

  @Test func aResumedBodyThatPassesIsPlaced() {
    var life = Self.life(checksContent: true, mirrors: false)
    let result = Self.result(resumedFrom: 100)
    let end = JobLife.AttemptEnd(.success(result))
    #expect(
      JobLifeTests.lines(life.contentChecked(result, pieces: .unchecked, problem: nil, end: end, now: 0)) == [
        "complete success"
      ])
  }
}
