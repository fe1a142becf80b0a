import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLPlan
@testable import BatchDLStore

@Suite struct StoredResultsTests {
  static func result(
    _ id: String, key: String = String(repeating: "0", count: 32), outcome: String = "completed"
  )
    -> StoredResult
  {
    StoredResult(
      taskID: id, requestKey: key, destination: "/d/" + id, outcome: outcome, status: 200, size: 4096,
      sha256: String(repeating: "ab", count: 32), etag: "\"e\"", lastModified: nil, fileSize: 4096,
      fileModified: 1_700_000_000_000_000_000, errorCode: nil, errorMessage: nil)
  }

  @Test func aResultReadBackIsTheResultStored() {
    var results = StoredResults()
    let stored = Self.result("mirror/a.bin")
    results.add(stored)
    #expect(results["mirror/a.bin"] == stored)
    #expect(results["mirror/b.bin"] == nil)
    #expect(results.count == 1)
  }

  @Test func aSecondResultForOneTaskReplacesTheFirst() {
    var results = StoredResults()
    results.add(Self.result("a", outcome: "failed"))
    results.add(Self.result("a", outcome: "completed"))
    #expect(results.count == 1)
    #expect(results["a"]?.outcome == "completed")
  }

  @Test func manyResultsAreAllFoundAgain() {
    var results = StoredResults()
    for index in 0..<5000 { results.add(Self.result("d\(index / 100)/f\(index % 100).bin")) }
    #expect(results.count == 5000)
    #expect(
      (0..<5000).allSatisfy { results["d\($0 / 100)/f\($0 % 100).bin"]?.taskID == "d\($0 / 100)/f\($0 % 100).bin" })
    #expect(Set(results.ids).count == 5000)
  }

  @Test func idsAreComparedByTheirBytes() {
    var results = StoredResults()
    results.add(Self.result("café/ü.bin"))
    #expect(results["café/ü.bin"] != nil)
    #expect(results["cafe/u.bin"] == nil)
  }

  @Test func theRequestKeyIsComparedWithoutMakingItsText() throws {
    let (folder, plan) = try planned(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: http://h.test/a
              to: a.bin
      """)
    defer { withExtendedLifetime(folder) {} }
    let task = plan.tasks[0]
    let key = plan.requests[Int(task.request)].key
    var results = StoredResults()
    results.add(Self.result(plan.id(of: task), key: key.description))
    let entry = try #require(results.entry(for: task, in: plan))
    #expect(results.requestKey(of: entry, is: key))
    #expect(!results.requestKey(of: entry, is: RequestKey(high: key.high, low: key.low ^ 1)))
    #expect(entry.outcome == .completed && entry.size == 4096 && entry.status == 200)
    #expect(results.sha256(of: entry) == String(repeating: "ab", count: 32))
    results.add(Self.result(plan.id(of: task), key: "not hex"))
    let changed = try #require(results.entry(for: task, in: plan))
    #expect(!results.requestKey(of: changed, is: key))
  }
}
