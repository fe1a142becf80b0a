import Testing

@testable import BatchDL
@testable import BatchDLSupport

/// `URLNormalizer` on its own: the canonical form two spellings of one URL must share.
@Suite struct URLNormalizerTests {
  struct Case: Sendable, CustomTestStringConvertible {
    var input: String
    var expected: String
    var testDescription: String { input }
  }

  static let table: [Case] = [
    // Scheme and host lower-cased; path case kept.
    Case(input: "HTTPS://Example.ORG/Path/File.TXT", expected: "https://example.org/Path/File.TXT"),
    Case(input: "Http://WWW.Example.org/a", expected: "http://www.example.org/a"),
    // Default ports dropped, others kept.
    Case(input: "https://example.org:443/a", expected: "https://example.org/a"),
    Case(input: "http://example.org:80/a", expected: "http://example.org/a"),
    Case(input: "http://example.org:8080/a", expected: "http://example.org:8080/a"),
    Case(input: "https://example.org:8443/a", expected: "https://example.org:8443/a"),
    Case(input: "https://example.org:80/a", expected: "https://example.org:80/a"),
    Case(input: "http://example.org:443/a", expected: "http://example.org:443/a"),
    Case(input: "HTTPS://EXAMPLE.ORG:443", expected: "https://example.org/"),
    // Fragment dropped, query kept.
    Case(input: "https://example.org/a#section-2", expected: "https://example.org/a"),
    Case(input: "https://example.org/a?x=1#frag", expected: "https://example.org/a?x=1"),
    Case(input: "https://example.org/#", expected: "https://example.org/"),
    // Percent-encoding: unreserved characters decoded, others kept with upper-case hex digits.
    Case(input: "https://example.org/%7euser/%7Efile", expected: "https://example.org/~user/~file"),
    Case(input: "https://example.org/%41%62%63-%5F%2E", expected: "https://example.org/Abc-_."),
    Case(input: "https://example.org/a%2fb", expected: "https://example.org/a%2Fb"),
    Case(input: "https://example.org/a%2Fb", expected: "https://example.org/a%2Fb"),
    Case(input: "https://example.org/%e2%82%ac", expected: "https://example.org/%E2%82%AC"),
    Case(input: "https://example.org/€", expected: "https://example.org/%E2%82%AC"),
    Case(input: "https://example.org/a%20b", expected: "https://example.org/a%20b"),
    Case(input: "https://example.org/p?x=%7e&y=%2f", expected: "https://example.org/p?x=~&y=%2F"),
    Case(input: "https://example.org/a%", expected: "https://example.org/a%25"),
    Case(input: "https://example.org/a%zz", expected: "https://example.org/a%25zz"),
    // Dot segments removed, also when they were percent-encoded.
    Case(input: "https://example.org/a/./b/../c", expected: "https://example.org/a/c"),
    Case(input: "https://example.org/../../a", expected: "https://example.org/a"),
    Case(input: "https://example.org/a/b/..", expected: "https://example.org/a/"),
    Case(input: "https://example.org/a/%2e%2e/b", expected: "https://example.org/b"),
    Case(input: "https://example.org/a/.%2E/b/%2e/c", expected: "https://example.org/b/c"),
    Case(input: "https://example.org/a?p=/../b", expected: "https://example.org/a?p=/../b"),
    // Empty path becomes `/`.
    Case(input: "https://example.org", expected: "https://example.org/"),
    Case(input: "https://example.org?q=1", expected: "https://example.org/?q=1"),
    Case(input: "http://example.org:8080", expected: "http://example.org:8080/"),
    // User-info kept (redaction is the printer's job), percent-encoding normalized.
    Case(input: "https://alice:s3cret@Example.org/a", expected: "https://alice:s3cret@example.org/a"),
    Case(input: "https://alice:p%41ss@example.org/a", expected: "https://alice:pAss@example.org/a"),
    Case(input: "https://token@example.org/a", expected: "https://token@example.org/a"),
    // IPv6 literal.
    Case(input: "https://[::1]:443/x", expected: "https://[::1]/x"),
  ]

  @Test(arguments: table)
  func normalizes(_ item: Case) throws {
    let normalized = try URLNormalizer().normalize(item.input).get()
    #expect(normalized.text == item.expected)
  }

  @Test(arguments: table)
  func normalFormIsAFixedPoint(_ item: Case) throws {
    let normalizer = URLNormalizer()
    let once = try normalizer.normalize(item.input).get()
    let twice = try normalizer.normalize(once.text).get()
    #expect(twice.text == once.text)
  }

  @Test func twoSpellingsOfOneURLAreEqual() throws {
    let normalizer = URLNormalizer()
    let a = try normalizer.normalize("HTTPS://Example.org:443/a/./%7Euser/file.bin#top").get()
    let b = try normalizer.normalize("https://example.org/a/~user/file.bin").get()
    #expect(a == b)
  }

  @Test func authorityAndFileName() throws {
    let normalizer = URLNormalizer()
    let plain = try normalizer.normalize("HTTPS://Example.org:443/dir/My%20File.tar.gz?x=1").get()
    #expect(plain.scheme == "https")
    #expect(plain.authority == "example.org")
    #expect(plain.fileName == "My File.tar.gz")
    let ported = try normalizer.normalize("http://Example.org:8080/a").get()
    #expect(ported.authority == "example.org:8080")
    let withUser = try normalizer.normalize("https://user:pw@example.org/a").get()
    #expect(withUser.authority == "example.org")
    #expect(try normalizer.normalize("https://example.org/dir/").get().fileName == nil)
    #expect(try normalizer.normalize("https://example.org").get().fileName == nil)
    // `%2F` stays encoded in the URL but the decoded name has a slash: the planner refuses it as a name.
    #expect(try normalizer.normalize("https://example.org/a%2Fb").get().fileName == "a/b")
  }

  struct Rejection: Sendable, CustomTestStringConvertible {
    var input: String
    var words: [String]
    var testDescription: String { input.isEmpty ? "(empty)" : input }
  }

  static let rejections: [Rejection] = [
    Rejection(input: "", words: ["empty"]),
    Rejection(input: "https://example.org/a b", words: ["spaces", "%20"]),
    Rejection(input: "https://example.org/a\tb", words: ["spaces or control characters"]),
    Rejection(input: " https://example.org/a", words: ["spaces"]),
    Rejection(input: "https://example.org/a\nb", words: ["control characters"]),
    Rejection(input: "ftp://example.org/file.txt", words: ["only http and https URLs are allowed", "ftp:"]),
    Rejection(input: "FTP://example.org/file.txt", words: ["only http and https URLs are allowed", "ftp:"]),
    Rejection(input: "file:///etc/passwd", words: ["only http and https URLs are allowed", "file:"]),
    Rejection(input: "s3://bucket/key", words: ["only http and https URLs are allowed, not s3:"]),
    Rejection(input: "WS://example.org/socket", words: ["only http and https URLs are allowed, not ws:"]),
    Rejection(input: "mailto:someone@example.org", words: ["is not a URL"]),
    Rejection(input: "example.org/file.txt", words: ["'example.org/file.txt' is not a URL", "https://"]),
    Rejection(input: "www.example.org", words: ["is not a URL", "starting with https:// or http://"]),
    Rejection(input: "/releases/app.tar.gz", words: ["is not a URL"]),
    Rejection(input: "//example.org/a", words: ["is not a URL"]),
    Rejection(input: "https://", words: ["not a valid URL"]),
    Rejection(input: "https://example.org:99999/", words: ["not a valid URL"]),
  ]

  @Test(arguments: rejections)
  func rejects(_ item: Rejection) {
    switch URLNormalizer().normalize(item.input) {
    case .success(let value):
      Issue.record("'\(item.input)' should be rejected, but normalized to \(value.text)")
    case .failure(let problem):
      for word in item.words {
        #expect(problem.description.contains(word), "expected '\(word)' in: \(problem.description)")
      }
    }
  }

  @Test func rejectionHidesUserInfo() {
    guard case .failure(let problem) = URLNormalizer().normalize("https://alice:hunter22@example.org:99999/") else {
      Issue.record("a port out of range should be rejected")
      return
    }
    #expect(!problem.description.contains("hunter22"))
    #expect(problem.description.contains("example.org"))
  }

  /// One handle serves every URL of a plan: a URL without a scheme must not be resolved against the
  /// URL normalized before it.
  @Test func reusedNormalizerDoesNotResolveRelativeURLs() throws {
    let normalizer = URLNormalizer()
    for relative in ["example.org/file.txt", "../other.bin", "?page=2", "//mirror.example.net/a", "b/c"] {
      _ = try normalizer.normalize("https://example.org/dir/file.bin").get()
      if case .success(let value) = normalizer.normalize(relative) {
        Issue.record("'\(relative)' was accepted as \(value.text)")
      }
    }
  }

  @Test func reusedNormalizerGivesTheSameResults() throws {
    let shared = URLNormalizer()
    for item in Self.table {
      #expect(try shared.normalize(item.input).get().text == item.expected)
    }
  }

  @Test func percentHelpers() {
    #expect(URLNormalizer.normalizePercent("plain/path") == "plain/path")
    #expect(URLNormalizer.normalizePercent("%7e%7E%2f%2F%3a") == "~~%2F%2F%3A")
    #expect(URLNormalizer.normalizePercent("a\"b<c>") == "a%22b%3Cc%3E")
    #expect(URLNormalizer.percentDecode("a%20b%2Fc%zz%") == "a b/c%zz%")
    #expect(URLNormalizer.removeDotSegments("/a/b/../../../c") == "/c")
    #expect(URLNormalizer.removeDotSegments("/a/.") == "/a/")
    #expect(URLNormalizer.removeDotSegments("/..") == "/")
    #expect(URLNormalizer.removeDotSegments("/a/b") == "/a/b")
    // Dots inside names, or three of them, are not dot segments.
    for path in ["/a/.../b", "/.hidden/x..y/", "/a./..b", "/...", "/a/b."] {
      #expect(URLNormalizer.removeDotSegments(path) == path)
    }
    #expect(URLNormalizer.removeDotSegments("/a/./b") == "/a/b")
    #expect(URLNormalizer.removeDotSegments("/a/b/..") == "/a/")
  }
}
