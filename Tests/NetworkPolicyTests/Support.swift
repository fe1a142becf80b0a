import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLTransfer

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
