import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLTransfer

/// Session names, kinds, choices with suggestions, identifiers, and how defaults are inherited.
@Suite struct SessionTests {
  @Test func refreshIsNeverAlwaysOrADurationInheritedFromDefaults() throws {
    let manifest = try load(
      """
      version: 1
      defaults:
        refresh: 1d
      sessions:
        a:
          tasks: [{download: https://example.org/a}]
        b:
          refresh: always
          tasks: [{download: https://example.org/b}]
        c:
          refresh: never
          tasks: [{download: https://example.org/c}]
      """)
    #expect(manifest.session("a")?.refresh == .after(.seconds(86_400)))
    #expect(manifest.session("b")?.refresh == .always)
    #expect(manifest.session("c")?.refresh == .never)
    #expect(try load(minimal).session("main")?.refresh == .never)
    expectProblems(
      minimal(adding: "refresh: sometimes"), [Expected("6:14", "refresh must be never, always or a duration")])
    expectProblems(minimal(adding: "refresh: 0s"), [Expected("6:14", "refresh")])
  }

  @Test func unknownSessionKind() {
    expectProblems(
      minimal(adding: "kind: backround"),
      [
        Expected(
          "6:11", "unknown kind 'backround'", "expected one of default, ephemeral, background",
          "did you mean 'background'?")
      ])
    expectProblems(
      minimal(adding: "kind: Ephemeral"),
      [Expected("6:11", "unknown kind 'Ephemeral'", "did you mean 'ephemeral'?")])
    let found = ManifestFixture.problems(minimal(adding: "kind: remote"))
    expectMatch(found, [Expected("6:11", "unknown kind 'remote'", "expected one of default, ephemeral, background")])
    #expect(!render(found).contains("did you mean"))
  }

  @Test func misspelledKindDrawsNoFollowOnErrors() {
    // With the kind unknown, what depends on it (identifier rules) is not judged.
    expectProblems(
      """
      version: 1
      sessions:
        iso:
          kind: backround
          identifier: org.example.iso
          tasks:
            - data: https://example.org/a.json
      """,
      [Expected("4:11", "unknown kind 'backround'", "did you mean 'background'?")])
  }

  @Test func sessionNames() {
    expectProblems(
      """
      version: 1
      sessions:
        Main:
          tasks:
            - download: https://example.org/a.bin
        "my session":
          tasks:
            - download: https://example.org/b.bin
        "":
          tasks:
            - download: https://example.org/c.bin
        nightly_2-b:
          tasks:
            - download: https://example.org/d.bin
        café:
          tasks:
            - download: https://example.org/e.bin
      """,
      [
        Expected("3:3", "session name 'Main' may use only a-z, 0-9, '_' and '-'"),
        Expected("6:3", "session name 'my session' may use only a-z, 0-9, '_' and '-'"),
        Expected("9:3", "session name ''"),
        Expected("15:3", "session name 'café'"),
      ])
  }

  @Test func unknownCachePolicyAndPriority() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          cache: {policy: prefer_cache}
          tasks:
            - download: https://example.org/a.bin
              priority: hihg
            - list: urls.txt
              priority: urgent
      """,
      [
        Expected(
          "4:21", "unknown cache.policy 'prefer_cache'", "expected one of protocol, reload, prefer-cache, only-cache",
          "did you mean 'prefer-cache'?"),
        Expected("7:19", "unknown priority 'hihg'", "expected one of high, normal, low", "did you mean 'high'?"),
        Expected("9:19", "unknown priority 'urgent'", "expected one of high, normal, low"),
      ])
    #expect(!ManifestFixture.problems(minimal(adding: "cache: {policy: fresh}")).joined().contains("did you mean"))
  }

  @Test func cachePoliciesAndPriorities() throws {
    for policy in CachePolicy.allCases {
      let manifest = try load(minimal(adding: "cache: {policy: \(policy.rawValue)}"))
      #expect(manifest.session("main")?.cache.policy == policy)
    }
    for priority in Priority.allCases {
      let manifest = try load(
        "version: 1\nsessions:\n  main:\n    tasks:\n      - download: https://example.org/a.bin\n"
          + "        priority: \(priority.rawValue)\n")
      #expect(manifest.session("main")?.specs.first?.priority == priority)
    }
  }

  @Test func builtInDefaults() throws {
    let manifest = try load(
      """
      version: 1
      sessions:
        plain:
          tasks:
            - download: https://example.org/a.bin
        bg:
          kind: background
          identifier: org.example.bg
          tasks:
            - download: https://example.org/b.bin
        eph:
          kind: ephemeral
          cache: {disk: 1GB, memory: 1MB}
          tasks:
            - download: https://example.org/c.bin
      """)
    let plain = try #require(manifest.session("plain"))
    #expect(plain.kind == .default)
    #expect(plain.dest == "")
    #expect(plain.identifier == nil)
    #expect(plain.timeouts.request == .seconds(60))
    #expect(plain.timeouts.resource == nil)
    #expect(plain.retry == RetryPolicy(attempts: 3, backoff: .seconds(1), maxBackoff: .seconds(120)))
    #expect(plain.cache == CacheSettings(policy: .protocol, memory: 20 << 20, disk: 100 << 20))
    #expect(plain.network.allowsCellular && plain.network.allowsExpensive && plain.network.allowsConstrained)
    #expect(!plain.network.waitsForConnectivity && !plain.network.discretionary)
    #expect(plain.network.window == nil)
    #expect(plain.network.maxConnectionsPerHost == 6)
    #expect(plain.network.maxConcurrent == 16)
    #expect(plain.network.rateLimit == nil)
    #expect(plain.network.cellularInterfaces == ["wwan*", "ppp*", "rmnet*", "wwp*"])
    #expect(plain.headers.isEmpty)
    #expect(plain.onFinished == nil)

    let bg = try #require(manifest.session("bg"))
    #expect(bg.kind == .background)
    #expect(bg.identifier == "org.example.bg")
    #expect(bg.timeouts.resource == .seconds(7 * 86_400))
    #expect(bg.timeouts.request == .seconds(60))

    let eph = try #require(manifest.session("eph"))
    #expect(eph.kind == .ephemeral)
    #expect(eph.cache.disk == 0)
    #expect(eph.cache.memory == 1 << 20)
    #expect(eph.timeouts.resource == nil)
  }

  @Test func backgroundResourceTimeoutCanBeSet() throws {
    let manifest = try load(
      """
      version: 1
      defaults:
        timeouts: {resource: 2h}
      sessions:
        bg:
          kind: background
          identifier: org.example.bg
          tasks:
            - download: https://example.org/b.bin
        bg2:
          kind: background
          identifier: org.example.bg2
          timeouts: {resource: 30m}
          tasks:
            - download: https://example.org/c.bin
      """)
    #expect(manifest.session("bg")?.timeouts.resource == .seconds(7200))
    #expect(manifest.session("bg2")?.timeouts.resource == .seconds(1800))
  }

  @Test func defaultsAreInheritedAndSessionKeysWin() throws {
    let manifest = try load(
      """
      version: 1
      defaults:
        kind: ephemeral
        dest: out
        timeouts: {request: 10s, resource: 1h}
        retry: {attempts: 5, backoff: 2s}
        cache: {policy: reload, memory: 1MB}
        network:
          allows_cellular: false
          max_concurrent: 4
          rate_limit: 1MB/s
          window: "01:00-05:00"
          expensive_interfaces: [tether0]
        headers: {User-Agent: base, X-Trace: "1"}
        on_finished: ./notify.sh
      sessions:
        a:
          timeouts: {request: 20s}
          retry: {backoff: 5s}
          cache: {memory: 2MB}
          network: {max_concurrent: 8, allows_expensive: false}
          headers: {user-agent: mine, X-Extra: yes}
          tasks:
            - download: https://example.org/a.bin
        b:
          kind: default
          dest: other/
          on_finished: ./other.sh
          tasks:
            - download: https://example.org/b.bin
      """)
    let a = try #require(manifest.session("a"))
    #expect(a.kind == .ephemeral)
    #expect(a.dest == "out")
    #expect(a.timeouts == Timeouts(request: .seconds(20), resource: .seconds(3600)))
    #expect(a.retry == RetryPolicy(attempts: 5, backoff: .seconds(5), maxBackoff: .seconds(120)))
    #expect(a.cache == CacheSettings(policy: .reload, memory: 2 << 20, disk: 0))
    #expect(!a.network.allowsCellular)
    #expect(!a.network.allowsExpensive)
    #expect(a.network.allowsConstrained)
    #expect(a.network.maxConcurrent == 8)
    #expect(a.network.rateLimit == 1 << 20)
    #expect(a.network.window == TimeWindow(start: 60, end: 300))
    #expect(a.network.expensiveInterfaces == ["tether0"])
    #expect(a.onFinished == "./notify.sh")
    // Header names merge without regard to case; the session's value wins and no name appears twice.
    #expect(a.headers.count == 3)
    #expect(a.headers.filter { $0.name.lowercased() == "user-agent" }.map(\.value) == ["mine"])
    #expect(a.header("X-Trace") == "1")
    #expect(a.header("X-Extra") == "yes")

    let b = try #require(manifest.session("b"))
    #expect(b.kind == .default)
    #expect(b.dest == "other")
    #expect(b.cache == CacheSettings(policy: .reload, memory: 1 << 20, disk: 100 << 20))
    #expect(b.timeouts == Timeouts(request: .seconds(10), resource: .seconds(3600)))
    #expect(b.header("User-Agent") == "base")
    #expect(b.onFinished == "./other.sh")
  }

  @Test func defaultsProblemsAreReportedOnceAtTheirPlace() {
    expectProblems(
      """
      version: 1
      defaults:
        timeouts: {request: soon}
        kind: backgrnd
      sessions:
        a:
          tasks:
            - download: https://example.org/a.bin
        b:
          tasks:
            - download: https://example.org/b.bin
      """,
      [
        Expected("3:23", "bad duration 'soon' for timeouts.request"),
        Expected("4:9", "unknown kind 'backgrnd'", "did you mean 'background'?"),
      ])
  }

  @Test func backgroundKindFromDefaultsNeedsIdentifiers() {
    expectProblems(
      """
      version: 1
      defaults: {kind: background}
      sessions:
        a:
          identifier: org.example.a
          tasks:
            - download: https://example.org/a.bin
        b:
          tasks:
            - download: https://example.org/b.bin
      """,
      [Expected("8:3", "background session 'b' needs an 'identifier:'")])
  }

  @Test func backgroundIdentifiers() {
    expectProblems(
      """
      version: 1
      sessions:
        bg:
          kind: background
          tasks:
            - download: https://example.org/a.bin
        fg:
          identifier: org.example.fg
          tasks:
            - download: https://example.org/b.bin
        one:
          kind: background
          identifier: org.example.same
          tasks:
            - download: https://example.org/c.bin
        two:
          kind: background
          identifier: org.example.same
          tasks:
            - download: https://example.org/d.bin
      """,
      [
        Expected("3:3", "background session 'bg' needs an 'identifier:'", "unique across manifests"),
        Expected("8:17", "identifier is only for background sessions", "set 'kind: background'"),
        Expected("18:17", "identifier 'org.example.same' is already used", "line 13", "needs its own"),
      ])
  }

  @Test func emptyIdentifierIsRejected() {
    expectProblems(
      """
      version: 1
      sessions:
        bg:
          kind: background
          identifier: ""
          tasks:
            - download: https://example.org/a.bin
      """,
      [Expected("5:17", "identifier must not be empty")])
  }

  @Test func emptyTaskListsWarn() {
    expectProblems(
      """
      version: 1
      sessions:
        a:
          tasks: []
        b:
          tasks:
        c:
          kind: nope
          tasks:
            - download: https://example.org/a.bin
      """,
      [
        Expected("4:12", "session 'a' has no tasks", severity: "warning"),
        Expected("6:11", "session 'b' has no tasks", severity: "warning"),
        Expected("8:11", "unknown kind 'nope'"),
      ])
  }

  @Test func discretionaryWithoutWindowWarns() throws {
    let (_, result) = ManifestFixture.plan(minimal(adding: "network: {discretionary: true}"))
    let plan = try result.get()
    #expect(plan.warnings.map(\.message).contains { $0.contains("discretionary without network.window") })
    #expect(plan.warnings.first?.mark.line == 6)
  }
}

/// `max_size` and `sha512`, as the decoder reads them.
@Suite struct MaxSizeManifestTests {
  @Test func maxSizeIsASizeInheritedFromDefaultsAndKeptByEachEntry() throws {
    let manifest = try load(
      """
      version: 1
      defaults:
        max_size: 1GB
      sessions:
        a:
          tasks:
            - download: https://example.org/a
              max_size: 10MB
            - list: urls.txt
              max_size: 2KB
            - metalink: doc.meta4
              max_size: 3KB
        b:
          max_size: 5MB
          tasks: [{download: https://example.org/b}]
      """)
    let a = try #require(manifest.session("a"))
    #expect(a.maxSize == 1 << 30)
    #expect(manifest.session("b")?.maxSize == 5 << 20)
    if case .task(let task) = a.tasks[0] { #expect(task.maxSize == 10 << 20) } else { Issue.record("a task") }
    if case .list(let list) = a.tasks[1] { #expect(list.maxSize == 2 << 10) } else { Issue.record("a list") }
    if case .metalink(let doc) = a.tasks[2] { #expect(doc.maxSize == 3 << 10) } else { Issue.record("a metalink") }
    #expect(try load(minimal).session("main")?.maxSize == nil)
    expectProblems(minimal(adding: "max_size: lots"), [Expected("6:15", "bad size 'lots' for max_size")])
  }

  @Test func sha512IsKeptLowerCased() throws {
    let hex = String(repeating: "AB", count: 64)
    let manifest = try load(
      """
      version: 1
      sessions:
        a:
          tasks:
            - download: https://example.org/a
              sha512: \(hex)
      """)
    guard case .task(let task) = manifest.session("a")?.tasks.first else {
      Issue.record("a task")
      return
    }
    #expect(task.sha512 == hex.lowercased())
    #expect(task.sha256 == nil)
  }
}
