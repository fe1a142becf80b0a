import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLTransfer

@Suite struct DecisionTests {
  let now = Date(timeIntervalSince1970: 0)

  func policy(
    _ ipv4: String, ipv6: String = "", names: [String: [String]], environment: [String: String] = [:]
  )
    -> NetworkPolicy
  {
    NetworkPolicy(routes: finder(ipv4: ipv4, ipv6: ipv6, names: names), environment: environment)
  }

  @Test func aCellularOnlyRouteIsDeferredWhenCellularIsNotAllowed() {
    let policy = policy(cellularDefault, names: ["example.org": ["8.8.8.8"]])
    let decision = policy.decide(host: "example.org", port: 443, settings: settings(cellular: false), now: now)
    #expect(
      decision
        == .defer(
          reason: "the only route to example.org is through wwan0, a cellular interface, and allows_cellular is false"))
    #expect(decision.curlInterface == nil)
  }

  @Test func aCellularRouteIsRefusedWhenExpensiveIsNotAllowed() {
    let policy = policy(cellularDefault, names: ["example.org": ["8.8.8.8"]])
    let decision = policy.decide(host: "example.org", port: 443, settings: settings(expensive: false), now: now)
    #expect(
      decision.reason
        == "the only route to example.org is through wwan0, a cellular interface, which counts as expensive, and "
        + "allows_expensive is false")
  }

  @Test func aCellularOnlyRouteWaitsWhenTheSessionWaits() {
    let policy = policy(cellularDefault, names: ["example.org": ["8.8.8.8"]])
    let decision = policy.decide(
      host: "example.org", port: 443, settings: settings(cellular: false, waits: true), now: now)
    guard case .wait(let reason) = decision else {
      Issue.record("expected wait, got \(decision)")
      return
    }
    #expect(reason.contains("through wwan0, a cellular interface, and allows_cellular is false"))
    #expect(reason.contains("waits_for_connectivity"))
  }

  @Test func anAllowedRouteNeedsNoBinding() {
    let policy = policy(cellularDefault, names: ["intranet.example": ["10.1.2.3"]])
    let decision = policy.decide(host: "intranet.example", port: 443, settings: settings(cellular: false), now: now)
    #expect(decision == .allowed(bindTo: nil))
    #expect(decision.reason == nil)
  }

  @Test func aMoreGeneralAllowedRouteIsBoundTo() {
    // 93.184.0.0/16 via the modem, everything else via eth0.
    let text =
      header + line("eth0", "00000000", "0101A8C0", metric: 100, "00000000")
      + line("wwan0", "0000B85D", "00000000", flags: "0001", "0000FFFF")
    let policy = policy(text, names: ["example.org": ["93.184.216.34"]])
    let decision = policy.decide(host: "example.org", port: 443, settings: settings(cellular: false), now: now)
    #expect(decision == .allowed(bindTo: "eth0"))
    #expect(decision.curlInterface == "if!eth0")
  }

  @Test func aSecondDefaultRouteIsBoundTo() {
    let text =
      header + line("wwan0", "00000000", "4040400A", metric: 100, "00000000")
      + line("wlan0", "00000000", "0101A8C0", metric: 600, "00000000")
    let policy = policy(text, names: ["example.org": ["8.8.8.8"]])
    #expect(
      policy.decide(host: "example.org", port: 443, settings: settings(cellular: false), now: now)
        == .allowed(bindTo: "wlan0"))
    #expect(
      policy.decide(host: "example.org", port: 443, settings: settings(), now: now) == .allowed(bindTo: nil))
  }

  @Test func anotherFamilysAllowedRouteIsBoundTo() {
    // IPv6 leaves through the modem, IPv4 through wlan0: pin to wlan0 so happy eyeballs cannot pick the modem.
    let text = header + line("wlan0", "00000000", "0101A8C0", metric: 600, "00000000")
    let policy = policy(text, ipv6: fakeIPv6, names: ["dual.example": ["2606:4700::1111", "104.16.0.1"]])
    #expect(
      policy.decide(host: "dual.example", port: 443, settings: settings(cellular: false), now: now)
        == .allowed(bindTo: "wlan0"))
  }

  @Test func severalDisallowedInterfacesAreAllNamed() {
    let text =
      header + line("wwan0", "00000000", "4040400A", metric: 100, "00000000")
      + line("eth1", "00000000", "0101A8C0", metric: 600, "00000000")
    let policy = policy(text, names: ["example.org": ["8.8.8.8"]])
    let decision = policy.decide(
      host: "example.org", port: 443,
      settings: settings(expensive: false, constrained: false, constrainedInterfaces: ["eth1"]), now: now)
    #expect(
      decision.reason
        == "every route to example.org goes through a disallowed interface: wwan0, a cellular interface, which "
        + "counts as expensive, and allows_expensive is false; eth1, a constrained interface, and allows_constrained "
        + "is false")
  }

  @Test func bothFlagsAreNamedWhenBothRefuse() {
    let policy = policy(cellularDefault, names: ["example.org": ["8.8.8.8"]])
    let decision = policy.decide(
      host: "example.org", port: 443, settings: settings(cellular: false, expensive: false), now: now)
    #expect(
      decision.reason
        == "the only route to example.org is through wwan0, a cellular and expensive interface, and allows_cellular "
        + "and allows_expensive are false")
  }

  @Test func anUnresolvableNameIsUnreachable() {
    let policy = NetworkPolicy(environment: [:])
    let decision = policy.decide(host: "nothing-here.invalid", port: 443, settings: settings(waits: true), now: now)
    guard case .unreachable(let reason) = decision else {
      Issue.record("expected unreachable, got \(decision)")
      return
    }
    #expect(reason.contains("nothing-here.invalid"))
  }

  @Test func aHostWithoutAnyRouteIsUnreachable() {
    let policy = policy("", names: ["example.org": ["8.8.8.8"]])
    #expect(
      policy.decide(host: "example.org", port: 443, settings: settings(cellular: false), now: now)
        == .unreachable(reason: "there is no route to example.org (8.8.8.8): no interface leads there"))
  }

  @Test func anUnrestrictedSessionIsAllowedWithoutALookup() {
    let resolves = Counter()
    let policy = NetworkPolicy(routes: finder(ipv4: cellularDefault, resolves: resolves), environment: [:])
    #expect(
      policy.decide(host: "nothing-here.invalid", port: 443, settings: settings(), now: now)
        == .allowed(bindTo: nil))
    #expect(resolves.value == 0)
  }

  @Test func theEnvironmentCanMakeLoopbackCellular() {
    let environment = ["BATCHDL_CELLULAR_INTERFACES": "lo"]
    let restricted = NetworkPolicy(environment: environment)
    let decision = restricted.decide(host: "127.0.0.1", port: 8080, settings: settings(cellular: false), now: now)
    #expect(
      decision
        == .defer(
          reason: "the only route to 127.0.0.1 is through lo, a cellular interface, and allows_cellular is false"))
    #expect(
      restricted.decide(url: "http://[::1]:8080/a", settings: settings(cellular: false, waits: true), now: now).reason?
        .hasPrefix("the only route to ::1 is through lo, a cellular interface") == true)
    let plain = NetworkPolicy(environment: [:])
    #expect(
      plain.decide(host: "127.0.0.1", port: 8080, settings: settings(cellular: false), now: now)
        == .allowed(bindTo: nil))
  }

  @Test func urlsAreJudgedByTheirHost() {
    let policy = policy(cellularDefault, names: ["example.org": ["8.8.8.8"], "intranet.example": ["10.1.2.3"]])
    let strict = settings(cellular: false)
    #expect(policy.decide(url: "https://example.org/file", settings: strict, now: now).reason != nil)
    #expect(policy.decide(url: "http://intranet.example:8080/", settings: strict, now: now) == .allowed(bindTo: nil))
    #expect(policy.decide(url: "file:///tmp/x", settings: strict, now: now) == .allowed(bindTo: nil))
  }
}
