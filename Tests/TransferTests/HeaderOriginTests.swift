import Testing

@testable import BatchDL
@testable import BatchDLTransfer

/// Which headers go to which origin: the one rule every request passes (redirects, mirrors,
/// segments, repairs and the sources a document names all make requests to other URLs).
@Suite struct HeaderOriginTests {
  static func spec(url: String, origin: String?) -> TransferSpec {
    var spec = TransferSpec(
      method: "GET", url: url, headers: ["Authorization: Bearer s3cret", "Accept: */*", "X-Api-Key: k3y"],
      body: .none, target: .memory(limit: 1, spill: nil), requestTimeout: .seconds(1), resourceTimeout: nil,
      retry: RetryPolicy(attempts: 1, backoff: .seconds(1), maxBackoff: .seconds(1)), rateLimit: nil, hostKey: "",
      hostLimit: 1, sessionKey: 0, sessionLimit: 1)
    spec.originOnlyHeaders = ["authorization", "x-api-key"]
    spec.headerOrigin = origin.flatMap { Origin(url: $0) }
    return spec
  }

  @Test(
    arguments: [
      ("https://a.example/f", "https://a.example", true),
      ("https://A.example:443/other/path", "https://a.example", true),
      ("https://b.example/f", "https://a.example", false),
      ("http://a.example/f", "https://a.example", false),
      ("https://a.example:8443/f", "https://a.example", false),
      ("https://b.example/f", nil, true),
      // Starts like the origin, but is another host.
      ("https://a.example.evil/f", "https://a.example", false),
      ("https://a.example@evil.example/f", "https://a.example", false),
    ] as [(String, String?, Bool)])
  func secretsGoOnlyToTheirOrigin(url: String, origin: String?, withSecrets: Bool) {
    let sent = Self.spec(url: url, origin: origin).headersForURL
    #expect(sent.contains("Accept: */*"))
    #expect(sent.contains("Authorization: Bearer s3cret") == withSecrets, "\(url)")
    #expect(sent.contains("X-Api-Key: k3y") == withSecrets, "\(url)")
  }

  /// How a request's URL arrived, and the spec each path makes for it.
  enum Arrival: String, CaseIterable, Sendable {
    /// The task's URL as the manifest names it.
    case manifest
    /// A mirror on another origin, without headers of its own.
    case mirror
    /// A mirror on another origin with its own `Authorization`.
    case mirrorWithOwnHeaders
    /// A mirror on the task's origin.
    case sameOriginMirror
    /// A file a Metalink document fetched from `https://doc.example` lists at the task's host.
    case documentSource
    /// A redirect from the task's URL to another origin, and one within it.
    case redirectElsewhere
    case redirectWithin
  }

  /// The secret given for `https://a.example` (`Authorization: Bearer s3cret`), by the path the
  /// request's URL arrived on: what it sends.
  @Test(arguments: Arrival.allCases)
  func theOriginRuleOnEveryPath(arrival: Arrival) throws {
    var spec = Self.spec(url: "https://a.example/f", origin: "https://a.example")
    var expected = "Authorization: Bearer s3cret"
    var secretGoes = true
    switch arrival {
    case .manifest:
      break
    case .mirror:
      spec.url = "https://m.example/f"
      secretGoes = false
    case .mirrorWithOwnHeaders:
      spec.url = "https://m.example/f"
      spec.sourceHeaders = ["Authorization: Bearer m1rror"]
      expected = "Authorization: Bearer m1rror"
    case .sameOriginMirror:
      spec.url = "https://a.example/mirror/f"
    case .documentSource:
      spec.headerOrigin = Origin(url: "https://doc.example")
      secretGoes = false
    case .redirectElsewhere:
      spec = try spec.following("https://b.example/f", status: 302).get()
      secretGoes = false
    case .redirectWithin:
      spec = try spec.following("https://a.example/g", status: 302).get()
    }
    let sent = spec.headersForURL
    #expect(sent.contains("Accept: */*"))
    #expect(sent.filter { $0.hasPrefix("Authorization:") } == (secretGoes ? [expected] : []), "\(sent)")
    // The task origin's other secret goes only where that origin is asked.
    let atOrigin: [Arrival] = [.manifest, .sameOriginMirror, .redirectWithin]
    #expect(sent.contains("X-Api-Key: k3y") == atOrigin.contains(arrival))
  }

  /// A mirror's own secret goes with a redirect within its origin, and not beyond.
  @Test func aMirrorsOwnSecretStaysWithItsOrigin() throws {
    var spec = Self.spec(url: "https://m.example/f", origin: "https://a.example")
    spec.sourceHeaders = ["Authorization: Bearer m1rror", "X-Mirror: yes"]
    let within = try spec.following("https://m.example/g", status: 302).get()
    #expect(within.headersForURL.contains("Authorization: Bearer m1rror"))
    let beyond = try spec.following("https://b.example/g", status: 302).get()
    #expect(!beyond.headersForURL.contains { $0.hasPrefix("Authorization:") }, "\(beyond.headersForURL)")
    #expect(beyond.headersForURL.contains("X-Mirror: yes"), "a header that is not secret still goes")
  }
}
