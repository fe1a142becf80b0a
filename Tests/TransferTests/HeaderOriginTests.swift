import Testing

@testable import BatchDL

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
    spec.headerOrigin = origin
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
}
