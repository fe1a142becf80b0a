import Foundation
import TestServer
import TestSupport
import Testing

/// Network policy flags, tested without a modem: loopback is declared cellular (or expensive).
@Suite struct NetworkPolicyRunTests {
  @Test func aTaskAllowedOnlyOffCellularIsDeferredWhenItsOnlyRouteIsCellular() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a", .text("a\n"))
    fixture.server.route("/b", .text("b\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        metered:
          network: {allows_cellular: false, cellular_interfaces: [lo]}
          tasks:
            - download: BASE/a
        anywhere:
          tasks:
            - download: BASE/b
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.server.requests.map(\.path) == ["/b"])
    let task = try #require(try fixture.tasks()["a"])
    #expect(task["outcome"] as? String == "deferred")
    let error = try #require(task["error"] as? [String: Any])
    #expect(error["code"] as? String == "policy")
    #expect((error["message"] as? String)?.contains("lo, a cellular interface, and allows_cellular is false") == true)
    #expect(try fixture.summary()["deferred"] as? Int == 1)
    #expect(!fixture.folder.exists("a"))
    // Deferred tasks run on a later run, once the policy allows them.
    fixture.manifest(
      """
      version: 1
      sessions:
        metered:
          tasks:
            - download: BASE/a
        anywhere:
          tasks:
            - download: BASE/b
      """)
    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path)
    #expect(plan.stdout.contains("send: deferred last time"))
    #expect(try fixture.run().status == 0)
    #expect(fixture.folder.read("a") == "a\n")
  }

  @Test func theEnvironmentCanDeclareAnInterfaceExpensive() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a", .text("a\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          network: {allows_expensive: false}
          tasks:
            - download: BASE/a
      """)
    let result = try fixture.run(environment: ["BATCHDL_EXPENSIVE_INTERFACES": "lo"])
    #expect(result.status == 0)
    #expect(fixture.server.requests.isEmpty)
    #expect(try fixture.tasks()["a"]?["outcome"] as? String == "deferred")
  }

  @Test func discretionaryTasksWaitForTheirWindow() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a", .text("a\n"))
    // A one-minute window that is not now: an hour from now.
    let now = Calendar.current.dateComponents([.hour, .minute], from: Date().addingTimeInterval(3600))
    let start = String(format: "%02d:%02d", now.hour ?? 0, now.minute ?? 0)
    let later = Calendar.current.dateComponents([.hour, .minute], from: Date().addingTimeInterval(3660))
    let end = String(format: "%02d:%02d", later.hour ?? 0, later.minute ?? 0)
    fixture.manifest(
      """
      version: 1
      sessions:
        nightly:
          network: {discretionary: true, window: "\(start)-\(end)"}
          tasks:
            - download: BASE/a
      """)
    let result = try fixture.run()
    #expect(result.status == 0)
    #expect(fixture.server.requests.isEmpty)
    let task = try #require(try fixture.tasks()["a"])
    #expect(task["outcome"] as? String == "deferred")
    #expect(((task["error"] as? [String: Any])?["message"] as? String)?.contains("window") == true)
  }

  @Test func waitingForAnAllowedRouteEndsDeferredWhenTheBudgetRunsOut() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a", .text("a\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        patient:
          timeouts: {resource: 2s}
          network: {allows_cellular: false, cellular_interfaces: [lo], waits_for_connectivity: true}
          tasks:
            - download: BASE/a
      """)
    let result = try fixture.run()
    #expect(result.status == 0)
    #expect(fixture.server.requests.isEmpty)
    let task = try #require(try fixture.tasks()["a"])
    #expect(task["outcome"] as? String == "deferred")
    #expect(((task["error"] as? [String: Any])?["message"] as? String)?.contains("stopped waiting") == true)
  }
}
