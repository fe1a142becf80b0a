import Foundation
import Testing

@testable import BatchDL

@Suite struct DestinationTests {
  static let yaml = """
    version: 1
    sessions:
      s:
        dest: out
        tasks:
          - data: http://h.test/a
            to: a-data.json
          - download: http://h.test/a
            to: a.bin
          - data: http://h.test/b
            to: b.json
            become_download: {larger_than: 1MB}
          - data: http://h.test/c
            to: c.json
          - data: http://h.test/d
    """

  @Test func theOwnerIsTheFirstDownloadElseADataTaskThatMayBecomeOne() throws {
    let (folder, plan) = try planned(Self.yaml)
    let a = try request(plan, id: "out/a-data.json")
    let owner = try #require(plan.owner(of: a))
    #expect(plan.id(of: owner) == "out/a.bin")
    #expect(plan.absoluteDestination(of: owner) == folder.path + "/out/a.bin")
    #expect(plan.partialPath(of: a) == folder.path + "/out/a.bin.batchdl-part")
    let b = try request(plan, id: "out/b.json")
    #expect(plan.owner(of: b).map(plan.id(of:)) == "out/b.json")
    // A data task's body stays in memory and is written whole: no partial file.
    #expect(plan.owner(of: try request(plan, id: "out/c.json")) == nil)
    #expect(plan.partialPath(of: try request(plan, id: "out/c.json")) == nil)
    #expect(plan.owner(of: try request(plan, id: "http://h.test/d")) == nil)
  }
}
