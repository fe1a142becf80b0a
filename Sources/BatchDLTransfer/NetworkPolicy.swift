import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What using a network interface costs, by the session's patterns.
public struct InterfaceClass: Hashable, Sendable, CustomStringConvertible {
  public var cellular: Bool
  /// Always true for a cellular interface.
  public var expensive: Bool
  public var constrained: Bool

  /// A class; `expensive` is forced on for a cellular interface.
  public init(cellular: Bool = false, expensive: Bool = false, constrained: Bool = false) {
    self.cellular = cellular
    self.expensive = expensive || cellular
    self.constrained = constrained
  }

  public var description: String {
    let names = [(cellular, "cellular"), (expensive, "expensive"), (constrained, "constrained")]
      .filter(\.0).map(\.1)
    return names.isEmpty ? "unrestricted" : names.joined(separator: ", ")
  }
}

/// Names interfaces cellular, expensive or constrained by glob patterns (`*`, `?`, `[...]`, as `fnmatch`).
///
/// The patterns are the session's `network.cellular_interfaces`, `expensive_interfaces` and
/// `constrained_interfaces`, plus any listed in the environment variables `BATCHDL_CELLULAR_INTERFACES`,
/// `BATCHDL_EXPENSIVE_INTERFACES` and `BATCHDL_CONSTRAINED_INTERFACES` (comma-separated). The variables let a
/// test play a metered link without a modem: `BATCHDL_CELLULAR_INTERFACES=lo` makes traffic to a local test
/// server cellular.
public struct InterfaceClassifier: Hashable, Sendable {
  public static let cellularVariable = "BATCHDL_CELLULAR_INTERFACES"
  public static let expensiveVariable = "BATCHDL_EXPENSIVE_INTERFACES"
  public static let constrainedVariable = "BATCHDL_CONSTRAINED_INTERFACES"

  public var cellularPatterns: [String]
  public var expensivePatterns: [String]
  public var constrainedPatterns: [String]

  public init(cellular: [String] = [], expensive: [String] = [], constrained: [String] = []) {
    cellularPatterns = cellular
    expensivePatterns = expensive
    constrainedPatterns = constrained
  }

  /// The patterns of the environment variables alone.
  public init(environment: [String: String]) {
    self.init(
      cellular: Self.patterns(environment[Self.cellularVariable]),
      expensive: Self.patterns(environment[Self.expensiveVariable]),
      constrained: Self.patterns(environment[Self.constrainedVariable]))
  }

  /// The session's patterns with the environment's added.
  public init(settings: NetworkSettings, environment: [String: String]) {
    self = InterfaceClassifier(
      cellular: settings.cellularInterfaces, expensive: settings.expensiveInterfaces,
      constrained: settings.constrainedInterfaces
    ).adding(InterfaceClassifier(environment: environment))
  }

  /// These patterns followed by `other`'s.
  public func adding(_ other: InterfaceClassifier) -> InterfaceClassifier {
    InterfaceClassifier(
      cellular: cellularPatterns + other.cellularPatterns, expensive: expensivePatterns + other.expensivePatterns,
      constrained: constrainedPatterns + other.constrainedPatterns)
  }

  /// The class of the interface named `interface`.
  public func classify(_ interface: String) -> InterfaceClass {
    InterfaceClass(
      cellular: cellularPatterns.contains { Self.matches(interface, pattern: $0) },
      expensive: expensivePatterns.contains { Self.matches(interface, pattern: $0) },
      constrained: constrainedPatterns.contains { Self.matches(interface, pattern: $0) })
  }

  /// Whether `name` matches the glob `pattern` (`fnmatch` without flags); an empty pattern matches nothing.
  public static func matches(_ name: String, pattern: String) -> Bool {
    !pattern.isEmpty && fnmatch(pattern, name, 0) == 0
  }

  /// The patterns of a comma-separated list, spaces trimmed, empty items dropped.
  public static func patterns(_ value: String?) -> [String] {
    guard let value else { return [] }
    return value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
  }
}

/// Whether, and how, one request may go out now.
public enum PolicyDecision: Hashable, Sendable {
  /// Send it. `bindTo` names the interface to pin the connection to (libcurl's `CURLOPT_INTERFACE` as
  /// `"if!NAME"`, see `curlInterface`) when the kernel's own choice is disallowed; nil when its choice is fine.
  case allowed(bindTo: String?)
  /// No allowed route now, and the session waits for connectivity: ask again later.
  case wait(reason: String)
  /// Not now: only disallowed interfaces would carry it, or a discretionary session is outside its window.
  case `defer`(reason: String)
  /// The name does not resolve or nothing routes to it: a connect failure.
  case unreachable(reason: String)

  /// The `CURLOPT_INTERFACE` value for an allowed request pinned to an interface (`if!wlan0`); nil otherwise.
  public var curlInterface: String? {
    if case .allowed(let bindTo?) = self { return "if!" + bindTo }
    return nil
  }

  /// The user-facing explanation of a wait, deferral or failure; nil when allowed.
  public var reason: String? {
    switch self {
    case .allowed: return nil
    case .wait(let reason), .defer(let reason), .unreachable(let reason): return reason
    }
  }
}

/// The session's network rules for one request, like `URLSessionConfiguration`'s `allowsCellularAccess`,
/// `allowsExpensiveNetworkAccess`, `allowsConstrainedNetworkAccess`, `waitsForConnectivity` and
/// `isDiscretionary`, for Linux: interfaces are classified by name (`InterfaceClassifier`), and the interface a
/// request would use is the one the kernel's routing table picks for the host's addresses (`RouteFinder`).
public struct NetworkPolicy: Sendable {
  public let routes: RouteFinder
  /// Patterns from `BATCHDL_*_INTERFACES`, added to every session's.
  public let environmentPatterns: InterfaceClassifier
  /// The zone `network.window` is read in.
  public let timeZone: TimeZone
  private let calendar: Calendar

  /// A policy reading routes from `routes` and override patterns from `environment`.
  public init(
    routes: RouteFinder = RouteFinder(), environment: [String: String] = ProcessInfo.processInfo.environment,
    timeZone: TimeZone = .current
  ) {
    self.routes = routes
    self.environmentPatterns = InterfaceClassifier(environment: environment)
    self.timeZone = timeZone
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = timeZone
    self.calendar = calendar
  }

  /// The session's patterns with the environment's.
  public func classifier(for settings: NetworkSettings) -> InterfaceClassifier {
    InterfaceClassifier(
      cellular: settings.cellularInterfaces, expensive: settings.expensiveInterfaces,
      constrained: settings.constrainedInterfaces
    ).adding(environmentPatterns)
  }

  /// Minutes after local midnight at `date`.
  public func minuteOfDay(_ date: Date) -> Int {
    let parts = calendar.dateComponents([.hour, .minute], from: date)
    return (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
  }

  /// Whether `url` may be fetched now under `settings`: `decide(host:port:settings:now:)` for its host and port.
  /// A URL without a host (or one that does not parse) is allowed: there is no route to judge, and libcurl
  /// reports its own error.
  public func decide(url: String, settings: NetworkSettings, now: Date) -> PolicyDecision {
    guard let parts = URLComponents(string: url), let host = parts.host, !host.isEmpty else {
      return .allowed(bindTo: nil)
    }
    let defaultPorts = ["http": 80, "https": 443, "ftp": 21, "ftps": 990]
    let port = parts.port ?? defaultPorts[parts.scheme?.lowercased() ?? ""] ?? 0
    return decide(host: host, port: port, settings: settings, now: now)
  }

  /// Whether a request to `host` (a name or IP literal) and `port` may go out at `now` under `settings`.
  ///
  /// In order: a discretionary session outside `network.window` (local time) is deferred. A session that allows
  /// every interface and does not wait is allowed without a lookup (libcurl resolves and reports failures itself).
  /// Otherwise the host is resolved and each address routed: a name that does not resolve, or that nothing
  /// routes to, is unreachable. When the kernel's choice for every address is an allowed interface, the request is
  /// allowed as is; when another, allowed interface also has a route, it is allowed bound to that interface.
  /// Otherwise only disallowed interfaces would carry it: a discretionary session defers, one that waits for
  /// connectivity waits, and any other defers.
  ///
  /// May block on the resolver the first time a host is asked about within `routes.cacheLifetime`.
  public func decide(host: String, port: Int, settings: NetworkSettings, now: Date) -> PolicyDecision {
    var host = host
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }

    if settings.discretionary, let window = settings.window {
      let minute = minuteOfDay(now)
      if !window.contains(minute: minute) {
        return .defer(
          reason: "the session is discretionary and it is \(Self.clock(minute)) local time, outside network.window "
            + "\(window)")
      }
    }
    if settings.allowsCellular, settings.allowsExpensive, settings.allowsConstrained, !settings.waitsForConnectivity {
      return .allowed(bindTo: nil)
    }

    let lookup = routes.lookup(host: host, port: port)
    if let failure = lookup.failure { return .unreachable(reason: failure.message) }
    let routed = lookup.addresses.filter { !$0.routes.isEmpty }
    guard !routed.isEmpty else {
      let addresses = lookup.addresses.map(\.address.description).joined(separator: ", ")
      let shown = addresses.isEmpty || addresses == host ? host : "\(host) (\(addresses))"
      return .unreachable(reason: "there is no route to \(shown): no interface leads there")
    }

    let classifier = classifier(for: settings)
    var refusals: [String: String?] = [:]
    func refusal(_ interface: String) -> String? {
      if let known = refusals[interface] { return known }
      let found = Self.refusal(classifier.classify(interface), settings: settings)
      refusals[interface] = found
      return found
    }

    if routed.allSatisfy({ refusal($0.routes[0].interface) == nil }) { return .allowed(bindTo: nil) }

    // Some address would leave through a disallowed interface: pin the connection to an allowed interface with a
    // route, preferring one the kernel already picks for another address, then resolver order.
    var best: (interface: String, rank: [Int])?
    for (addressIndex, entry) in routed.enumerated() {
      guard let routeIndex = entry.routes.firstIndex(where: { refusal($0.interface) == nil }) else { continue }
      let rank = [routeIndex == 0 ? 0 : 1, addressIndex, routeIndex]
      if best.map({ rank.lexicographicallyPrecedes($0.rank) }) ?? true {
        best = (entry.routes[routeIndex].interface, rank)
      }
    }
    if let best { return .allowed(bindTo: best.interface) }

    var blocked: [String] = []
    for entry in routed {
      for route in entry.routes where !blocked.contains(route.interface) { blocked.append(route.interface) }
    }
    let because = blocked.map { "\($0), \(refusal($0) ?? "a disallowed interface")" }
    let base =
      blocked.count == 1
      ? "the only route to \(host) is through \(because[0])"
      : "every route to \(host) goes through a disallowed interface: \(because.joined(separator: "; "))"
    if settings.discretionary {
      return .defer(reason: base + "; a discretionary session sends nothing over a disallowed interface")
    }
    if settings.waitsForConnectivity {
      return .wait(reason: base + "; waiting for an allowed route (waits_for_connectivity is true)")
    }
    return .defer(reason: base)
  }

  /// Why `settings` forbid an interface of class `kind`, as the end of a sentence naming the interface (`a
  /// cellular interface, and allows_cellular is false`); nil when allowed.
  package static func refusal(_ kind: InterfaceClass, settings: NetworkSettings) -> String? {
    let cellular = kind.cellular && !settings.allowsCellular
    let expensive = kind.expensive && !settings.allowsExpensive
    let constrained = kind.constrained && !settings.allowsConstrained
    var kinds: [String] = []
    var flags: [String] = []
    if cellular {
      kinds.append("cellular")
      flags.append("allows_cellular")
    }
    // A cellular interface is expensive by definition: say so when that is the only reason.
    let expensiveByCellular = expensive && kind.cellular && !cellular
    if expensive {
      kinds.append(expensiveByCellular ? "cellular" : "expensive")
      flags.append("allows_expensive")
    }
    if constrained {
      kinds.append("constrained")
      flags.append("allows_constrained")
    }
    guard let first = kinds.first else { return nil }
    let article = first.first.map { "aeiou".contains($0) } == true ? "an" : "a"
    let noun = "\(article) \(kinds.joined(separator: " and ")) interface"
    let note = expensiveByCellular ? ", which counts as expensive," : ","
    let verb = flags.count == 1 ? "is" : "are"
    return "\(noun)\(note) and \(flags.joined(separator: " and ")) \(verb) false"
  }

  /// `HH:MM` for minutes after midnight.
  package static func clock(_ minute: Int) -> String {
    let hours = minute / 60
    let minutes = minute % 60
    return (hours < 10 ? "0\(hours)" : "\(hours)") + ":" + (minutes < 10 ? "0\(minutes)" : "\(minutes)")
  }
}
