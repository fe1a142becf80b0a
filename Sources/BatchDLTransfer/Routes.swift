import BatchDLSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An IPv4 or IPv6 address, in network byte order.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
  /// The address bytes: 4 for IPv4, 16 for IPv6.
  public let bytes: [UInt8]

  /// An address from its 4 or 16 bytes; nil for any other length.
  public init?(bytes: [UInt8]) {
    guard bytes.count == 4 || bytes.count == 16 else { return nil }
    self.bytes = bytes
  }

  /// Parses an IP literal: `192.0.2.1`, `2001:db8::1`, `[2001:db8::1]` or `fe80::1%eth0` (the zone is dropped).
  public init?(_ text: String) {
    var literal = Substring(text)
    if literal.hasPrefix("["), literal.hasSuffix("]") { literal = literal.dropFirst().dropLast() }
    if let zone = literal.firstIndex(of: "%") { literal = literal[..<zone] }
    let string = String(literal)
    var v4 = in_addr()
    if inet_pton(AF_INET, string, &v4) == 1 {
      self.bytes = withUnsafeBytes(of: &v4) { Array($0) }
      return
    }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, string, &v6) == 1 {
      self.bytes = withUnsafeBytes(of: &v6) { Array($0) }
      return
    }
    return nil
  }

  /// The address in a socket address, for `AF_INET` and `AF_INET6`; nil for other families.
  package init?(socketAddress: UnsafePointer<sockaddr>) {
    switch Int32(socketAddress.pointee.sa_family) {
    case AF_INET:
      let address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
      self.bytes = withUnsafeBytes(of: address) { Array($0) }
    case AF_INET6:
      let address = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
      self.bytes = withUnsafeBytes(of: address) { Array($0) }
    default:
      return nil
    }
  }

  public var isIPv4: Bool { bytes.count == 4 }

  /// `127.0.0.0/8` or `::1`.
  public var isLoopback: Bool {
    isIPv4 ? bytes[0] == 127 : bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
  }

  /// `0.0.0.0` or `::`, which Linux delivers to this host.
  public var isUnspecified: Bool { bytes.allSatisfy { $0 == 0 } }

  /// The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`); otherwise the address itself.
  public var unmapped: IPAddress {
    guard !isIPv4, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff,
      let inner = IPAddress(bytes: Array(bytes[12..<16]))
    else { return self }
    return inner
  }

  /// Whether the first `length` bits equal those of `prefix` (of the same family).
  public func hasPrefix(_ prefix: IPAddress, length: Int) -> Bool {
    guard prefix.bytes.count == bytes.count, length >= 0, length <= bytes.count * 8 else { return false }
    let whole = length / 8
    for index in 0..<whole where bytes[index] != prefix.bytes[index] { return false }
    let rest = length % 8
    guard rest > 0 else { return true }
    let mask = UInt8(truncatingIfNeeded: 0xff << (8 - rest))
    return bytes[whole] & mask == prefix.bytes[whole] & mask
  }

  public var description: String {
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    let family = isIPv4 ? AF_INET : AF_INET6
    let written = bytes.withUnsafeBytes { raw in
      buffer.withUnsafeMutableBufferPointer { out in
        inet_ntop(family, raw.baseAddress, out.baseAddress, socklen_t(out.count - 1)) != nil
      }
    }
    guard written else { return bytes.map(String.init).joined(separator: ".") }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}

/// A network interface that is up, with its addresses.
public struct NetworkInterface: Hashable, Sendable {
  public var name: String
  public var addresses: [IPAddress]
  /// The loopback interface (`lo`), which carries traffic to this host's own addresses.
  public var isLoopback: Bool

  public init(name: String, addresses: [IPAddress], isLoopback: Bool = false) {
    self.name = name
    self.addresses = addresses
    self.isLoopback = isLoopback
  }

  /// The machine's interfaces that are up and have at least one IPv4 or IPv6 address (`getifaddrs`), in the
  /// order the system lists them.
  public static func current() -> [NetworkInterface] {
    var first: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&first) == 0 else { return [] }
    defer { freeifaddrs(first) }
    var result: [NetworkInterface] = []
    var cursor = first
    while let entry = cursor {
      cursor = entry.pointee.ifa_next
      let flags = UInt32(truncatingIfNeeded: entry.pointee.ifa_flags)
      guard flags & UInt32(truncatingIfNeeded: IFF_UP) != 0, let name = entry.pointee.ifa_name,
        let socketAddress = entry.pointee.ifa_addr, let address = IPAddress(socketAddress: socketAddress)
      else { continue }
      let interfaceName = String(cString: name)
      if let index = result.firstIndex(where: { $0.name == interfaceName }) {
        if !result[index].addresses.contains(address) { result[index].addresses.append(address) }
      } else {
        let loopback = flags & UInt32(truncatingIfNeeded: IFF_LOOPBACK) != 0
        result.append(NetworkInterface(name: interfaceName, addresses: [address], isLoopback: loopback))
      }
    }
    return result
  }
}

/// One entry of the kernel's routing table: traffic to `destination/prefixLength` leaves through `interface`.
public struct Route: Hashable, Sendable, CustomStringConvertible {
  public var interface: String
  public var destination: IPAddress
  public var prefixLength: Int
  /// Lower is preferred among routes of the same prefix length.
  public var metric: Int
  public var gateway: IPAddress?
  /// Delivery to this host itself (its own addresses, `127.0.0.0/8`, `::1`), carried by the loopback interface.
  public var isLocal: Bool

  public init(
    interface: String, destination: IPAddress, prefixLength: Int, metric: Int = 0, gateway: IPAddress? = nil,
    isLocal: Bool = false
  ) {
    self.interface = interface
    self.destination = destination
    self.prefixLength = prefixLength
    self.metric = metric
    self.gateway = gateway
    self.isLocal = isLocal
  }

  /// Whether this route covers `address`.
  public func matches(_ address: IPAddress) -> Bool { address.hasPrefix(destination, length: prefixLength) }

  public var description: String {
    var text = prefixLength == 0 ? "default" : "\(destination)/\(prefixLength)"
    if isLocal { text = "local " + text }
    if let gateway { text += " via \(gateway)" }
    return text + " dev \(interface) metric \(metric)"
  }
}

/// The kernel's routing tables as `/proc/net/route` and `/proc/net/ipv6_route` show them, with the machine's
/// interfaces: which interface would carry traffic to an address.
public struct RoutingTable: Hashable, Sendable {
  public var routes: [Route]
  public var interfaces: [NetworkInterface]

  public init(routes: [Route], interfaces: [NetworkInterface]) {
    self.routes = routes
    self.interfaces = interfaces
  }

  /// A table from the text of `/proc/net/route` and `/proc/net/ipv6_route`.
  public init(ipv4: String, ipv6: String, interfaces: [NetworkInterface]) {
    self.init(routes: Self.parseIPv4(ipv4) + Self.parseIPv6(ipv6), interfaces: interfaces)
  }

  private static let routeUp: UInt32 = 0x0001
  private static let routeReject: UInt32 = 0x0200
  private static let routeAnycast: UInt32 = 0x0010_0000
  private static let routeLocal: UInt32 = 0x8000_0000

  /// The usable routes of `/proc/net/route`: tab-separated `Iface Destination Gateway Flags RefCnt Use Metric
  /// Mask ...`, addresses as the hex of a host-order 32-bit word (little-endian on x86), metric in decimal.
  /// Routes that are not up, and reject (unreachable) routes, are left out.
  public static func parseIPv4(_ text: String) -> [Route] {
    var routes: [Route] = []
    for line in text.split(whereSeparator: \.isNewline) {
      let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard fields.count >= 8, fields[0] != "Iface", let destination = ipv4(fields[1]),
        let gateway = ipv4(fields[2]), let flags = UInt32(fields[3], radix: 16), let metric = Int(fields[6]),
        let maskWord = UInt32(fields[7], radix: 16)
      else { continue }
      guard flags & routeUp != 0, flags & routeReject == 0 else { continue }
      let length = maskWord.nonzeroBitCount  // masks are contiguous: the bit count is the prefix length
      routes.append(
        Route(
          interface: String(fields[0]), destination: destination, prefixLength: length, metric: metric,
          gateway: gateway.isUnspecified ? nil : gateway))
    }
    return routes
  }

  /// The usable routes of `/proc/net/ipv6_route`: space-separated `destination prefix-length source
  /// source-length next-hop metric refcount use flags interface`, all hex. Local and anycast entries (this host's
  /// own addresses) become local routes; routes that are not up, and reject routes, are left out.
  public static func parseIPv6(_ text: String) -> [Route] {
    var routes: [Route] = []
    for line in text.split(whereSeparator: \.isNewline) {
      let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard fields.count >= 10, let destination = ipv6(fields[0]), let length = Int(fields[1], radix: 16),
        (0...128).contains(length), let nextHop = ipv6(fields[4]), let metric = UInt32(fields[5], radix: 16),
        let flags = UInt32(fields[8], radix: 16)
      else { continue }
      guard flags & routeUp != 0, flags & routeReject == 0 else { continue }
      routes.append(
        Route(
          interface: String(fields[9]), destination: destination, prefixLength: length, metric: Int(metric),
          gateway: nextHop.isUnspecified ? nil : nextHop, isLocal: flags & (routeLocal | routeAnycast) != 0))
    }
    return routes
  }

  private static func ipv4(_ field: Substring) -> IPAddress? {
    guard field.count == 8, let word = UInt32(field, radix: 16) else { return nil }
    // The kernel prints the network-order address as a host integer: its bytes in memory are the address.
    return IPAddress(bytes: withUnsafeBytes(of: word) { Array($0) })
  }

  private static func ipv6(_ field: Substring) -> IPAddress? {
    guard field.count == 32 else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(16)
    var index = field.startIndex
    while index < field.endIndex {
      let next = field.index(index, offsetBy: 2)
      guard let byte = UInt8(field[index..<next], radix: 16) else { return nil }
      bytes.append(byte)
      index = next
    }
    return IPAddress(bytes: bytes)
  }

  /// The loopback interface's name: the interface flagged loopback, else `lo`.
  public var loopbackInterface: String { interfaces.first { $0.isLoopback }?.name ?? "lo" }

  /// Whether `address` belongs to this host: loopback, unspecified, an interface's own address, or (IPv6) an
  /// entry of the `local` table.
  public func isLocal(_ address: IPAddress) -> Bool {
    let address = address.unmapped
    if address.isLoopback || address.isUnspecified { return true }
    if interfaces.contains(where: { $0.addresses.contains(address) }) { return true }
    return routes.contains { $0.isLocal && $0.matches(address) }
  }

  /// The routes that could carry traffic to `address`, best first: the first is the one the kernel picks
  /// (longest prefix, then lowest metric, then table order). Addresses of this host route only through the
  /// loopback interface, as the kernel's `local` table (consulted before `main`) sends them there.
  public func routes(to address: IPAddress) -> [Route] {
    let address = address.unmapped
    if isLocal(address) {
      return [
        Route(
          interface: loopbackInterface, destination: address, prefixLength: address.bytes.count * 8, isLocal: true)
      ]
    }
    let matching = routes.enumerated().filter { !$0.element.isLocal && $0.element.matches(address) }
    return matching.sorted { left, right in
      if left.element.prefixLength != right.element.prefixLength {
        return left.element.prefixLength > right.element.prefixLength
      }
      if left.element.metric != right.element.metric { return left.element.metric < right.element.metric }
      return left.offset < right.offset
    }.map(\.element)
  }
}

/// Why a host name did not resolve.
public struct ResolutionFailure: Error, Hashable, Sendable, CustomStringConvertible {
  public var message: String

  public init(_ message: String) { self.message = message }

  public var description: String { message }
}

/// One address of a host, with the routes that could carry traffic to it, best first.
public struct AddressRoutes: Hashable, Sendable {
  public var address: IPAddress
  public var routes: [Route]

  public init(address: IPAddress, routes: [Route]) {
    self.address = address
    self.routes = routes
  }
}

/// What `RouteFinder` found for one host.
public struct RouteLookup: Hashable, Sendable {
  public var host: String
  /// Each address the host resolved to, in resolver order, with its routes (empty when none covers it).
  public var addresses: [AddressRoutes]
  /// Why the host did not resolve; nil when it did.
  public var failure: ResolutionFailure?

  public init(host: String, addresses: [AddressRoutes], failure: ResolutionFailure? = nil) {
    self.host = host
    self.addresses = addresses
    self.failure = failure
  }
}

/// Resolves host names and finds the interfaces the kernel would send their traffic through.
///
/// The routing table, the interface list and each host's lookup are cached for `cacheLifetime`, so asking per
/// request costs one `getaddrinfo` per host per lifetime. Safe to share between threads.
public final class RouteFinder: @unchecked Sendable {
  /// Where routes, interfaces and addresses come from; tests replace it with fixed text.
  public struct Source: Sendable {
    /// The text of `/proc/net/route`.
    public var ipv4Table: @Sendable () -> String
    /// The text of `/proc/net/ipv6_route`.
    public var ipv6Table: @Sendable () -> String
    /// The interfaces that are up, with their addresses.
    public var interfaces: @Sendable () -> [NetworkInterface]
    /// The addresses of a host name (or IP literal) and port.
    public var resolve: @Sendable (_ host: String, _ port: Int) -> Result<[IPAddress], ResolutionFailure>

    public init(
      ipv4Table: @escaping @Sendable () -> String,
      ipv6Table: @escaping @Sendable () -> String,
      interfaces: @escaping @Sendable () -> [NetworkInterface],
      resolve: @escaping @Sendable (_ host: String, _ port: Int) -> Result<[IPAddress], ResolutionFailure> =
        RouteFinder.resolve
    ) {
      self.ipv4Table = ipv4Table
      self.ipv6Table = ipv6Table
      self.interfaces = interfaces
      self.resolve = resolve
    }

    /// This machine: `/proc/net/route`, `/proc/net/ipv6_route`, `getifaddrs` and `getaddrinfo`.
    public static var system: Source {
      Source(
        ipv4Table: { RouteFinder.readText("/proc/net/route") },
        ipv6Table: { RouteFinder.readText("/proc/net/ipv6_route") },
        interfaces: { NetworkInterface.current() })
    }
  }

  public let source: Source
  public let cacheLifetime: Duration
  /// The most hosts kept; past that the cache starts over.
  package static let maximumCachedHosts = 4096

  private let lock = NSLock()
  private var table: RoutingTable?
  private var tableTime: ContinuousClock.Instant?
  /// Counts table reads, so a lookup made with an older table is not cached.
  private var generation = 0
  private var hosts: [String: RouteLookup] = [:]

  public init(source: Source = .system, cacheLifetime: Duration = .seconds(10)) {
    self.source = source
    self.cacheLifetime = cacheLifetime
  }

  /// Forgets the cached table and lookups: the next question reads and resolves again.
  public func invalidate() {
    lock.lock()
    defer { lock.unlock() }
    table = nil
    tableTime = nil
    generation += 1
    hosts = [:]
  }

  /// The current routing table (cached).
  public func routingTable() -> RoutingTable {
    lock.lock()
    defer { lock.unlock() }
    return freshTable()
  }

  /// Must hold `lock`. Rereads the table when older than `cacheLifetime`, dropping host lookups made with the
  /// old one.
  private func freshTable() -> RoutingTable {
    let now = ContinuousClock.now
    if let table, let tableTime, now - tableTime < cacheLifetime { return table }
    let fresh = RoutingTable(ipv4: source.ipv4Table(), ipv6: source.ipv6Table(), interfaces: source.interfaces())
    table = fresh
    tableTime = now
    generation += 1
    hosts = [:]
    return fresh
  }

  /// The routes to `address`, best first.
  public func routes(to address: IPAddress) -> [Route] { routingTable().routes(to: address) }

  /// Resolves `host` (a name or an IP literal, brackets allowed) and finds the routes to each address; cached per
  /// host.
  public func lookup(host: String, port: Int) -> RouteLookup {
    let key = host.lowercased()
    lock.lock()
    let table = freshTable()
    let tableGeneration = generation
    let cached = hosts[key]
    lock.unlock()
    if let cached { return cached }

    // Resolve outside the lock: a slow name must not hold up other hosts.
    let lookup: RouteLookup
    let resolved = IPAddress(host).map { Result<[IPAddress], ResolutionFailure>.success([$0]) }
    switch resolved ?? source.resolve(host, port) {
    case .success(let addresses):
      lookup = RouteLookup(
        host: host, addresses: addresses.map { AddressRoutes(address: $0, routes: table.routes(to: $0)) })
    case .failure(let failure):
      lookup = RouteLookup(host: host, addresses: [], failure: failure)
    }

    lock.lock()
    defer { lock.unlock() }
    if hosts.count >= Self.maximumCachedHosts { hosts = [:] }
    if generation == tableGeneration { hosts[key] = lookup }
    return lookup
  }

  /// `getaddrinfo` for TCP, IPv4 and IPv6, addresses in the resolver's order without repeats.
  public static func resolve(_ host: String, port: Int) -> Result<[IPAddress], ResolutionFailure> {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    #if canImport(Glibc)
      hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    #else
      hints.ai_socktype = SOCK_STREAM
    #endif
    var first: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host, String(port), &hints, &first)
    guard status == 0 else {
      let reason = status == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
      return .failure(ResolutionFailure("could not resolve \(host): \(reason)"))
    }
    defer { freeaddrinfo(first) }
    var addresses: [IPAddress] = []
    var cursor = first
    while let entry = cursor {
      cursor = entry.pointee.ai_next
      if let socketAddress = entry.pointee.ai_addr, let address = IPAddress(socketAddress: socketAddress),
        !addresses.contains(address)
      {
        addresses.append(address)
      }
    }
    guard !addresses.isEmpty else { return .failure(ResolutionFailure("could not resolve \(host): no addresses")) }
    return .success(addresses)
  }

  /// A `/proc` file's text; empty when it cannot be read (no IPv6, not Linux).
  package static func readText(_ path: String) -> String {
    guard let bytes = try? FileAccess.readAll(path) else { return "" }
    return String(decoding: bytes, as: UTF8.self)
  }
}
