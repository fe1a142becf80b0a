import TestSupport
import Testing

@testable import BatchDL

/// Which tasks are one request: method, normalized URL, effective headers, body and session kind.
@Suite struct DeduplicationTests {
  @Test func oneURLSpelledTwoWaysIsOneRequest() throws {
    let planned = try planned(
      manifest(
        """
        - download: HTTPS://Example.org:443/a/./%7Euser/file.bin#top
          to: one.bin
        - download: https://example.org/a/~user/file.bin
          to: two.bin
        """))
    let plan = planned.plan
    #expect(plan.tasks.count == 2)
    #expect(plan.requests.count == 1)
    #expect(plan.mergedDuplicates == 0)
    let request = try #require(plan.requests.first)
    #expect(plan.url(of: request) == "https://example.org/a/~user/file.bin")
    #expect(request.taskCount == 2)
    #expect(request.firstTask == 0)
    #expect(plan.tasks[0].nextSharing == 1)
    #expect(plan.tasks[1].nextSharing == -1)
    #expect(plan.tasks.allSatisfy { $0.request == 0 })
    let sharing = plan.tasks(of: request)
    #expect(sharing.map { plan.destination(of: $0) } == ["one.bin", "two.bin"])
    // Each task keeps the URL as written.
    #expect(
      sharing.map { plan.url(of: $0) } == [
        "HTTPS://Example.org:443/a/./%7Euser/file.bin#top", "https://example.org/a/~user/file.bin",
      ])
  }

  @Test func manyTasksShareOneRequestInManifestOrder() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/x
          to: a
        - download: https://example.org/other
        - download: https://EXAMPLE.org/x
          to: b
        - download: https://example.org:443/x
          to: c
        """))
    #expect(planned.plan.requests.count == 2)
    let request = try #require(planned.request("https://example.org/x"))
    #expect(request.taskCount == 3)
    #expect(planned.plan.tasks(of: request).map { planned.plan.destination(of: $0) } == ["a", "b", "c"])
  }

  @Test func differentHeadersAreTwoRequests() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/f
          to: a
          headers: {Accept: application/json}
        - download: https://example.org/f
          to: b
          headers: {Accept: text/html}
        - download: https://example.org/f
          to: c
        """))
    #expect(planned.plan.requests.count == 3)
    #expect(Set(planned.plan.requests.map(\.key)).count == 3)
  }

  @Test func headerValuesAreCaseSensitive() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/f
          to: a
          headers: {X-Token: abc}
        - download: https://example.org/f
          to: b
          headers: {X-Token: ABC}
        """))
    #expect(planned.plan.requests.count == 2)
  }

  @Test func sameHeadersInAnotherCaseAndOrderAreOneRequest() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          headers: {User-Agent: batchdl, Accept: "*/*"}
          tasks:
            - download: https://example.org/f
              to: a
              headers: {X-One: "1", X-Two: "2"}
            - download: https://example.org/f
              to: b
              headers: {x-two: "2", ACCEPT: "*/*", x-one: "1"}
            - download: https://example.org/f
              to: c
              headers: {user-agent: batchdl, X-TWO: "2", X-One: "1"}
      """)
    #expect(planned.plan.requests.count == 1)
    #expect(planned.plan.requests.first?.taskCount == 3)
  }

  @Test func taskHeadersOverrideSessionHeaders() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          headers: {User-Agent: batchdl}
          tasks:
            - download: https://example.org/f
              to: a
            - download: https://example.org/f
              to: b
              headers: {user-agent: batchdl}
            - download: https://example.org/f
              to: c
              headers: {User-Agent: curl}
        t:
          tasks:
            - download: https://example.org/f
              to: d
              headers: {User-Agent: curl}
      """)
    let plan = planned.plan
    #expect(plan.requests.count == 2)
    let shared = plan.tasks(of: plan.requests[0]).map { plan.destination(of: $0) }
    #expect(shared == ["a", "b"])
    // A task header replacing the session's gives the same request as a session without it.
    #expect(plan.tasks(of: plan.requests[1]).map { plan.destination(of: $0) } == ["c", "d"])
  }

  @Test func differentBodiesAreTwoRequests() throws {
    let planned = try planned(
      manifest(
        """
        - data: https://example.org/api
          to: a.json
          body: '{"page": 1}'
        - data: https://example.org/api
          to: b.json
          body: '{"page": 2}'
        - data: https://example.org/api
          to: c.json
          body: '{"page": 1}'
        - data: https://example.org/api
          to: d.json
          method: POST
        """))
    let plan = planned.plan
    #expect(plan.requests.count == 3)
    #expect(plan.tasks(of: plan.requests[0]).map { plan.destination(of: $0) } == ["a.json", "c.json"])
    #expect(plan.requests.allSatisfy { $0.method == "POST" })
  }

  @Test func uploadsOfDifferentFilesAreTwoRequests() throws {
    let planned = try planned(
      manifest(
        """
        - upload: https://example.org/put
          from: one.bin
          id: up-one
        - upload: https://example.org/put
          from: two.bin
          id: up-two
        - upload: https://example.org/put
          from: one.bin
          id: up-one-again
        """),
      files: ["one.bin": "1", "two.bin": "2"])
    #expect(planned.plan.requests.count == 2)
    #expect(planned.plan.requests.first?.taskCount == 2)
    #expect(planned.plan.requests.allSatisfy { $0.method == "PUT" })
  }

  @Test func differentMethodsAreTwoRequests() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/f
          to: a
        - download: https://example.org/f
          to: b
          method: HEAD
        """))
    #expect(planned.plan.requests.map(\.method) == ["GET", "HEAD"])
  }

  @Test func differentSessionKindsAreTwoRequests() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        persistent:
          tasks:
            - download: https://example.org/f
              to: a
        private:
          kind: ephemeral
          tasks:
            - download: https://example.org/f
              to: b
        also-default:
          tasks:
            - download: https://example.org/f
              to: c
      """)
    let plan = planned.plan
    #expect(plan.requests.count == 2)
    #expect(plan.requests[0].session == 0)
    #expect(plan.tasks(of: plan.requests[0]).map { plan.destination(of: $0) } == ["a", "c"])
    #expect(plan.tasks(of: plan.requests[1]).map { plan.destination(of: $0) } == ["b"])
  }

  @Test func sharedRequestTakesTheHighestPriority() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/f
          to: a
          priority: low
        - download: https://example.org/f
          to: b
          priority: high
        - download: https://example.org/f
          to: c
        """))
    #expect(planned.plan.requests.map(\.priority) == [.high])
  }

  @Test func exactRepeatsAreMergedWithAWarning() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://example.org/f.bin
            - download: https://example.org/other.bin
            - download: https://EXAMPLE.org/f.bin
            - download: https://example.org/f.bin
              to: f.bin
      """)
    let plan = planned.plan
    #expect(plan.tasks.count == 2)
    #expect(plan.requests.count == 2)
    #expect(plan.mergedDuplicates == 2)
    #expect(plan.requests[0].taskCount == 1)
    expectMatch(
      planned.warnings,
      [
        Expected("7:9", "repeats the task at manifest.yaml:5:9", "runs once", severity: "warning"),
        Expected("8:9", "repeats the task at manifest.yaml:5:9", "runs once", severity: "warning"),
      ])
  }

  @Test func exactRepeatOfADataTaskWithoutDestinationIsMerged() throws {
    let planned = try planned(
      manifest(
        """
        - data: https://example.org/api/status
        - data: https://example.org/api/status
        """))
    #expect(planned.plan.tasks.count == 1)
    #expect(planned.plan.mergedDuplicates == 1)
    expectMatch(planned.warnings, [Expected("6:9", "repeats the task at manifest.yaml:5:9", severity: "warning")])
  }

  @Test func mergedRepeatKeepsItsAfterAndPriority() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://a.example/first.bin
        - download: https://b.example/second.bin
        - download: https://a.example/first.bin
          after: second.bin
          priority: high
        """))
    let plan = planned.plan
    #expect(plan.mergedDuplicates == 1)
    let first = try #require(planned.request("https://a.example/first.bin"))
    let second = try #require(planned.request("https://b.example/second.bin"))
    #expect(first.priority == .high)
    #expect(first.dependencies.count == 1)
    #expect(planned.orderedURLs == ["https://b.example/second.bin", "https://a.example/first.bin"])
    #expect(plan.shard(of: first, count: 16) == plan.shard(of: second, count: 16))
  }

  @Test func repeatWithAnExplicitIDIsAConflictNotAMerge() {
    expectProblems(
      manifest(
        """
        - download: https://example.org/f.bin
        - download: https://example.org/f.bin
          id: again
        """),
      [Expected("6:9", "'f.bin' is already written by the task at", "manifest.yaml:5:9")])
  }

  @Test func sameRequestAsDataAndDownloadIntoOneFileIsAConflict() {
    expectProblems(
      manifest(
        """
        - download: https://example.org/f.bin
        - data: https://example.org/f.bin
          to: f.bin
        """),
      [Expected("6:9", "'f.bin' is already written by the task at", "manifest.yaml:5:9")])
  }

  @Test func requestKeysAreStableAndDistinct() throws {
    let yaml = manifest(
      """
      - download: https://example.org/a
      - download: https://example.org/b
      """)
    let first = try planned(yaml)
    let second = try planned(yaml)
    #expect(first.plan.requests.map(\.key) == second.plan.requests.map(\.key))
    #expect(first.plan.requests[0].key != first.plan.requests[1].key)
    #expect(first.plan.requests[0].key.description.count == 32)
    #expect(first.plan.requests[0].key.short.count == 12)
    #expect(first.plan.requests.allSatisfy { $0.shardKey == $0.key })
  }
}
