import CCurl
import Testing

@testable import BatchDLTransfer

/// The access decisions as values, without sockets: which proxy carries a request, which
/// credentials a URL gets, what a netrc file gives, and what a redirect keeps. Every path of a
/// request (first, resume, retry, segment, mirror, repair, a redirect's hop, a document) makes
/// its easy handle through `configureAccess`, which asks exactly these.
@Suite struct AccessDecisionTests {
  static func spec(url: String, origin: String?, access: AccessSettings) -> TransferSpec {
    var spec = TransferSpec(
      method: "GET", url: url, headers: [], body: .none, target: .memory(limit: 1, spill: nil),
      requestTimeout: .seconds(1), resourceTimeout: nil,
      retry: RetryPolicy(attempts: 1, backoff: .seconds(1), maxBackoff: .seconds(1)), rateLimit: nil, hostKey: "",
      hostLimit: 1, sessionKey: 0, sessionLimit: 1)
    spec.access = access
    spec.headerOrigin = origin.flatMap { Origin(url: $0) }
    return spec
  }

  static func endpoint(_ text: String) -> ProxyEndpoint {
    (try? ProxyEndpoint.parse(text).get()) ?? ProxyEndpoint(kind: .http, url: "invalid", user: nil, password: nil)
  }

  // MARK: - Proxy endpoints

  @Test(
    arguments: [
      ("http://127.0.0.1:3128", "http://127.0.0.1:3128", nil, nil),
      ("127.0.0.1:3128", "http://127.0.0.1:3128", nil, nil),
      ("socks5h://u:p%40ss@[::1]:1080/", "socks5h://[::1]:1080", "u", "p@ss"),
      ("HTTPS://proxy.example", "https://proxy.example", nil, nil),
      ("http://only-user@proxy:8080", "http://proxy:8080", "only-user", nil),
    ] as [(String, String, String?, String?)])
  func proxyURLsParse(text: String, url: String, user: String?, password: String?) throws {
    let endpoint = try ProxyEndpoint.parse(text).get()
    #expect(endpoint.url == url)
    #expect(endpoint.user == user)
    #expect(endpoint.password == password)
    #expect(!endpoint.shown.contains("p@ss") && !endpoint.url.contains("@"))
  }

  @Test(arguments: [
    "ftp://proxy:21", "http://proxy:0", "http://proxy:99999", "http://proxy:80/path", "http://", "http://[::1",
    "http://proxy:80?x=1",
  ])
  func badProxyURLsAreRefused(text: String) {
    #expect(throws: ProxyEndpoint.Problem.self) { try ProxyEndpoint.parse(text).get() }
  }

  // MARK: - Which proxy carries a request

  @Test(
    arguments: [
      // The manifest's proxy for every scheme, but the hosts of no_proxy.
      ("manifest", "http://a.example/f", "http://p:1"),
      ("manifest", "https://a.example/f", "http://p:1"),
      ("manifest", "https://internal.corp/f", nil),
      ("manifest", "https://x.internal.corp/f", nil),
      ("manifest", "https://notinternal.corp/f", "http://p:1"),
      ("manifest", "http://10.1.2.3/f", nil),
      ("manifest", "http://11.1.2.3/f", "http://p:1"),
      ("manifest", "http://[::1]:8080/f", nil),
      // The environment: http_proxy for http, https_proxy for https, all_proxy else.
      ("environment", "http://a.example/f", "http://h:1"),
      ("environment", "https://a.example/f", "http://s:1"),
      ("environment", "https://internal.corp/f", nil),
      ("direct", "https://a.example/f", nil),
    ] as [(String, String, String?)])
  func theRouteChoosesTheProxyForEachURL(route: String, url: String, proxy: String?) {
    let bypass = NoProxy(parsing: ".internal.corp, 10.0.0.0/8 ::1")
    let chosen: ProxyRoute
    switch route {
    case "manifest": chosen = .manifest(Self.endpoint("http://p:1"), bypass: bypass)
    case "environment":
      chosen = .environment(
        http: Self.endpoint("http://h:1"), https: Self.endpoint("http://s:1"), all: Self.endpoint("socks5h://a:1"),
        bypass: bypass)
    default: chosen = .direct
    }
    switch chosen.decision(for: url) {
    case .direct: #expect(proxy == nil, "\(url)")
    case .via(let endpoint): #expect(endpoint.url == proxy, "\(url)")
    case .refused(let message): Issue.record("refused: \(message)")
    }
  }

  @Test func theEnvironmentIsReadAsLibcurlReadsIt() throws {
    // HTTP_PROXY in capitals is not read (a CGI program's request header could set it).
    let upper = try ProxyRoute.fromEnvironment(["HTTP_PROXY": "http://evil:1"], noProxy: nil).get()
    #expect(upper == .direct)
    let route = try ProxyRoute.fromEnvironment(
      ["https_proxy": "http://u:pw@s:3128", "ALL_PROXY": "socks5h://a:1080", "NO_PROXY": "localhost"], noProxy: nil
    ).get()
    #expect(route.decision(for: "https://x.example/") == .via(Self.endpoint("http://u:pw@s:3128")))
    #expect(route.decision(for: "http://x.example/") == .via(Self.endpoint("socks5h://a:1080")))
    #expect(route.decision(for: "http://localhost:8080/") == .direct)
    // The manifest's no_proxy replaces the environment's.
    let replaced = try ProxyRoute.fromEnvironment(
      ["https_proxy": "http://s:3128", "no_proxy": "a.example"], noProxy: NoProxy(entries: ["b.example"])
    ).get()
    #expect(replaced.decision(for: "https://a.example/") != .direct)
    #expect(replaced.decision(for: "https://b.example/") == .direct)
    #expect(route.shown.allSatisfy { !$0.contains("pw") })
    #expect(throws: ProxyEndpoint.Problem.self) {
      try ProxyRoute.fromEnvironment(["https_proxy": "gopher://x"], noProxy: nil).get()
    }
  }

  @Test func aNoProxyStarBypassesEverything() {
    let route = ProxyRoute.manifest(Self.endpoint("http://p:1"), bypass: NoProxy(parsing: "*"))
    #expect(route.decision(for: "https://anything.example/") == .direct)
  }

  /// CVE-2023-38545: a host name over 255 bytes through SOCKS5 is refused, never resolved here.
  @Test func aSOCKS5HostNameOver255BytesIsRefused() {
    let long = String(repeating: "a", count: 250) + ".example"
    for scheme in ["socks5h", "socks5"] {
      let route = ProxyRoute.manifest(Self.endpoint("\(scheme)://127.0.0.1:1080"), bypass: NoProxy(entries: []))
      guard case .refused(let message) = route.decision(for: "http://\(long)/f") else {
        Issue.record("\(scheme): not refused")
        continue
      }
      #expect(message.contains("255"))
    }
    let http = ProxyRoute.manifest(Self.endpoint("http://127.0.0.1:3128"), bypass: NoProxy(entries: []))
    #expect(http.decision(for: "http://\(long)/f") != .direct)
  }

  // MARK: - Credentials for a URL

  @Test(
    arguments: [
      ("https://a.example/f", "https://a.example", true),
      ("https://a.example/other", "https://a.example", true),
      // CVE-2022-27774: another port or scheme on the same host is another origin.
      ("https://a.example:8443/f", "https://a.example", false),
      ("http://a.example/f", "https://a.example", false),
      // CVE-2018-1000007: another host.
      ("https://b.example/f", "https://a.example", false),
      ("https://a.example.evil/f", "https://a.example", false),
    ] as [(String, String, Bool)])
  func authGoesOnlyToItsOrigin(url: String, origin: String, sent: Bool) {
    var access = AccessSettings()
    access.auth = Credentials(user: "u", password: "pw", scheme: .basic)
    #expect((Self.spec(url: url, origin: origin, access: access).credentialsForURL != nil) == sent, "\(url)")
    var signed = AccessSettings()
    signed.awsSigV4 = AWSSigV4Settings(
      provider: "aws:amz:us-east-1:s3", region: "us-east-1", service: "s3", accessKey: "AK", secretKey: "SK",
      sessionToken: "T")
    #expect((Self.spec(url: url, origin: origin, access: signed).credentialsForURL != nil) == sent, "\(url)")
  }

  @Test func aRedirectHopKeepsTheOriginTheCredentialsWereGivenFor() throws {
    var access = AccessSettings()
    access.auth = Credentials(user: "u", password: "pw", scheme: .basic)
    // A spec made without an origin: the first URL is its origin, and the hop elsewhere gets nothing.
    let first = Self.spec(url: "https://a.example/f", origin: nil, access: access)
    #expect(first.followsRedirectsItself)
    let hop = try first.following("https://b.example/g", status: 302).get()
    #expect(hop.credentialsForURL == nil)
    let back = try hop.following("https://a.example/h", status: 302).get()
    #expect(back.credentialsForURL != nil, "the origin's own URL again")
  }

  static let netrcText = """
    # comment line
    machine a.example login alice password "pw with \\"quotes\\""
    machine a.example login bob password bobpw
    machine nopw.example login carol
    macdef init
    cd /pub
    machine hidden.example login mallory password x

    default login anon password anonpw
    """

  @Test(
    arguments: [
      ("https://a.example/f", "alice", "pw with \"quotes\""),
      ("https://bob@a.example/f", "bob", "bobpw"),
      // A user the host has no entry for gets nothing (never another user's password).
      ("https://eve@a.example/f", nil, nil),
      // An entry without a password gives nothing, and inherits nothing (CVE-2024-11053).
      ("https://nopw.example/f", nil, nil),
      // Text inside a macro is not an entry.
      ("https://hidden.example/f", "anon", "anonpw"),
      ("https://other.example/f", "anon", "anonpw"),
      // A URL's own password is its own.
      ("https://x:y@a.example/f", nil, nil),
    ] as [(String, String?, String?)])
  func netrcGivesEachHostItsOwnEntry(url: String, user: String?, password: String?) throws {
    var access = AccessSettings()
    access.netrc = try Netrc.parse(Self.netrcText, path: "/n").get()
    let found = Self.spec(url: url, origin: url, access: access).credentialsForURL
    if let user, let password {
      #expect(found == .password(user: user, password: password, scheme: .basic), "\(url)")
    } else {
      #expect(found == nil, "\(url)")
    }
  }

  @Test func aDefaultEntryWithoutAPasswordGivesNothing() throws {
    let netrc = try Netrc.parse("machine a login u password p\ndefault login anon\n", path: "/n").get()
    #expect(netrc.credentials(host: "b", user: nil) == nil)
    #expect(netrc.credentials(host: "a", user: nil)?.password == "p")
  }

  @Test(arguments: [
    ("machine", 1), ("machine a login", 1), ("login u password p", 1), ("machine a\nport 21", 2),
    ("machine a password \"open", 1),
  ])
  func badNetrcFilesSayWhichLine(text: String, line: Int) {
    guard case .failure(let problem) = Netrc.parse(text, path: "/n") else {
      Issue.record("parsed: \(text)")
      return
    }
    #expect(problem.line == line, "\(text): \(problem.message)")
  }

  // MARK: - Identities

  @Test func identitiesHoldNoSecretAndDifferWithEachCredential() {
    var one = AccessSettings()
    one.auth = Credentials(user: "u", password: "first-password", scheme: .basic)
    one.proxy = .manifest(Self.endpoint("http://pu:proxy-password@p:1"), bypass: NoProxy(entries: []))
    var two = one
    two.auth?.password = "second-password"
    #expect(one.identity != two.identity, "another password is another connection")
    #expect(one.requestIdentity == two.requestIdentity, "but the same request: nothing is fetched again")
    for text in [one.identity, one.requestIdentity] {
      #expect(!text.contains("first-password") && !text.contains("proxy-password"))
    }
    var three = one
    three.proxy = .direct
    #expect(one.requestIdentity == three.requestIdentity, "a request through another proxy is the same request")
    #expect(
      ConnectionIdentity(tls: TLSSettings(), insecure: false, httpVersion: .auto, access: one)
        != ConnectionIdentity(tls: TLSSettings(), insecure: false, httpVersion: .auto, access: three))
  }

  // MARK: - Proxy failures

  @Test func aProxysRefusalIsAProxyFailureAndA407IsNotTriedAgain() {
    let refused = FailureClassifier.classify(CURLE_RECV_ERROR, message: "CONNECT tunnel failed, response 407")
    #expect(refused.code == .proxy)
    #expect(refused.status == 407)
    #expect(refused.message.contains("credentials"))
    #expect(!FailureClassifier.isRetryable(refused))
    let busy = FailureClassifier.classify(CURLE_RECV_ERROR, message: "CONNECT tunnel failed, response 503")
    #expect(busy.code == .proxy && FailureClassifier.isRetryable(busy))
    let socks = FailureClassifier.classify(CURLE_PROXY, message: "Can't complete SOCKS5 connection to x. (5)")
    #expect(socks.code == .proxy && FailureClassifier.isRetryable(socks))
    #expect(FailureCode(rawValue: "proxy") == .proxy)
  }
}
