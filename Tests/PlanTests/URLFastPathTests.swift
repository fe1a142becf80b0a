import Testing

@testable import BatchDL
@testable import BatchDLSupport

@Suite struct URLFastPathTests {
  /// Spellings of each part of a URL, the plain and the tricky.
  static let schemes = ["http://", "https://", "HTTP://", "Https://", "ftp://", "http:/", ""]
  static let authorities = [
    "example.org", "EXAMPLE.org", "a-b.example.org", "127.0.0.1", "127.1", "0x7f.0.0.1", "010.0.0.1",
    "256.1.1.1", "1.2.3.com", "1password.com", "a..b", ".a", "a.", "", "user:pw@h.test", "@h.test",
    "[::1]", "xn--bcher-kva.example", "bücher.example", "h.test:8080", "h.test:80", "h.test:443", "h.test:080",
    "h.test:0", "h.test:65535", "h.test:65536", "h.test:", "h.test:8o", "-h.test", "h_t.test",
  ]
  static let paths = [
    "/", "/a/b.bin", "/a/./b", "/a/../b", "/a/..", "/..", "/.", "/a/.b", "/a/..b/c", "/%41", "/a%2fb", "/a%2Fb",
    "/a b", "/[x]", "/~u/f", "", "/a?b=c", "/a?", "/a#f", "/a?b#f", "/a?b?c", "/a@b", "/a;p=1", "/é", "/a\\b",
    "/a\"b", "/a{b}", "/d0001/f42.bin", "/dir/", "/a//b", "?q=1", "/a?x=%20", "/a?x y",
  ]

  @Test func theFastPathAgreesWithLibcurl() {
    let normalizer = URLNormalizer()
    var fast = 0
    var total = 0
    for scheme in Self.schemes {
      for authority in Self.authorities {
        for path in Self.paths {
          let url = scheme + authority + path
          total += 1
          guard let quick = URLNormalizer.alreadyNormal(url) else { continue }
          fast += 1
          switch normalizer.normalizeWithCurl(url) {
          case .success(let slow): #expect(quick == slow, "\(url)")
          case .failure(let problem): Issue.record("\(url): the fast path accepts what libcurl refuses (\(problem))")
          }
        }
      }
    }
    // The corpus exercises the fast path, not only the slow one.
    #expect(fast > 200, "\(fast) of \(total)")
  }

  @Test func plainListURLsTakeTheFastPath() {
    for url in [
      "http://127.0.0.1:8782/d0001/f42.bin", "https://ftp.example.org/pub/iso/a.iso",
      "https://h.test/a?b=c&d=e", "http://h.test/",
    ] {
      #expect(URLNormalizer.alreadyNormal(url) != nil, "\(url)")
    }
  }
}
