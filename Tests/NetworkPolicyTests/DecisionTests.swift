import Foundation
import TestSupport
import Testing

@testable import BatchDL

/// A session's network settings, the manifest's defaults unless given.
func settings(
  cellular: Bool = true, expensive: Bool = true, constrained: Bool = true, waits: Bool = false,
  discretionary: Bool = false, window: TimeWindow? = nil,
  cellularInterfaces: [String] = ["wwan*", "ppp*", "rmnet*", "wwp*"], expensiveInterfaces: [String] = [],
  constrainedInterfaces: [String] = []
) -> NetworkSettings {
  NetworkSettings(
    allowsCellular: cellular, allowsExpensive: expensive, allowsConstrained: constrained,
    waitsForConnectivity: waits, discretionary: discretionary, window: window, maxConnectionsPerHost: 6,
    maxConcurrent: 16, rateLimit: nil, cellularInterfaces: cellularInterfaces,
    expensiveInterfaces: expensiveInterfaces, constrainedInterfaces: constrainedInterfaces)
}

/// Counts calls from `@Sendable` closures.
final class Counter: @unchecked Sendable {
  private let lock = NSLock()
  private var count = 0

  func increment() {
    lock.lock()
    count += 1
    lock.unlock()
  }

  var value: Int {
    lock.lock()
    defer { lock.unlock() }
    return count
  }
}

let header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"

/// A line of `/proc/net/route`; addresses as the kernel prints them (little-endian hex words).
func line(
  _ interface: String, _ destination: String, _ gateway: String, flags: String = "0003", metric: Int = 0,
  _ mask: String
) -> String {
  "\(interface)\t\(destination)\t\(gateway)\t\(flags)\t0\t0\t\(metric)\t\(mask)\t0\t0\t0\n"
}

/// A finder over fixed tables and interfaces, with host names resolved from `names`.
func finder(
  ipv4: String, ipv6: String = "", interfaces: [NetworkInterface] = [], names: [String: [String]] = [:],
  resolves: Counter = Counter()
) -> RouteFinder {
  let fixed =
    interfaces.isEmpty
    ? [
      NetworkInterface(
        name: "lo", addresses: [IPAddress("127.0.0.1"), IPAddress("::1")].compactMap { $0 },
        isLoopback: true)
    ]
    : interfaces
  return RouteFinder(
    source: RouteFinder.Source(
      ipv4Table: { ipv4 }, ipv6Table: { ipv6 }, interfaces: { fixed },
      resolve: { host, _ in
        resolves.increment()
        guard let texts = names[host] else { return .failure(ResolutionFailure("could not resolve \(host)")) }
        return .success(texts.compactMap(IPAddress.init))
      }))
}

/// Default route via wwan0 (gateway 10.64.64.64), 10.0.0.0/8 via eth0.
let cellularDefault =
  header + line("wwan0", "00000000", "4040400A", metric: 700, "00000000")
  + line("eth0", "0000000A", "00000000", flags: "0001", metric: 100, "000000FF")

let fakeIPv6 = """
  20010db8000000000000000000000000 20 00000000000000000000000000000000 00 00000000000000000000000000000000 \
  00000100 00000001 00000000 00000001     wlan0
  00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 \
  00000400 00000002 00000000 00000003    wwan0
  00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 \
  00000000 00000002 00000000 80200001       lo
  fd000000000000000000000000000002 80 00000000000000000000000000000000 00 00000000000000000000000000000000 \
  00000000 00000003 00000000 80200001     eth0
  00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 \
  ffffffff 00000001 00000000 00200200       lo

  """

func address(_ text: String) throws -> IPAddress { try #require(IPAddress(text)) }

@Suite struct ClassificationTests {
  @Test func globsMatchLikeFnmatch() {
    #expect(InterfaceClassifier.matches("wwan0", pattern: "wwan*"))
    #expect(InterfaceClassifier.matches("wwan", pattern: "wwan*"))
    #expect(!InterfaceClassifier.matches("xwwan0", pattern: "wwan*"))
    #expect(InterfaceClassifier.matches("ppp1", pattern: "ppp?"))
    #expect(!InterfaceClassifier.matches("ppp10", pattern: "ppp?"))
    #expect(InterfaceClassifier.matches("eth0", pattern: "eth0"))
    #expect(!InterfaceClassifier.matches("eth01", pattern: "eth0"))
    #expect(InterfaceClassifier.matches("usb3", pattern: "usb[0-9]"))
    #expect(!InterfaceClassifier.matches("eth0", pattern: ""))
  }

  @Test func theDefaultPatternsNameModemsCellular() {
    let classifier = InterfaceClassifier(settings: settings(), environment: [:])
    for name in ["wwan0", "ppp0", "rmnet_data0", "wwp0s20f0u6"] { #expect(classifier.classify(name).cellular) }
    for name in ["eth0", "wlan0", "lo", "enp3s0"] { #expect(classifier.classify(name) == InterfaceClass()) }
  }

  @Test func cellularCountsAsExpensive() {
    let classifier = InterfaceClassifier(
      settings: settings(expensiveInterfaces: ["tether*"], constrainedInterfaces: ["wwan1"]), environment: [:])
    #expect(classifier.classify("wwan0") == InterfaceClass(cellular: true, expensive: true, constrained: false))
    #expect(classifier.classify("wwan1") == InterfaceClass(cellular: true, expensive: true, constrained: true))
    #expect(classifier.classify("tether0") == InterfaceClass(cellular: false, expensive: true, constrained: false))
    #expect(InterfaceClass(cellular: true).expensive)
  }

  @Test func environmentPatternsAddToTheManifests() {
    let environment = [
      "BATCHDL_CELLULAR_INTERFACES": "lo, usb* ,,",
      "BATCHDL_EXPENSIVE_INTERFACES": "eth1",
      "BATCHDL_CONSTRAINED_INTERFACES": "wlan*",
    ]
    let classifier = InterfaceClassifier(settings: settings(), environment: environment)
    #expect(classifier.cellularPatterns == ["wwan*", "ppp*", "rmnet*", "wwp*", "lo", "usb*"])
    #expect(classifier.classify("lo").cellular)
    #expect(classifier.classify("usb0").cellular)
    #expect(classifier.classify("wwan0").cellular)
    #expect(classifier.classify("eth1") == InterfaceClass(expensive: true))
    #expect(classifier.classify("wlan0") == InterfaceClass(constrained: true))
    #expect(InterfaceClassifier(settings: settings(), environment: [:]).classify("lo") == InterfaceClass())
    let policy = NetworkPolicy(routes: finder(ipv4: ""), environment: environment)
    #expect(policy.classifier(for: settings()) == classifier)
  }

  @Test func theMachineListsLoopbackWithItsAddress() throws {
    let interfaces = NetworkInterface.current()
    let loopback = try #require(interfaces.first { $0.isLoopback })
    #expect(loopback.name == "lo")
    #expect(loopback.addresses.contains(try address("127.0.0.1")))
    #expect(interfaces.allSatisfy { !$0.addresses.isEmpty })
  }
}

@Suite struct RouteTests {
  @Test func addressesParseAndPrint() throws {
    #expect(try address("192.0.2.1").bytes == [192, 0, 2, 1])
    #expect(try address("[2001:db8::1]").description == "2001:db8::1")
    #expect(try address("fe80::1%eth0").description == "fe80::1")
    #expect(try address("::ffff:10.1.2.3").unmapped == address("10.1.2.3"))
    #expect(IPAddress("example.org") == nil)
    #expect(try address("127.8.9.10").isLoopback)
    #expect(try address("::1").isLoopback)
    #expect(try !address("::2").isLoopback)
    #expect(try address("10.255.1.1").hasPrefix(address("10.0.0.0"), length: 8))
    #expect(try !address("11.0.0.1").hasPrefix(address("10.0.0.0"), length: 8))
    #expect(try address("192.168.1.130").hasPrefix(address("192.168.1.128"), length: 25))
    #expect(try !address("192.168.1.127").hasPrefix(address("192.168.1.128"), length: 25))
  }

  @Test func theIPv4TableParsesLittleEndianHex() throws {
    let routes = RoutingTable.parseIPv4(cellularDefault)
    #expect(routes.count == 2)
    #expect(
      routes[0]
        == Route(
          interface: "wwan0", destination: try address("0.0.0.0"), prefixLength: 0, metric: 700,
          gateway: try address("10.64.64.64")))
    #expect(routes[1] == Route(interface: "eth0", destination: try address("10.0.0.0"), prefixLength: 8, metric: 100))
  }

  @Test func theLongestPrefixWins() throws {
    let table = RoutingTable(ipv4: cellularDefault, ipv6: "", interfaces: [])
    #expect(try table.routes(to: address("10.1.2.3")).map(\.interface) == ["eth0", "wwan0"])
    #expect(try table.routes(to: address("8.8.8.8")).map(\.interface) == ["wwan0"])
    #expect(try table.routes(to: address("::ffff:10.1.2.3")).first?.interface == "eth0")
  }

  @Test func theMetricBreaksTiesAndDownOrRejectRoutesDoNotCount() throws {
    let text =
      header + line("wwan0", "00000000", "4040400A", metric: 700, "00000000")
      + line("wlan0", "00000000", "0101A8C0", metric: 600, "00000000")
      + line("eth9", "00000000", "00000000", flags: "0000", "00000000")
      + line("eth8", "0000B85D", "00000000", flags: "0201", "0000FFFF")
    let table = RoutingTable(ipv4: text, ipv6: "", interfaces: [])
    #expect(try table.routes(to: address("93.184.216.34")).map(\.interface) == ["wlan0", "wwan0"])
  }

  @Test func theIPv6TableParses() throws {
    let table = RoutingTable(ipv4: "", ipv6: fakeIPv6, interfaces: [])
    #expect(table.routes.count == 4)
    #expect(try table.routes(to: address("2001:db8::5")).map(\.interface) == ["wlan0", "wwan0"])
    #expect(try table.routes(to: address("2606:4700::1111")).map(\.interface) == ["wwan0"])
    #expect(try table.routes(to: address("2606:4700::1111")).first?.gateway == address("fe80::1"))
    // The host's own addresses, from the local table, go through loopback.
    #expect(try table.routes(to: address("fd00::2")).map(\.interface) == ["lo"])
    #expect(try table.routes(to: address("::1")).map(\.interface) == ["lo"])
    // IPv4 has no route here at all.
    #expect(try table.routes(to: address("192.0.2.1")).isEmpty)
  }

  @Test func ownAndLoopbackAddressesGoThroughLoopback() throws {
    let interfaces = [
      NetworkInterface(name: "lo", addresses: [try address("127.0.0.1")], isLoopback: true),
      NetworkInterface(name: "eth0", addresses: [try address("10.0.0.7")]),
    ]
    let table = RoutingTable(ipv4: cellularDefault, ipv6: "", interfaces: interfaces)
    #expect(try table.routes(to: address("127.0.0.1")).map(\.interface) == ["lo"])
    #expect(try table.routes(to: address("127.3.2.1")).map(\.interface) == ["lo"])
    #expect(try table.routes(to: address("10.0.0.7")).map(\.interface) == ["lo"])
    #expect(try table.routes(to: address("10.0.0.8")).map(\.interface) == ["eth0", "wwan0"])
  }

  @Test func onThisMachineLoopbackGoesThroughLo() throws {
    let routes = RouteFinder()
    #expect(try routes.routes(to: address("127.0.0.1")).first?.interface == "lo")
    #expect(try routes.routes(to: address("::1")).first?.interface == "lo")
    let lookup = routes.lookup(host: "127.0.0.1", port: 80)
    #expect(lookup.failure == nil)
    #expect(lookup.addresses.map { $0.routes.first?.interface } == ["lo"])
  }

  @Test func theSystemResolverReadsLiteralsAndFailsOnInvalidNames() throws {
    #expect(try RouteFinder.resolve("127.0.0.1", port: 443).get() == [address("127.0.0.1")])
    guard case .failure(let failure) = RouteFinder.resolve("nothing-here.invalid", port: 443) else {
      Issue.record("a name under .invalid resolved")
      return
    }
    #expect(failure.message.hasPrefix("could not resolve nothing-here.invalid: "))
  }

  @Test func lookupsAreCachedPerHost() {
    let resolves = Counter()
    let reads = Counter()
    let routes = RouteFinder(
      source: RouteFinder.Source(
        ipv4Table: {
          reads.increment()
          return cellularDefault
        }, ipv6Table: { "" }, interfaces: { [] },
        resolve: { _, _ in
          resolves.increment()
          return .success([IPAddress("10.1.2.3")].compactMap { $0 })
        }))
    for _ in 0..<100 {
      #expect(routes.lookup(host: "files.example", port: 443).addresses.first?.routes.first?.interface == "eth0")
      _ = routes.lookup(host: "FILES.example", port: 80)
    }
    #expect(resolves.value == 1)
    #expect(reads.value == 1)
    _ = routes.lookup(host: "other.example", port: 443)
    #expect(resolves.value == 2)
    routes.invalidate()
    _ = routes.lookup(host: "files.example", port: 443)
    #expect(resolves.value == 3)
    #expect(reads.value == 2)
  }

  @Test func anExpiredCacheReadsAgain() {
    let resolves = Counter()
    let routes = RouteFinder(
      source: RouteFinder.Source(
        ipv4Table: { cellularDefault }, ipv6Table: { "" }, interfaces: { [] },
        resolve: { _, _ in
          resolves.increment()
          return .success([IPAddress("10.1.2.3")].compactMap { $0 })
        }),
      cacheLifetime: .zero)
    _ = routes.lookup(host: "files.example", port: 443)
    _ = routes.lookup(host: "files.example", port: 443)
    #expect(resolves.value == 2)
  }
}

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

@Suite struct DiscretionaryTests {
  let utc = TimeZone(identifier: "UTC") ?? .current

  func at(_ hour: Int, _ minute: Int) -> Date {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = utc
    let components = DateComponents(year: 2024, month: 3, day: 9, hour: hour, minute: minute)
    return calendar.date(from: components) ?? Date(timeIntervalSince1970: 0)
  }

  func policy() -> NetworkPolicy {
    let routes = finder(ipv4: cellularDefault, names: ["example.org": ["8.8.8.8"], "intranet.example": ["10.1.2.3"]])
    return NetworkPolicy(routes: routes, environment: [:], timeZone: utc)
  }

  @Test func insideTheWindowItRuns() throws {
    let night = try #require(TimeWindow.parse("01:00-05:00"))
    let session = settings(discretionary: true, window: night)
    #expect(policy().decide(host: "example.org", port: 443, settings: session, now: at(3, 30)) == .allowed(bindTo: nil))
    #expect(policy().decide(host: "example.org", port: 443, settings: session, now: at(1, 0)) == .allowed(bindTo: nil))
  }

  @Test func outsideTheWindowItIsDeferred() throws {
    let night = try #require(TimeWindow.parse("01:00-05:00"))
    let session = settings(waits: true, discretionary: true, window: night)
    #expect(
      policy().decide(host: "example.org", port: 443, settings: session, now: at(14, 5))
        == .defer(reason: "the session is discretionary and it is 14:05 local time, outside network.window 01:00-05:00")
    )
    #expect(policy().decide(host: "example.org", port: 443, settings: session, now: at(5, 0)).reason != nil)
  }

  @Test func aWindowAcrossMidnight() throws {
    let late = try #require(TimeWindow.parse("23:00-02:00"))
    let session = settings(discretionary: true, window: late)
    for (hour, minute) in [(23, 0), (23, 59), (0, 0), (1, 59)] {
      #expect(
        policy().decide(host: "example.org", port: 443, settings: session, now: at(hour, minute))
          == .allowed(bindTo: nil))
    }
    for (hour, minute) in [(2, 0), (12, 0), (22, 59)] {
      guard case .defer = policy().decide(host: "example.org", port: 443, settings: session, now: at(hour, minute))
      else {
        Issue.record("\(hour):\(minute) is outside 23:00-02:00")
        continue
      }
    }
  }

  @Test func theWindowIsReadInLocalTime() throws {
    let policy = NetworkPolicy(routes: finder(ipv4: cellularDefault), environment: [:])
    let now = Date()
    let parts = Calendar.current.dateComponents([.hour, .minute], from: now)
    #expect(policy.minuteOfDay(now) == (parts.hour ?? 0) * 60 + (parts.minute ?? 0))
  }

  @Test func aDiscretionaryTaskDefersRatherThanWaitOnADisallowedRoute() throws {
    let night = try #require(TimeWindow.parse("01:00-05:00"))
    let session = settings(cellular: false, waits: true, discretionary: true, window: night)
    let decision = policy().decide(host: "example.org", port: 443, settings: session, now: at(2, 0))
    guard case .defer(let reason) = decision else {
      Issue.record("expected defer, got \(decision)")
      return
    }
    #expect(reason.hasPrefix("the only route to example.org is through wwan0, a cellular interface"))
    #expect(reason.contains("discretionary"))
    #expect(
      policy().decide(host: "intranet.example", port: 443, settings: session, now: at(2, 0)) == .allowed(bindTo: nil))
  }

  @Test func withoutAWindowADiscretionaryTaskRunsAnyTime() {
    let session = settings(discretionary: true)
    #expect(policy().decide(host: "example.org", port: 443, settings: session, now: at(13, 0)) == .allowed(bindTo: nil))
  }
}
