import Foundation
import TestServer
import TestSupport
import Testing

/// A manifest `Cookie` header and the session jar's cookies go out on one `Cookie` line.
@Suite struct CookieHeaderTests {
  @Test func manifestCookiesJoinTheJarsOnOneLine() throws {
    let fixture = try RunFixture()
    fixture.server.route(
      "/login",
      .fixed(Response(status: 200, headers: ["Set-Cookie": "sid=abc123; Path=/"], body: Array("ok".utf8))))
    fixture.server.route("/whoami", .echoHeaders)
    fixture.server.route("/hop", .redirect(status: 302, location: "/whoami?hop=1"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          headers:
            Cookie: "theme=dark; lang=en"
          tasks:
            - download: BASE/login
            - download: BASE/whoami
              after: login
            - download: BASE/hop
              to: hop.json
              after: login
      """)
    let result = try fixture.run()
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let requests = fixture.server.requests(for: "/whoami")
    #expect(requests.count == 2)
    for request in requests {
      #expect(request.headerLineCount("cookie") == 1, "\(request.headers)")
      // The jar's cookies first, then the manifest's.
      #expect(request.header("cookie") == "sid=abc123; theme=dark; lang=en")
    }
    let login = try #require(fixture.server.requests(for: "/login").first)
    #expect(login.headerLineCount("cookie") == 1)
    #expect(login.header("cookie") == "theme=dark; lang=en")
    // The jar keeps what the server set, never the manifest's cookies.
    let jar = fixture.folder.read(".batchdl/cookies/\(fixture.manifestKey() ?? "")/main.txt") ?? ""
    #expect(jar.contains("abc123") && !jar.contains("theme"))
  }
}
