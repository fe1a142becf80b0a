import Foundation
import Testing

@testable import BatchDLTransfer

/// The deciding values behind HostileAccessTests, without sockets: the URL a signed request is
/// sent to, and what a netrc file's errors show.
@Suite struct HostileAccessInputTests {
  @Test(arguments: [
    ("http://h:9000/b/p+q.bin", "http://h:9000/b/p%2Bq.bin"),
    ("http://h:9000/b/p%2Bq.bin", "http://h:9000/b/p%2Bq.bin"),
    ("http://h/b/a=b&c.bin?x=1&y", "http://h/b/a%3Db%26c.bin?x=1&y"),
    ("https://h/b/caf%C3%A9/x%20y.bin", "https://h/b/caf%C3%A9/x%20y.bin"),
    ("https://h/b/t~i_l-d.e", "https://h/b/t~i_l-d.e"),
    ("https://h/b/dir%2Fx.bin", "https://h/b/dir%2Fx.bin"),
    ("https://h", "https://h"),
    ("https://h?list-type=2", "https://h?list-type=2"),
    ("https://h/", "https://h/"),
  ])
  func aSignedRequestIsSentWithItsCanonicalPath(url: String, sent: String) {
    #expect(AWSSignature.urlWithCanonicalPath(url) == sent)
  }

  @Test func theSentPathIsTheSignedOne() {
    for url in ["http://h/b/p+q.bin", "http://h/b/a=b&c.bin", "http://h/b/caf%C3%A9.bin"] {
      let sent = AWSSignature.urlWithCanonicalPath(url)
      let path = String(sent.dropFirst("http://h".count))
      #expect(AWSSignature.canonicalPath(path) == path, "\(url)")
    }
  }

  @Test func aNetrcErrorShowsNoPasswordAndNoHugeWord() {
    let split = Netrc.parse("machine h login u password first-half second-half\n", path: "n")
    guard case .failure(let problem) = split else {
      Issue.record("a split password is an error")
      return
    }
    #expect(!problem.message.contains("second-half") && problem.message.contains("quoted"), "\(problem.message)")
    let huge = String(repeating: "w", count: 100_000)
    guard case .failure(let long) = Netrc.parse("machine h \(huge)\n", path: "n") else {
      Issue.record("an unknown word is an error")
      return
    }
    #expect(long.message.count < 300, "\(long.message.count)")
    #expect(long.line == 1)
  }
}
