import Testing

@testable import BatchDLPlan

/// `keep_removed` as a value: which paths a repository's mirror keeps though no index names them.
@Suite struct KeepRemovedTests {
  static func paths(_ names: String...) -> Set<[UInt8]> { Set(names.map { Array($0.utf8) }) }
  static let day: Int64 = 86_400

  @Test func aPathLeavingTheIndexesIsKeptForKeepRemovedThenGoes() throws {
    let first = NamedPaths().next(named: Self.paths("pool/a", "pool/b"), complete: true, keepSeconds: Self.day, now: 0)
    let record = try #require(first.record)
    #expect(first.kept.isEmpty && record.named == Self.paths("pool/a", "pool/b"))
    // b leaves the indexes on day 1: kept until day 2.
    let second = record.next(named: Self.paths("pool/a"), complete: true, keepSeconds: Self.day, now: Self.day)
    #expect(second.kept == [Array("pool/b".utf8): 2 * Self.day])
    // Still kept an hour before, gone at its time.
    let third = try #require(second.record).next(
      named: Self.paths("pool/a"), complete: true, keepSeconds: Self.day, now: 2 * Self.day - 3600)
    #expect(third.kept.keys.contains(Array("pool/b".utf8)))
    let fourth = try #require(third.record).next(
      named: Self.paths("pool/a"), complete: true, keepSeconds: Self.day, now: 2 * Self.day)
    #expect(fourth.kept.isEmpty)
  }

  @Test func aPathNamedAgainIsNoLongerKeptAndZeroKeepsNothing() throws {
    let record = NamedPaths(named: Self.paths("pool/a"), kept: [Array("pool/b".utf8): 100])
    let back = record.next(named: Self.paths("pool/a", "pool/b"), complete: true, keepSeconds: 50, now: 10)
    #expect(back.kept.isEmpty && back.record?.named == Self.paths("pool/a", "pool/b"))
    let zero = NamedPaths(named: Self.paths("pool/a", "pool/b")).next(
      named: Self.paths("pool/a"), complete: true, keepSeconds: 0, now: 10)
    #expect(zero.kept.isEmpty)
  }

  /// A night that failed (or only read copies) learns nothing: the record stays, and everything it
  /// names or keeps is kept, whatever the clock says.
  @Test func anIncompleteCrawlKeepsEverythingAndWritesNothing() {
    let record = NamedPaths(named: Self.paths("pool/a", "pool/b"), kept: [Array("pool/c".utf8): 5])
    let failed = record.next(named: [], complete: false, keepSeconds: 0, now: 1_000)
    #expect(failed.record == nil)
    #expect(Set(failed.kept.keys) == Self.paths("pool/a", "pool/b", "pool/c"))
  }

  @Test func theStoredFormRoundTripsAndSkipsBadLines() {
    let record = NamedPaths(named: Self.paths("pool/a b", "pool/é"), kept: [Array("pool/x".utf8): 42])
    #expect(NamedPaths.parse(record.bytes) == record)
    let damaged = NamedPaths.parse(Array("N\tpool/a\nK\tsoon\tpool/b\nX\tpool/c\nK\t7\tpool/d\n".utf8))
    #expect(damaged == NamedPaths(named: Self.paths("pool/a"), kept: [Array("pool/d".utf8): 7]))
  }
}
