import Testing

@testable import BatchDLTransfer

/// Which requests may share connections (`ConnectionIdentity`, `ShareKey`): every setting that
/// changes what a connection trusts, presents or speaks makes another identity, crossed with every
/// other; nothing else does.
@Suite struct ConnectionIdentityTests {
  /// A session's settings, each a variation of one input (the first: none set).
  static let variations: [(name: String, tls: TLSSettings, insecure: Bool, http: HTTPVersion)] = {
    func tls(_ change: (inout TLSSettings) -> Void) -> TLSSettings {
      var settings = TLSSettings()
      change(&settings)
      return settings
    }
    let client = tls {
      $0.clientCert = "/certs/client.pem"
      $0.clientKey = "/certs/client.key"
    }
    func withPassword(_ password: String?, key: String = "/certs/client.key") -> TLSSettings {
      var settings = client
      settings.clientKey = key
      settings.keyPassword = password
      return settings
    }
    return [
      ("nothing", TLSSettings(), false, .auto),
      ("insecure", TLSSettings(), true, .auto),
      ("http 1.1", TLSSettings(), false, .http1_1),
      ("http 2", TLSSettings(), false, .http2),
      ("ca_file", tls { $0.caFile = "/certs/ca.pem" }, false, .auto),
      ("other ca_file", tls { $0.caFile = "/certs/other-ca.pem" }, false, .auto),
      ("ca_path", tls { $0.caPath = "/certs" }, false, .auto),
      ("pin", tls { $0.pinnedPublicKey = "sha256//AAAA" }, false, .auto),
      ("other pin", tls { $0.pinnedPublicKey = "sha256//BBBB" }, false, .auto),
      ("min 1.3", tls { $0.minVersion = .tls1_3 }, false, .auto),
      ("min 1.2", tls { $0.minVersion = .tls1_2 }, false, .auto),
      ("client cert only", tls { $0.clientCert = "/certs/client.pem" }, false, .auto),
      ("client cert and key", client, false, .auto),
      ("right password", withPassword("right"), false, .auto),
      ("wrong password", withPassword("wrong"), false, .auto),
      ("empty password", withPassword(""), false, .auto),
      ("other key, right password", withPassword("right", key: "/certs/other.key"), false, .auto),
      ("right password over http 2", withPassword("right"), false, .http2),
      ("right password, insecure", withPassword("right"), true, .auto),
    ]
  }()

  @Test func everySettingMakesAnotherIdentity() {
    let identities = Self.variations.map {
      ConnectionIdentity(tls: $0.tls, insecure: $0.insecure, httpVersion: $0.http)
    }
    for (i, first) in identities.enumerated() {
      for (j, second) in identities.enumerated() {
        #expect(
          (first == second) == (i == j), "\(Self.variations[i].name) against \(Self.variations[j].name)")
        #expect(
          (ShareKey(identity: first, cookieSession: nil) == ShareKey(identity: second, cookieSession: nil)) == (i == j))
      }
    }
  }

  @Test func theSameSettingsAreOneIdentity() {
    for variation in Self.variations {
      let one = ConnectionIdentity(tls: variation.tls, insecure: variation.insecure, httpVersion: variation.http)
      let two = ConnectionIdentity(tls: variation.tls, insecure: variation.insecure, httpVersion: variation.http)
      #expect(one == two && one.hashValue == two.hashValue, "\(variation.name)")
    }
  }

  @Test func thePasswordIsNeverShown() {
    var tls = TLSSettings()
    tls.clientCert = "/certs/client.pem"
    tls.keyPassword = "hunter2-secret"
    let identity = ConnectionIdentity(tls: tls, insecure: false, httpVersion: .auto)
    #expect(!identity.description.contains("hunter2"))
    #expect(!"\(identity)".contains("hunter2") && !String(reflecting: identity.keyPasswordDigest).contains("hunter2"))
    #expect(identity.description.contains("key_password set"))
  }

  /// Sessions of one identity share a pool unless they keep cookies (a cookie store is a session's).
  @Test(
    arguments: [
      (nil, nil, true), (nil, "", false), ("", "", false), ("/jar/a", "/jar/a", false), ("", nil, false),
    ] as [(String?, String?, Bool)])
  func sessionsShareUnlessTheyKeepCookies(first: String?, second: String?, shared: Bool) {
    func spec(session: Int, jar: String?) -> TransferSpec {
      var spec = TransferSpec(
        method: "GET", url: "https://example.org/f", headers: [], body: .none, target: .memory(limit: 10, spill: nil),
        requestTimeout: .seconds(1), resourceTimeout: nil,
        retry: RetryPolicy(attempts: 1, backoff: .seconds(1), maxBackoff: .seconds(1)), rateLimit: nil,
        hostKey: "example.org", hostLimit: 6, sessionKey: session, sessionLimit: 6, insecure: false)
      spec.cookieJar = jar
      return spec
    }
    #expect((ShareKey(spec(session: 0, jar: first)) == ShareKey(spec(session: 1, jar: second))) == shared)
    #expect(ShareKey(spec(session: 0, jar: first)) == ShareKey(spec(session: 0, jar: first)))
  }
}
