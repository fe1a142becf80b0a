import Testing

@testable import BatchDL
@testable import BatchDLTransfer

/// A request's method is compared in any case without making a string (every transfer asks), and
/// only a GET or HEAD may be sent again after a connection it shared went away.
@Suite struct RequestMethodTests {
  @Test(
    arguments: [
      ("GET", "GET", true), ("get", "GET", true), ("gEt", "GET", true), ("HEAD", "HEAD", true),
      ("head", "HEAD", true), ("GETS", "GET", false), ("GE", "GET", false), ("POST", "GET", false),
      ("", "GET", false), ("G\u{C5}T", "GET", false), ("GE[", "GET", false), ("HEAD", "GET", false),
    ])
  func methodsCompareInAnyCase(method: String, name: String, same: Bool) {
    var spec = HeaderOriginTests.spec(url: "https://a.example/f", origin: nil)
    spec.method = method
    #expect(spec.method(is: name) == same)
  }

  @Test(
    arguments: [
      ("get", "https://a.example/f", HTTPVersion.auto, true),
      ("HEAD", "https://a.example/f", HTTPVersion.auto, true),
      ("POST", "https://a.example/f", HTTPVersion.auto, false),
      ("put", "https://a.example/f", HTTPVersion.http2, false),
      ("GET", "http://a.example/f", HTTPVersion.auto, false),
      ("GET", "http://a.example/f", HTTPVersion.http2, true),
      ("GET", "https://a.example/f", HTTPVersion.http1_1, false),
    ])
  func onlyGetAndHeadMayBeSentAgainOverASharedConnection(
    method: String, url: String, version: HTTPVersion, may: Bool
  ) {
    var spec = HeaderOriginTests.spec(url: url, origin: nil)
    spec.method = method
    spec.httpVersion = version
    #expect(spec.mayMultiplex == may)
  }
}
