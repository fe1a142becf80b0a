import Foundation
import TestSupport
import Testing

@testable import BatchDL

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

@Suite struct TextFormatTests {
  @Test func numbersReadAsPrintfWritesThem() {
    var generator = SystemRandomNumberGenerator()
    var values: [Double] = [
      0, -0.0, 0.05, 0.25, 0.35, 1.45, 2.5, 3.5, 0.5, 1.5, 99.95, 1023.96, 123_456.789, -3.25, -0.01, 0.0005,
      1e-300, .leastNonzeroMagnitude, 1e15, 4503599627370495.5, 9007199254740991, 1e20, .infinity, -.infinity, .nan,
    ]
    for _ in 0..<2000 {
      values.append(Double.random(in: 0..<2048, using: &generator))
      values.append(Double(Int.random(in: 0..<100_000, using: &generator)) / 8)
      values.append(Double(Int.random(in: 0..<1_000_000, using: &generator)) / 1024)
    }
    for value in values {
      for decimals in 0...3 {
        #expect(TextFormat.fixed(value, decimals: decimals) == String(format: "%.\(decimals)f", value))
      }
    }
    #expect(TextFormat.rightAligned(7, width: 3) == String(format: "%3d", 7))
    #expect(TextFormat.rightAligned(1234, width: 3) == "1234")
    #expect(TextFormat.zeroPadded(5, width: 2) == "05")
    #expect(TextFormat.padded("done", to: 9) == "done".padding(toLength: 9, withPad: " ", startingAt: 0))
    #expect(TextFormat.padded("cancelled!", to: 9) == "cancelled")
  }
}

@Suite struct FolderStatusTests {
  @Test func givesTheAnswersOfAStatOfTheWholePath() throws {
    let folder = TemporaryDirectory()
    let base = folder.path
    try FileAccess.makeDirectories(base + "/a/b")
    #expect(FileManager.default.createFile(atPath: base + "/a/b/one.bin", contents: Data(repeating: 1, count: 10)))
    #expect(FileManager.default.createFile(atPath: base + "/a/two.bin", contents: Data(repeating: 2, count: 20)))
    let files = FolderStatus()
    let paths = [
      base + "/a/b/one.bin", base + "/a/b/missing.bin", base + "/a/two.bin", base + "/a/b", base + "/a/b/one.bin",
      base + "/nowhere/x.bin", base + "/a/b/", "/", "relative.bin", base + "/a/b/../two.bin",
    ]
    for path in paths {
      let expected = FileAccess.status(path)
      let found = files.status(path)
      #expect(found?.size == expected?.size && found?.modified == expected?.modified, "\(path)")
    }
    #expect(files.status(base + "/a/b/one.bin")?.size == 10)
  }
}
