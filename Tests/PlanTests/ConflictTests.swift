import TestSupport
import Testing

@testable import BatchDL

/// Destinations written twice, files that are also folders, ids and `after:` references.
@Suite struct ConflictTests {
  // MARK: - Destinations

  @Test func twoRequestsWritingOneDestination() {
    expectProblems(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://example.org/a/file.bin
            - download: https://example.org/b/other.bin
              to: file.bin
      """,
      [
        Expected(
          "6:9", "two different requests write 'file.bin'", "this task and the one at manifest.yaml:5:9",
          "another 'to:'")
      ])
  }

  @Test func destinationsAreComparedAfterNormalization() {
    expectProblems(
      """
      version: 1
      sessions:
        one:
          dest: out
          tasks:
            - download: https://example.org/a
              to: sub/./x.bin
        two:
          dest: out/sub/
          tasks:
            - download: https://example.org/b
              to: x.bin
      """,
      [Expected("11:9", "two different requests write 'out/sub/x.bin'", "manifest.yaml:6:9")])
  }

  @Test func everyConflictIsReported() {
    expectProblems(
      manifest(
        """
        - download: https://example.org/1
          to: same
        - download: https://example.org/2
          to: same
        - download: https://example.org/3
          to: same
        """),
      [
        Expected("7:9", "two different requests write 'same'", "manifest.yaml:5:9"),
        Expected("9:9", "two different requests write 'same'", "manifest.yaml:5:9"),
      ])
  }

  @Test func fileThatIsAlsoAFolder() {
    expectProblems(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://example.org/a
              to: data
            - download: https://example.org/b
              to: data/b.bin
      """,
      [Expected("5:9", "'data' is a file here but a folder for the task at manifest.yaml:7:9")])
  }

  @Test func folderDeclaredBeforeTheFile() {
    expectProblems(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://example.org/deep
              to: a/b/c/d.bin
            - download: https://example.org/b
              to: a/b
      """,
      [Expected("7:9", "'a/b' is a file here but a folder for the task at manifest.yaml:5:9")])
  }

  @Test func fileAndFolderAcrossSessions() {
    expectProblems(
      """
      version: 1
      sessions:
        one:
          dest: mirror
          tasks:
            - download: https://example.org/iso
        two:
          dest: mirror/iso
          tasks:
            - download: https://example.org/readme.txt
      """,
      [Expected("6:9", "'mirror/iso' is a file here but a folder for the task at manifest.yaml:10:9")])
  }

  @Test func siblingsAndPrefixesAreNotFolders() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/1
          to: data
        - download: https://example.org/2
          to: data.bin
        - download: https://example.org/3
          to: data2/x
        - download: https://example.org/4
          to: other/data
        """))
    #expect(planned.plan.tasks.count == 4)
  }

  // MARK: - Ids

  @Test func duplicateExplicitIDs() {
    expectProblems(
      manifest(
        """
        - download: https://example.org/a
          id: fetch
        - download: https://example.org/b
          id: fetch
        """),
      [Expected("8:13", "two tasks have the id 'fetch'", "also at manifest.yaml:5:9", "unique")])
  }

  @Test func explicitIDEqualToAnotherTasksDefaultID() {
    expectProblems(
      manifest(
        """
        - download: https://example.org/a.bin
        - download: https://example.org/b.bin
          id: a.bin
        """),
      [Expected("7:13", "two tasks have the id 'a.bin'", "also at manifest.yaml:5:9")])
  }

  @Test func explicitIDEqualToALaterTasksDefaultID() {
    expectProblems(
      manifest(
        """
        - download: https://example.org/b.bin
          id: out/a.bin
        - download: https://example.org/a.bin
        """, dest: "out"),
      [Expected("7:13", "two tasks have the id 'out/a.bin'", "also at manifest.yaml:8:9")])
  }

  @Test func explicitIDEqualToADataTasksURLID() {
    expectProblems(
      manifest(
        """
        - data: https://example.org/status
        - download: https://example.org/b.bin
          id: https://example.org/status
        """),
      [Expected("7:13", "two tasks have the id 'https://example.org/status'", "also at manifest.yaml:5:9")])
  }

  @Test func twoDataTasksWithoutDestinationOnOneURL() {
    expectProblems(
      manifest(
        """
        - data: https://example.org/api
          body: one
        - data: https://example.org/api
          body: two
        """),
      [Expected("7:9", "two tasks have the id 'https://example.org/api'", "give one of them an 'id:'")])
  }

  @Test func explicitIDMayEqualItsOwnDestination() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/a.bin
          id: a.bin
        - download: https://example.org/b.bin
          id: b
          to: renamed.bin
        - download: https://example.org/c.bin
          id: renamed.bin-not
        """))
    #expect(planned.plan.tasks.map { planned.plan.id(of: $0) } == ["a.bin", "b", "renamed.bin-not"])
  }

  @Test func defaultIDsAreDestinationsRelativeToTheManifest() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          dest: mirror/
          tasks:
            - download: https://example.org/releases/app.tar.gz
            - download: https://example.org/x
              to: nested/./y.bin
            - data: https://example.org/api?x=1
            - data: https://example.org/api?x=2
              to: api.json
      """)
    #expect(
      planned.plan.tasks.map { planned.plan.id(of: $0) } == [
        "mirror/app.tar.gz", "mirror/nested/y.bin", "https://example.org/api?x=1", "mirror/api.json",
      ])
    #expect(
      planned.plan.tasks.map { planned.plan.destination(of: $0) } == [
        "mirror/app.tar.gz", "mirror/nested/y.bin", nil, "mirror/api.json",
      ])
  }

  // MARK: - after

  @Test func afterByDefaultIDExplicitIDAndURLID() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/last
          after: [out/first.bin, token, https://example.org/api]
        - download: https://example.org/first.bin
        - data: https://example.org/token
          id: token
        - data: https://example.org/api
        """, dest: "out"))
    let last = try #require(planned.request("https://example.org/last"))
    #expect(last.dependencies.count == 3)
    #expect(planned.orderedURLs.last == "https://example.org/last")
  }

  @Test func afterUnknownIDWithSuggestion() {
    expectProblems(
      manifest(
        """
        - download: https://example.org/releases/app.tar.gz
        - download: https://example.org/app.tar.gz.sig
          after: app.tar.g
        - download: https://example.org/other
          after: [app.tar.gz, completely-unrelated]
        """),
      [
        Expected("7:16", "after: no task has the id 'app.tar.g'", "did you mean 'app.tar.gz'?"),
        Expected("9:29", "after: no task has the id 'completely-unrelated'"),
      ])
    let found = problems(
      manifest(
        """
        - download: https://example.org/x
          after: zzzzzzzz
        """))
    #expect(found.count == 1)
    #expect(found.allSatisfy { !$0.contains("did you mean") })
  }

  @Test func selfReference() {
    expectProblems(
      manifest(
        """
        - download: https://example.org/a.bin
          id: me
          after: me
        - download: https://example.org/b.bin
          after: [b.bin]
        """),
      [
        Expected("7:16", "a task cannot wait for itself"),
        Expected("9:17", "a task cannot wait for itself"),
      ])
  }

  @Test func twoTaskCycleIsReportedOnce() {
    let found = problems(
      manifest(
        """
        - download: https://example.org/a
          id: a
          after: b
        - download: https://example.org/b
          id: b
          after: a
        """))
    expectMatch(found, [Expected("10:16", "cycle in after: a → b → a", "remove one of these references")])
  }

  @Test func threeTaskCycleIsReportedOnceWithItsPath() {
    let found = problems(
      manifest(
        """
        - download: https://example.org/start
          id: start
          after: c
        - download: https://example.org/c
          id: c
          after: d
        - download: https://example.org/d
          id: d
          after: e
        - download: https://example.org/e
          id: e
          after: c
        """))
    expectMatch(found, [Expected("16:16", "cycle in after: c → d → e → c")])
  }

  @Test func twoSeparateCyclesAreBothReported() {
    let found = problems(
      manifest(
        """
        - download: https://example.org/a
          after: b
        - download: https://example.org/b
          after: a
        - download: https://example.org/c
          after: d
        - download: https://example.org/d
          after: c
        """))
    expectMatch(
      found,
      [
        Expected("8:16", "cycle in after: a → b → a"),
        Expected("12:16", "cycle in after: c → d → c"),
      ])
  }

  @Test func diamondIsNotACycle() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/top
          after: [left, right]
        - download: https://example.org/left
          after: bottom
        - download: https://example.org/right
          after: bottom
        - download: https://example.org/bottom
        """))
    #expect(planned.orderedURLs.first == "https://example.org/bottom")
    #expect(planned.orderedURLs.last == "https://example.org/top")
  }

  @Test func cycleThroughASharedRequest() {
    // No task waits for itself, but `a` and `c` are one request, which would wait for itself via `b`.
    let found = problems(
      manifest(
        """
        - download: https://example.org/x
          to: a
          after: b
        - download: https://example.org/y
          to: b
          after: c
        - download: https://example.org/x
          to: c
        """))
    #expect(found.count == 1)
    #expect(found.first?.contains("requests wait for each other") == true)
  }

  @Test func waitingForATaskThatSharesYourRequestIsIgnored() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/x
          to: a
        - download: https://example.org/x
          to: b
          after: a
        """))
    #expect(planned.plan.requests.count == 1)
    #expect(planned.plan.requests[0].dependencies.isEmpty)
  }
}
