import BatchDLSupport

#if canImport(Glibc)
  import Glibc
#endif

/// Which proxy, if any, carries a request: the one decision for every request of a session (a
/// first request, a retry, a segment, a mirror, a redirect's next hop, a document). batchdl makes
/// it, not libcurl: every transfer sets `CURLOPT_PROXY` (empty for none), so libcurl never reads
/// the environment itself, and what `plan` shows and what connections share is what is used.
public enum ProxyRoute: Sendable, Hashable {
  /// No proxy (`proxy: none`, or no proxy anywhere).
  case direct
  /// `proxy: URL` for every request but the hosts of `bypass` (`no_proxy:`).
  case manifest(ProxyEndpoint, bypass: NoProxy)
  /// The environment's variables, read when the manifest was: `http_proxy` for http URLs (the
  /// lower-case name only, as libcurl reads it), `https_proxy` (or `HTTPS_PROXY`) for https URLs,
  /// else `all_proxy` (or `ALL_PROXY`); hosts in `bypass` (`no_proxy:`, else `no_proxy` or
  /// `NO_PROXY`) go direct.
  case environment(http: ProxyEndpoint?, https: ProxyEndpoint?, all: ProxyEndpoint?, bypass: NoProxy)

  /// What carries a request to `url`.
  public enum Decision: Sendable, Equatable {
    case direct
    case via(ProxyEndpoint)
    /// The request cannot go through the proxy as asked: it fails with this message (code `url`).
    case refused(String)
  }

  /// The proxy for a request to `url` (scheme, host as written in it).
  public func decision(for url: String) -> Decision {
    // Most sessions have no proxy: their requests' URLs are not read at all.
    if case .direct = self { return .direct }
    guard let target = TargetHost(url) else { return .refused("the URL has no host") }
    let endpoint: ProxyEndpoint?
    switch self {
    case .direct: return .direct
    case .manifest(let proxy, let bypass):
      endpoint = bypass.matches(target.host) ? nil : proxy
    case .environment(let http, let https, let all, let bypass):
      guard !bypass.matches(target.host) else { return .direct }
      endpoint = (target.scheme == "https" ? https : target.scheme == "http" ? http : nil) ?? all
    }
    guard let endpoint else { return .direct }
    // A SOCKS5 request names its host in one length byte. libcurl 7.88 resolved a longer name
    // locally instead of refusing it (CVE-2023-38545); batchdl refuses it before libcurl sees it.
    if endpoint.kind == .socks5 || endpoint.kind == .socks5h, target.host.utf8.count > 255 {
      return .refused(
        "the host name is \(target.host.utf8.count) bytes long: a SOCKS5 proxy takes host names of at most 255 bytes")
    }
    return .via(endpoint)
  }

  /// The route without its credentials, and a digest of them, for a connection's identity.
  public var identity: String {
    switch self {
    case .direct: return "direct"
    case .manifest(let proxy, let bypass):
      return "proxy \(proxy.identity) bypass \(bypass.entries.joined(separator: ","))"
    case .environment(let http, let https, let all, let bypass):
      return
        "env http \(http?.identity ?? "-") https \(https?.identity ?? "-") all \(all?.identity ?? "-") bypass \(bypass.entries.joined(separator: ","))"
    }
  }

  /// The proxies the route may use, for `plan` and `validate`: where each comes from, without
  /// credentials.
  public var shown: [String] {
    switch self {
    case .direct: return []
    case .manifest(let proxy, let bypass):
      return [proxy.shown + (bypass.entries.isEmpty ? "" : " (not for \(bypass.entries.joined(separator: ", ")))")]
    case .environment(let http, let https, let all, let bypass):
      var lines: [String] = []
      if let http { lines.append("http URLs: \(http.shown) (http_proxy)") }
      if let https { lines.append("https URLs: \(https.shown) (https_proxy)") }
      if let all { lines.append("other URLs: \(all.shown) (all_proxy)") }
      if !bypass.entries.isEmpty, !lines.isEmpty { lines.append("not for \(bypass.entries.joined(separator: ", "))") }
      return lines
    }
  }

  /// The route the environment gives (`environment` holds the variables), with `noProxy` (the
  /// manifest's `no_proxy:`) replacing the environment's list when given. A variable that is set
  /// but not a proxy URL is a problem, named by the variable.
  public static func fromEnvironment(
    _ environment: [String: String], noProxy: NoProxy?
  ) -> Result<ProxyRoute, ProxyEndpoint.Problem> {
    func endpoint(_ names: [String]) -> Result<ProxyEndpoint?, ProxyEndpoint.Problem> {
      guard let name = names.first(where: { !(environment[$0] ?? "").isEmpty }), let value = environment[name] else {
        return .success(nil)
      }
      return ProxyEndpoint.parse(value).map { $0 }.mapError {
        ProxyEndpoint.Problem(message: "the environment variable \(name): \($0.message)")
      }
    }
    do {
      let http = try endpoint(["http_proxy"]).get()
      let https = try endpoint(["https_proxy", "HTTPS_PROXY"]).get()
      let all = try endpoint(["all_proxy", "ALL_PROXY"]).get()
      guard http != nil || https != nil || all != nil else { return .success(.direct) }
      let bypass =
        noProxy
        ?? NoProxy(parsing: environment["no_proxy"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["NO_PROXY"] ?? "")
      return .success(.environment(http: http, https: https, all: all, bypass: bypass))
    } catch {
      return .failure(error)
    }
  }
}

/// A proxy: its URL without credentials (what libcurl is given as `CURLOPT_PROXY`), and the
/// credentials apart (`CURLOPT_PROXYUSERNAME`, `CURLOPT_PROXYPASSWORD`), decoded.
public struct ProxyEndpoint: Sendable, Hashable {
  public enum Kind: String, Sendable, CaseIterable {
    case http, https, socks4, socks4a, socks5, socks5h
  }

  public var kind: Kind
  /// `scheme://host[:port]`, without user-info.
  public var url: String
  public var user: String?
  public var password: String?

  public struct Problem: Error, Sendable, Equatable {
    public var message: String
  }

  /// `[scheme://][user[:password]@]host[:port][/]`; no scheme is `http://`, as for libcurl. A
  /// path, query or fragment, an unknown scheme or a bad port is a problem.
  public static func parse(_ text: String) -> Result<ProxyEndpoint, Problem> {
    let written = text.trimmingSpaces
    var rest = Substring(written)
    var kind = Kind.http
    if let range = rest.range(of: "://") {
      let scheme = rest[..<range.lowerBound].lowercased()
      guard let known = Kind(rawValue: scheme) else {
        return .failure(
          Problem(
            message:
              "unknown proxy scheme '\(scheme)': use http, https, socks4, socks4a, socks5 or socks5h (socks5h resolves host names at the proxy)"
          ))
      }
      kind = known
      rest = rest[range.upperBound...]
    }
    if rest.hasSuffix("/") { rest = rest.dropLast() }
    guard !rest.isEmpty else { return .failure(Problem(message: "the proxy URL has no host")) }
    guard !rest.contains(where: { $0 == "/" || $0 == "?" || $0 == "#" || $0 == " " }) else {
      return .failure(Problem(message: "a proxy URL is scheme://host:port, without a path, query or spaces"))
    }
    var user: String?
    var password: String?
    if let at = rest.lastIndex(of: "@") {
      let info = rest[..<at]
      rest = rest[rest.index(after: at)...]
      if let colon = info.firstIndex(of: ":") {
        user = decode(info[..<colon])
        password = decode(info[info.index(after: colon)...])
      } else {
        user = decode(info)
      }
    }
    // The host and port: `[v6]:port`, `name:port`, or either without a port.
    var host = rest
    var port: Substring?
    if rest.hasPrefix("[") {
      guard let close = rest.firstIndex(of: "]") else {
        return .failure(Problem(message: "the proxy URL's IPv6 address has no ']'"))
      }
      host = rest[...close]
      let after = rest[rest.index(after: close)...]
      if after.hasPrefix(":") {
        port = after.dropFirst()
      } else if !after.isEmpty {
        return .failure(Problem(message: "the proxy URL has text after its IPv6 address"))
      }
    } else if let colon = rest.lastIndex(of: ":") {
      host = rest[..<colon]
      port = rest[rest.index(after: colon)...]
    }
    guard !host.isEmpty else { return .failure(Problem(message: "the proxy URL has no host")) }
    if let port {
      guard let number = Int(port), (1...65535).contains(number) else {
        return .failure(Problem(message: "the proxy URL's port '\(port)' is not a number from 1 to 65535"))
      }
    }
    let url = "\(kind.rawValue)://\(host)" + (port.map { ":\($0)" } ?? "")
    return .success(ProxyEndpoint(kind: kind, url: url, user: user, password: password))
  }

  private static func decode(_ text: Substring) -> String {
    String(decoding: Hex.percentDecoded(Array(text.utf8)), as: UTF8.self)
  }

  /// The URL, and whether credentials go with it: what messages and `plan` show.
  public var shown: String { url + (user != nil ? " (with credentials)" : "") }

  /// The URL and a digest of the credentials.
  var identity: String {
    guard user != nil || password != nil else { return url }
    return url + " " + AccessSettings.digest((user ?? "") + "\u{1F}" + (password ?? ""))
  }
}

/// `no_proxy`: host names (a name matches itself and the names under it; a leading `.` changes
/// nothing), IP addresses, IPv4 networks (`10.0.0.0/8`), or `*` for every host, as libcurl reads
/// the variable.
public struct NoProxy: Sendable, Hashable {
  public var entries: [String]

  public init(entries: [String]) {
    self.entries = entries.map { $0.trimmingSpaces.lowercased() }.filter { !$0.isEmpty }
  }

  /// A comma- or space-separated list.
  public init(parsing text: String) {
    self.init(entries: text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map(String.init))
  }

  /// Whether `host` (lower case; an IPv6 address in brackets or not) goes direct.
  public func matches(_ host: String) -> Bool {
    let name = Self.bare(host.lowercased())
    for entry in entries {
      if entry == "*" { return true }
      var pattern = Self.bare(entry)
      if pattern.hasPrefix(".") { pattern.removeFirst() }
      if pattern.isEmpty { continue }
      if let slash = pattern.firstIndex(of: "/") {
        if Self.ipv4(name, inNetwork: String(pattern[..<slash]), bits: Int(pattern[pattern.index(after: slash)...])) {
          return true
        }
        continue
      }
      if name == pattern || name.hasSuffix("." + pattern) { return true }
    }
    return false
  }

  private static func bare(_ host: String) -> String {
    host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
  }

  private static func ipv4(_ host: String, inNetwork network: String, bits: Int?) -> Bool {
    guard let bits, (0...32).contains(bits) else { return false }
    var address = in_addr()
    var base = in_addr()
    guard inet_pton(AF_INET, host, &address) == 1, inet_pton(AF_INET, network, &base) == 1 else { return false }
    let mask: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - UInt32(bits))
    return UInt32(bigEndian: address.s_addr) & mask == UInt32(bigEndian: base.s_addr) & mask
  }
}

/// The scheme and host of a request's URL, read without a parser's allocation for the common
/// `scheme://host[:port]/...` shape.
struct TargetHost {
  var scheme: String
  var host: String

  init?(_ url: String) {
    // `://` found on the bytes: Foundation's `range(of:)` costs a search through CFString.
    guard let colon = url.utf8.firstIndex(of: UInt8(ascii: ":")),
      url.utf8[colon...].starts(with: "://".utf8)
    else { return nil }
    scheme = String(url[..<colon]).lowercased()
    let rest = url.utf8.index(colon, offsetBy: 3)
    var authority = url[rest...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
    if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
      host = String(authority[...close])
    } else if let colon = authority.lastIndex(of: ":") {
      host = String(authority[..<colon])
    } else {
      host = String(authority)
    }
    host = host.lowercased()
    guard !host.isEmpty else { return nil }
  }
}
