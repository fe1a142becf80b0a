import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// Sizes, durations, rates, windows and paths as the manifest writes them.
@Suite struct ValueTests {
  @Test func badSizesDurationsRatesAndWindows() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          timeouts:
            request: abc
            resource: -5s
          retry:
            backoff: 0s
            max_backoff: 10 minutes
          cache:
            memory: 10XB
            disk: -1MB
          network:
            rate_limit: 50MB
            window: "25:00-03:00"
          tasks:
            - download: https://example.org/a.bin
              size: 1.5
            - data: https://example.org/b.json
              become_download: {larger_than: lots}
      """,
      [
        Expected("5:16", "bad duration 'abc' for timeouts.request", "use ms, s, m, h or d", "e.g. 30s"),
        Expected("6:17", "bad duration '-5s' for timeouts.resource"),
        Expected("9:20", "bad duration '10 minutes' for retry.max_backoff"),
        Expected("11:15", "bad size '10XB' for cache.memory", "KB, MB, GB, TB", "powers of 1024"),
        Expected("12:13", "bad size '-1MB' for cache.disk"),
        Expected("14:19", "bad rate '50MB' for network.rate_limit", "a size per second, e.g. 50MB/s"),
        Expected("15:15", "bad network.window '25:00-03:00'", "HH:MM-HH:MM"),
        Expected("18:15", "bad size '1.5' for size"),
        Expected("20:40", "bad size 'lots' for become_download.larger_than"),
      ])
  }

  @Test func zeroTimeoutsAndRates() {
    expectProblems(
      minimal(
        adding: """
          timeouts: {request: 0s, resource: 0}
          network: {rate_limit: 0/s, window: "01:00-01:00"}
          """),
      [
        Expected("6:25", "timeouts.request must be longer than zero"),
        Expected("6:39", "timeouts.resource must be longer than zero"),
        Expected("7:27", "bad rate '0/s'"),
        Expected("7:40", "bad network.window '01:00-01:00'"),
      ])
  }

  @Test func sizesDurationsAndRatesDecode() throws {
    let manifest = try load(
      minimal(
        adding: """
          timeouts: {request: 500ms, resource: 2h}
          retry: {backoff: 0s, max_backoff: 1.5m}
          cache: {memory: 512KB, disk: 1GB}
          network: {rate_limit: 2.5MB/s, window: "22:30-06:00"}
          """))
    let session = try #require(manifest.session("main"))
    #expect(session.timeouts == Timeouts(request: Interval(milliseconds: 500), resource: .seconds(7200)))
    #expect(session.retry.backoff == .seconds(0))
    #expect(session.retry.maxBackoff == .seconds(90))
    #expect(session.cache.memory == 512 << 10)
    #expect(session.cache.disk == 1 << 30)
    #expect(session.network.rateLimit == 2_621_440)
    #expect(session.network.window == TimeWindow(start: 22 * 60 + 30, end: 6 * 60))
  }

  @Test func taskSizeAndChecksumDecode() throws {
    let digest = String(repeating: "AB", count: 32)
    let manifest = try load(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.bin
              size: 10MB
              sha256: \(digest)
      """)
    let spec = try #require(manifest.session("main")?.specs.first)
    #expect(spec.size == 10 << 20)
    #expect(spec.sha256 == String(repeating: "ab", count: 32))
  }

  @Test func unsafeDestinations() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.bin
              to: /etc/passwd
            - download: https://example.org/b.bin
              to: ../b.bin
            - download: https://example.org/c.bin
              to: a/../../c.bin
            - download: https://example.org/d.bin
              to: sub/../d.bin
            - download: https://example.org/e.bin
              to: ./sub/./e.bin
            - download: https://example.org/f.bin
              to: sub/..
            - list: urls.txt
              to: ../../files/
      """, files: ["urls.txt": "https://example.org/g.bin\n"],
      [
        Expected("6:13", "to '/etc/passwd' is absolute", "relative to the session's dest"),
        Expected("8:13", "to '../b.bin' climbs out of its folder with '..'"),
        Expected("10:13", "to 'a/../../c.bin' climbs out of its folder with '..'"),
        Expected("16:13", "names the session's dest folder itself"),
        Expected("18:13", "to '../../files/' climbs out of its folder"),
      ])
  }

  @Test func safeDestinationsAreNormalized() throws {
    let (_, result) = ManifestFixture.plan(
      """
      version: 1
      sessions:
        main:
          dest: mirror/./x/../
          tasks:
            - download: https://example.org/a.bin
              to: sub/../d.bin
            - download: https://example.org/e.bin
              to: ./sub//./e.bin
            - download: https://example.org/dir/f.bin
              to: folder/
      """)
    let plan = try result.get()
    #expect(plan.manifest.session("main")?.dest == "mirror")
    #expect(
      Set(plan.tasks.compactMap { plan.destination(of: $0) }) == [
        "mirror/d.bin", "mirror/sub/e.bin", "mirror/folder/f.bin",
      ])
  }

  @Test func badDest() {
    expectProblems(
      """
      version: 1
      sessions:
        a:
          dest: ""
          tasks:
            - download: https://example.org/a.bin
        b:
          dest: ../outside
          tasks:
            - download: https://example.org/b.bin
        c:
          dest: "nul\\0byte"
          tasks:
            - download: https://example.org/c.bin
        d:
          dest: [out]
          tasks:
            - download: https://example.org/d.bin
      """,
      [
        Expected("4:11", "dest '' is empty"),
        Expected("8:11", "dest '../outside' climbs out of"),
        Expected("12:11", "contains a NUL byte"),
        Expected("16:11", "dest must be a string, found a list"),
      ])
  }

  @Test func absoluteDestIsAllowed() throws {
    let manifest = try load(minimal(adding: "dest: /srv/mirror/"))
    #expect(manifest.session("main")?.dest == "/srv/mirror")
  }

  @Test func pathRules() {
    func normalized(_ path: String, absolute: Bool = false) -> String? {
      try? PathRules.normalize(path, allowAbsolute: absolute).get()
    }
    #expect(normalized("a/b") == "a/b")
    #expect(normalized("a//b/./c/") == "a/b/c")
    #expect(normalized("a/../b") == "b")
    #expect(normalized("a/..") == "")
    #expect(normalized(".") == "")
    #expect(normalized("..") == nil)
    #expect(normalized("a/../../b") == nil)
    #expect(normalized("../a") == nil)
    #expect(normalized("") == nil)
    #expect(normalized("/abs") == nil)
    #expect(normalized("/abs/../x", absolute: true) == "/x")
    #expect(normalized("/../..", absolute: true) == "/")
    #expect(normalized("a\u{0}b") == nil)
    #expect(PathRules.join("", "x") == "x")
    #expect(PathRules.join("d", "") == "d")
    #expect(PathRules.join("d/", "x") == "d/x")
    #expect(PathRules.join("d", "x") == "d/x")
  }
}
