import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLPlan

/// `--shard I/N`: disjoint, complete, stable as the manifest grows, and `after:` groups kept together.
@Suite struct ShardTests {
  /// `count` URLs spread over `hosts` hosts, one per line.
  static func urls(_ range: Range<Int>, hosts: Int = 50) -> String {
    range.map { "https://host\($0 % hosts).example/files/\($0 / hosts)/file-\($0).bin" }.joined(separator: "\n")
  }

  static let listManifest = """
    version: 1
    sessions:
      mirror:
        dest: mirror
        tasks:
          - list: urls.txt
    """

  static let counts = [1, 2, 3, 4, 7, 10, 16, 64]

  @Test func shardsAreDisjointAndComplete() throws {
    let planned = try planned(Self.listManifest, files: ["urls.txt": Self.urls(0..<2_000)])
    let plan = planned.plan
    #expect(plan.requests.count == 2_000)
    #expect(plan.hosts.count == 50)
    for count in Self.counts {
      var seen = [Int](repeating: 0, count: plan.requests.count)
      var sizes = [Int](repeating: 0, count: count)
      for index in 0..<count {
        let shard = Shard(index: index, count: count)
        for (requestIndex, request) in plan.requests.enumerated() where shard.contains(request) {
          seen[requestIndex] += 1
          sizes[index] += 1
          #expect(plan.shard(of: request, count: count) == index)
        }
      }
      #expect(seen.allSatisfy { $0 == 1 }, "count \(count): every request in exactly one shard")
      #expect(sizes.reduce(0, +) == plan.requests.count)
      // Roughly even: within five standard deviations of the mean.
      let mean = Double(plan.requests.count) / Double(count)
      #expect(sizes.allSatisfy { abs(Double($0) - mean) <= 5 * mean.squareRoot() }, "count \(count): \(sizes)")
    }
  }

  @Test func listingOfEachShardCoversThePlanOnce() throws {
    let planned = try planned(Self.listManifest, files: ["urls.txt": Self.urls(0..<500, hosts: 7)])
    var keys: [String] = []
    for index in 0..<5 {
      let text = planned.json(shard: Shard(index: index, count: 5))
      let object = try #require(try parseJSON(text) as? [String: Any])
      let requests = try #require(object["requests"] as? [[String: Any]])
      keys += requests.compactMap { $0["key"] as? String }
      let summary = try #require(object["summary"] as? [String: Any])
      #expect(summary["shard"] as? String == "\(index)/5")
      #expect(summary["requests"] as? Int == requests.count)
    }
    #expect(keys.count == 500)
    #expect(Set(keys) == Set(planned.plan.requests.map(\.key.description)))
  }

  @Test func growingTheManifestMovesNoExistingRequest() throws {
    let small = try planned(Self.listManifest, files: ["urls.txt": Self.urls(0..<1_000)])
    let grown = try planned(
      """
      version: 1
      sessions:
        early:
          dest: early
          tasks:
            - download: https://new.example/first.bin
            - data: https://new.example/api
        mirror:
          dest: mirror
          tasks:
            - download: https://new.example/second.bin
            - list: urls.txt
            - list: more.txt
        late:
          kind: ephemeral
          tasks:
            - download: https://host1.example/files/0/file-1.bin
      """,
      files: ["urls.txt": Self.urls(0..<1_500), "more.txt": Self.urls(1_500..<2_000)])
    #expect(grown.plan.requests.count == 2_004)
    let grownByKey = Dictionary(uniqueKeysWithValues: grown.plan.requests.map { ($0.key, $0) })
    for request in small.plan.requests {
      let same = try #require(grownByKey[request.key], "request \(small.plan.url(of: request)) kept its key")
      for count in Self.counts {
        #expect(small.plan.shard(of: request, count: count) == grown.plan.shard(of: same, count: count))
      }
    }
  }

  /// The common way a manifest grows: new tasks that wait for existing ones. Those join the existing
  /// tasks' shard; the existing tasks stay where they were.
  @Test func addingTasksAfterExistingOnesMovesNoExistingRequest() throws {
    var base: [String] = []
    for index in 0..<200 {
      var task = "- download: https://h\(index % 9).example/base-\(index).bin"
      if index % 4 == 3 { task += "\n  after: base-\(index - 1).bin" }
      base.append(task)
    }
    var added = base
    for index in 0..<200 {
      added.append("- download: https://new\(index % 5).example/added-\(index).bin\n  after: base-\(index).bin")
    }
    for index in 0..<20 {
      added.append(
        "- download: https://new.example/fan-in-\(index).bin\n  after: [added-\(index).bin, base-\(index).bin]")
    }
    let small = try planned(manifest(base.joined(separator: "\n")))
    let grown = try planned(manifest(added.joined(separator: "\n")))
    let grownByKey = Dictionary(uniqueKeysWithValues: grown.plan.requests.map { ($0.key, $0) })
    var moved: [String] = []
    for request in small.plan.requests {
      let same = try #require(grownByKey[request.key])
      for count in Self.counts
      where small.plan.shard(of: request, count: count) != grown.plan.shard(of: same, count: count) {
        moved.append("\(small.plan.url(of: request)) among \(count)")
      }
    }
    #expect(moved.count == 0, "moved: \(moved.prefix(10).joined(separator: "; "))")
  }

  @Test func moreShardsOnlyMoveRequestsIntoTheNewShard() throws {
    let planned = try planned(Self.listManifest, files: ["urls.txt": Self.urls(0..<2_000)])
    for count in 1..<20 {
      var moved = 0
      for request in planned.plan.requests {
        let before = planned.plan.shard(of: request, count: count)
        let after = planned.plan.shard(of: request, count: count + 1)
        #expect(after == before || after == count)
        if after != before { moved += 1 }
      }
      // About 1/(count+1) of the requests move, never most of them.
      #expect(moved < 2 * 2_000 / (count + 1) + 50)
    }
  }

  @Test func requestsJoinedByAfterShareAShard() throws {
    var tasks: [String] = []
    for group in 0..<60 {
      // A chain of four tasks on four hosts, and a fifth task waiting for the first.
      tasks.append("- download: https://a\(group % 7).example/g\(group)-1.bin")
      for step in 2...4 {
        let url = "https://h\((group + step) % 11).example/g\(group)-\(step).bin"
        tasks.append("- download: \(url)\n  after: g\(group)-\(step - 1).bin")
      }
      tasks.append("- download: https://z.example/g\(group)-side.bin\n  after: g\(group)-1.bin")
    }
    // Two groups joined by one task that waits for both.
    tasks.append("- download: https://z.example/join.bin\n  after: [g0-4.bin, g1-side.bin]")
    let planned = try planned(manifest(tasks.joined(separator: "\n")))
    let plan = planned.plan
    func requests(of group: String) -> [PlannedRequest] {
      plan.requests.filter { plan.url(of: $0).contains("/\(group)-") }
    }
    for count in [2, 3, 5, 8, 13, 32] {
      for group in 2..<60 {
        let shards = Set(requests(of: "g\(group)").map { plan.shard(of: $0, count: count) })
        #expect(shards.count == 1, "group \(group) among \(count): \(shards)")
      }
      let joined =
        requests(of: "g0") + requests(of: "g1") + plan.requests.filter { plan.url(of: $0).hasSuffix("/join.bin") }
      #expect(joined.count == 11)
      #expect(Set(joined.map { plan.shard(of: $0, count: count) }).count == 1)
    }
    // The groups do not all land in one shard.
    let spread = Set((2..<60).compactMap { requests(of: "g\($0)").first.map { plan.shard(of: $0, count: 8) } })
    #expect(spread.count > 4)
  }

  @Test func sharedRequestsCarryTheirTasksIntoOneShard() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://a.example/x
          to: one
        - download: https://a.example/x
          to: two
        - download: https://b.example/y
          after: two
        """))
    let plan = planned.plan
    #expect(plan.requests.count == 2)
    for count in [2, 3, 4, 9] {
      #expect(plan.shard(of: plan.requests[0], count: count) == plan.shard(of: plan.requests[1], count: count))
    }
  }

  @Test func bucketEdges() {
    let key = RequestKey(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)
    #expect(Shard.bucket(for: key, count: 1) == 0)
    #expect(Shard.bucket(for: key, count: 0) == 0)
    #expect((0..<1_000_000).contains(Shard.bucket(for: key, count: 1_000_000)))
    #expect(Shard.bucket(for: key, count: 7) == Shard.bucket(for: key, count: 7))
    #expect(Shard(index: 0, count: 1).description == "0/1")
  }

  @Test func requestKeysAreThirtyTwoLowerCaseHexDigits() {
    #expect(
      RequestKey(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210).description
        == "0123456789abcdeffedcba9876543210")
    #expect(RequestKey(high: 0, low: 1).description == "00000000000000000000000000000001")
    #expect(RequestKey(high: .max, low: 0).short == "ffffffffffff")
  }

  @Test(arguments: [("0/1", 0, 1), ("1/4", 1, 4), ("3/4", 3, 4), ("0/2", 0, 2), ("999/1000", 999, 1000)])
  func parseAccepts(_ text: String, _ index: Int, _ count: Int) throws {
    let shard = try Shard.parse(text).get()
    #expect(shard == Shard(index: index, count: count))
    #expect(shard.description == text)
  }

  @Test(arguments: [
    ("4/4", "shard index 4 must be from 0 to 3 for 4 shards"),
    ("-1/2", "shard index -1 must be from 0 to 1"),
    ("a/b", "'a/b' is not a shard: write I/N"),
    ("1/0", "shard count 0 must be from 1"),
    ("0/-3", "shard count -3"),
    ("", "is not a shard"),
    ("1", "'1' is not a shard"),
    ("1/4/2", "is not a shard"),
    ("1/", "is not a shard"),
    ("/4", "is not a shard"),
    (" 1/4", "is not a shard"),
    ("1.0/4", "is not a shard"),
    ("0/2000000", "shard count 2000000 must be from 1 to 1000000"),
  ])
  func parseRejects(_ text: String, _ words: String) {
    switch Shard.parse(text) {
    case .success(let shard):
      Issue.record("'\(text)' should be rejected, but parsed as \(shard)")
    case .failure(let problem):
      #expect(problem.description.contains(words), "\(problem.description)")
    }
  }
}
