import Foundation
import TestServer
import TestSupport
import Testing

/// The HTTP cache of data tasks across runs, under each `cache.policy`.
@Suite struct CacheRunTests {
  func manifest(_ fixture: RunFixture, policy: String) {
    fixture.manifest(
      """
      version: 1
      sessions:
        api:
          cache: {policy: \(policy)}
          tasks:
            - data: BASE/releases.json
              to: releases.json
      """)
  }

  @Test func aFreshCachedDataTaskCostsNoRequestAndReloadAlwaysAsks() throws {
    let fixture = try RunFixture()
    fixture.server.route(
      "/releases.json", .fixed(.json(200, "{\"v\": 1}", headers: ["Cache-Control": "max-age=600"])))
    manifest(fixture, policy: "protocol")
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests.count == 1)
    fixture.folder.write("releases.json", "stale copy")
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests.count == 1)
    #expect(fixture.folder.read("releases.json") == "{\"v\": 1}")
    #expect(try fixture.tasks()["releases.json"]?["source"] as? String == "cache")

    manifest(fixture, policy: "reload")
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests.count == 2)
    #expect(try fixture.tasks()["releases.json"]?["source"] as? String == "network")
  }

  @Test func noCacheRevalidatesAndA304ServesTheCachedBody() throws {
    let fixture = try RunFixture()
    fixture.server.route(
      "/releases.json",
      .handler { request in
        if request.header("if-none-match") == "\"r1\"" { return Response(status: 304, headers: ["ETag": "\"r1\""]) }
        return .json(200, "{\"v\": 2}", headers: ["Cache-Control": "no-cache", "ETag": "\"r1\""])
      })
    manifest(fixture, policy: "protocol")
    #expect(try fixture.run().status == 0)
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests.count == 2)
    #expect(fixture.server.requests.last?.header("if-none-match") == "\"r1\"")
    let task = try #require(try fixture.tasks()["releases.json"])
    #expect(task["source"] as? String == "not-modified")
    #expect(task["outcome"] as? String == "completed")
    #expect(fixture.folder.read("releases.json") == "{\"v\": 2}")
  }

  @Test func onlyCacheNeverTouchesTheNetwork() throws {
    let fixture = try RunFixture()
    fixture.server.route("/releases.json", .fixed(.json(200, "{}")))
    manifest(fixture, policy: "only-cache")
    #expect(try fixture.run().status == 1)
    #expect(fixture.server.requests.isEmpty)
    #expect((try fixture.tasks()["releases.json"]?["error"] as? [String: Any])?["code"] as? String == "cache-miss")
  }

  @Test func preferCacheUsesAStaleEntry() throws {
    let fixture = try RunFixture()
    fixture.server.route("/releases.json", .fixed(.json(200, "{\"v\": 3}", headers: ["Cache-Control": "max-age=0"])))
    manifest(fixture, policy: "prefer-cache")
    #expect(try fixture.run().status == 0)
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests.count == 1)
    #expect(try fixture.tasks()["releases.json"]?["source"] as? String == "cache")
  }

  @Test func aSessionThatGotNoCookieWritesNoJar() throws {
    let fixture = try RunFixture()
    fixture.server.route("/releases.json", .fixed(.json(200, "{}", headers: ["Cache-Control": "max-age=600"])))
    manifest(fixture, policy: "protocol")
    #expect(try fixture.run().status == 0)
    let stats = try BinaryRunner.run(["cache", "stats", "manifest.yaml"], in: fixture.folder.path)
    #expect(stats.stdout.contains("http cache: 1 entries"), "\(stats.stdout)")
    #expect(stats.stdout.contains("cookie jars: 0"), "\(stats.stdout)")
  }

  @Test func cacheStatsAndClearCoverCachesAndCookies() throws {
    let fixture = try RunFixture()
    fixture.server.route(
      "/releases.json",
      .fixed(.json(200, "{}", headers: ["Cache-Control": "max-age=600", "Set-Cookie": "sid=1; Path=/"])))
    manifest(fixture, policy: "protocol")
    #expect(try fixture.run().status == 0)
    let stats = try BinaryRunner.run(["cache", "stats", "manifest.yaml"], in: fixture.folder.path)
    #expect(stats.stdout.contains("http cache: 1 entries"))
    #expect(stats.stdout.contains("cookie jars: 1"))
    let cleared = try BinaryRunner.run(["cache", "clear", "manifest.yaml", "--yes"], in: fixture.folder.path)
    #expect(cleared.status == 0, "\(cleared.stderr)")
    let after = try BinaryRunner.run(["cache", "stats", "manifest.yaml"], in: fixture.folder.path)
    #expect(after.stdout.contains("http cache: 0 entries"))
    #expect(after.stdout.contains("cookie jars: 0"))
    #expect(try fixture.run().status == 0)
    #expect(fixture.server.requests.count == 2)
  }
}
