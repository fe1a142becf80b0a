import TestSupport
import Testing

@testable import BatchDL

/// `Plan.order`: `after:` first, then priority, then round-robin across hosts, ties in manifest order.
@Suite struct SchedulingTests {
  @Test func orderIsAPermutationOfTheRequests() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://a.example/1
        - download: https://b.example/2
          priority: low
        - download: https://a.example/3
          after: "2"
        - download: https://c.example/4
          priority: high
        """))
    #expect(planned.plan.order.sorted() == Array(0..<Int32(planned.plan.requests.count)))
  }

  @Test func tiesKeepManifestOrder() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://a.example/1
        - download: https://b.example/2
        - download: https://c.example/3
        - download: https://d.example/4
        """))
    #expect(
      planned.orderedURLs == [
        "https://a.example/1", "https://b.example/2", "https://c.example/3", "https://d.example/4",
      ])
  }

  @Test func roundRobinAcrossHosts() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://a.example/a1
        - download: https://a.example/a2
        - download: https://a.example/a3
        - download: https://b.example/b1
        """))
    #expect(
      planned.orderedURLs == [
        "https://a.example/a1", "https://b.example/b1", "https://a.example/a2", "https://a.example/a3",
      ])
  }

  @Test func roundRobinOverThreeHostsFromAList() throws {
    let urls = """
      https://a.example/1
      https://a.example/2
      https://a.example/3
      https://b.example/1 b/1
      https://b.example/2 b/2
      https://c.example/1 c/1
      """
    let planned = try planned(manifest("- list: urls.txt\n  to: x/"), files: ["urls.txt": urls])
    #expect(
      planned.orderedURLs == [
        "https://a.example/1", "https://b.example/1", "https://c.example/1",
        "https://a.example/2", "https://b.example/2", "https://a.example/3",
      ])
  }

  @Test func nonDefaultPortsMakeDistinctHosts() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://a.example/1
        - download: https://a.example/2
        - download: https://a.example:8443/3
        - download: https://A.EXAMPLE:443/4
        """))
    #expect(planned.plan.hosts == ["a.example", "a.example:8443"])
    #expect(
      planned.orderedURLs == [
        "https://a.example/1", "https://a.example:8443/3", "https://a.example/2", "https://a.example/4",
      ])
  }

  @Test func priorityHighBeforeNormalBeforeLow() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://a.example/low-1
          priority: low
        - download: https://a.example/normal-1
        - download: https://a.example/high-1
          priority: high
        - download: https://b.example/low-2
          priority: low
        - download: https://b.example/normal-2
          priority: normal
        - download: https://b.example/high-2
          priority: high
        """))
    #expect(
      planned.orderedURLs == [
        "https://a.example/high-1", "https://b.example/high-2",
        "https://a.example/normal-1", "https://b.example/normal-2",
        "https://a.example/low-1", "https://b.example/low-2",
      ])
    #expect(planned.ordered.map(\.priority) == [.high, .high, .normal, .normal, .low, .low])
  }

  @Test func afterIsRespectedEvenAgainstPriority() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://a.example/urgent
          priority: high
          after: checksums
        - download: https://b.example/checksums
          id: checksums
          priority: low
        - download: https://c.example/normal
        """))
    let urls = planned.orderedURLs
    #expect(urls == ["https://c.example/normal", "https://b.example/checksums", "https://a.example/urgent"])
    let urgent = try #require(planned.request("https://a.example/urgent"))
    let checksums = try #require(
      planned.plan.requests.firstIndex { planned.plan.url(of: $0) == "https://b.example/checksums" })
    #expect(urgent.dependencies == [Int32(checksums)])
  }

  @Test func afterChainRunsInDependencyOrder() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://a.example/4
          after: "3"
        - download: https://a.example/3
          after: "2"
        - download: https://b.example/2
          after: "1"
        - download: https://c.example/1
        - download: https://d.example/free
        """))
    let urls = planned.orderedURLs
    #expect(urls.count == 5)
    let chain = ["https://c.example/1", "https://b.example/2", "https://a.example/3", "https://a.example/4"]
    let positions = chain.compactMap { urls.firstIndex(of: $0) }
    #expect(positions == positions.sorted())
    #expect(positions.count == 4)
  }

  @Test func everyDependencyComesFirst() throws {
    // A generated graph: task i waits for tasks i/2 and i/3 (when different), over five hosts.
    var tasks: [String] = []
    for index in (0..<120).reversed() {
      var lines = "- download: https://h\(index % 5).example/f\(index)\n  id: t\(index)"
      let parents = Set([index / 2, index / 3]).filter { $0 != index }.sorted()
      if !parents.isEmpty { lines += "\n  after: [" + parents.map { "t\($0)" }.joined(separator: ", ") + "]" }
      tasks.append(lines)
    }
    let planned = try planned(manifest(tasks.joined(separator: "\n")))
    let plan = planned.plan
    var position = [Int32: Int]()
    for (index, request) in plan.order.enumerated() { position[request] = index }
    var checked = 0
    for (index, request) in plan.requests.enumerated() {
      for dependency in request.dependencies {
        #expect((position[dependency] ?? .max) < (position[Int32(index)] ?? .min))
        checked += 1
      }
    }
    #expect(checked > 150)
  }

  @Test func readyRequestsJoinTheRoundRobin() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://a.example/1
        - download: https://a.example/2
        - download: https://a.example/3
        - download: https://b.example/after-a1
          after: "1"
        """))
    #expect(
      planned.orderedURLs == [
        "https://a.example/1", "https://a.example/2", "https://b.example/after-a1", "https://a.example/3",
      ])
  }

  @Test func requestsAcrossSessionsAreScheduledTogether() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        one:
          tasks:
            - download: https://a.example/1
            - download: https://a.example/2
        two:
          dest: two
          tasks:
            - download: https://b.example/1
              priority: high
            - download: https://a.example/3
      """)
    #expect(
      planned.orderedURLs == [
        "https://b.example/1", "https://a.example/1", "https://a.example/2", "https://a.example/3",
      ])
    #expect(planned.ordered.map(\.session) == [1, 0, 0, 1])
  }
}
