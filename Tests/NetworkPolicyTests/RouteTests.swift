import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLTransfer

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
