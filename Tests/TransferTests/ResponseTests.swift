import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLTransfer

@Suite struct ResponseTests {
  @Test func theLastResponseHeadWins() {
    var parser = ResponseHeadParser()
    for line in [
      "HTTP/1.1 302 Found\r\n", "Location: /x\r\n", "\r\n", "HTTP/1.1 200 OK\r\n", "Content-Type: text/plain\r\n",
      "ETag: \"abc\"\r\n", "Content-Length: 12\r\n", "\r\n",
    ] {
      var text = line
      text.withUTF8 { parser.consume(UnsafeRawBufferPointer($0)) }
    }
    #expect(parser.complete)
    #expect(parser.head.status == 200)
    #expect(parser.head.mediaType == "text/plain")
    #expect(parser.head.strongETag == "\"abc\"")
    #expect(parser.head.contentLength == 12)
    #expect(parser.head["location"] == nil)
  }

  @Test func headerLinesAreSplitOnTheFirstColonAndTrimmed() {
    var parser = ResponseHeadParser()
    for line in [
      "HTTP/1.1 200 OK\r\n", "X-Mixed-CASE:\t  spaced value \t\r\n", "Location: http://host:8080/a:b\n",
      "not a header line\r\n", "Empty:\r\n", "\r\n",
    ] {
      var text = line
      text.withUTF8 { parser.consume(UnsafeRawBufferPointer($0)) }
    }
    #expect(parser.complete)
    #expect(parser.head.fields.map(\.name) == ["x-mixed-case", "location", "empty"])
    #expect(parser.head["x-mixed-case"] == "spaced value")
    #expect(parser.head["location"] == "http://host:8080/a:b")
    #expect(parser.head["empty"] == "")
  }

  @Test(arguments: [
    ("HTTP/1.1 404 Not Found\r\n", 404, "Not Found"), ("HTTP/2 200\r\n", 200, ""),
    ("HTTP/1.1  503   Service  Unavailable \r\n", 503, "Service  Unavailable "), ("HTTP/1.0 abc\r\n", 0, ""),
  ])
  func statusLines(_ line: String, _ status: Int, _ reason: String) {
    var parser = ResponseHeadParser()
    var text = line
    text.withUTF8 { parser.consume(UnsafeRawBufferPointer($0)) }
    #expect(parser.head.status == status)
    #expect(parser.head.reason == reason)
  }

  @Test func weakTagsAndEncodedBodiesCannotValidateARange() {
    var head = ResponseHead()
    head.status = 200
    head.fields = [("etag", "W/\"x\""), ("content-encoding", "gzip")]
    #expect(head.strongETag == nil)
    #expect(head.encoding == "gzip")
  }

  @Test func contentRanges() {
    #expect(ContentRange("bytes 100-199/1000") == ContentRange("bytes 100-199/1000"))
    #expect(ContentRange("bytes 100-199/1000")?.start == 100)
    #expect(ContentRange("bytes 100-199/*")?.total == nil)
    #expect(ContentRange("bytes */1000") == nil)
    #expect(ContentRange("items 1-2/3") == nil)
  }

  @Test func onlyFailuresARetryCanFixAreRetried() {
    for code: FailureCode in [.connect, .dns, .timeout, .network] {
      #expect(FailureClassifier.isRetryable(TransferFailure(code: code, message: "")))
    }
    for status in [408, 429, 500, 503, 599] {
      #expect(FailureClassifier.isRetryable(TransferFailure(code: .http(status), message: "", status: status)))
    }
    for status in [400, 401, 403, 404, 410] {
      #expect(!FailureClassifier.isRetryable(TransferFailure(code: .http(status), message: "", status: status)))
    }
    for code: FailureCode in [.tls, .protocol, .checksumMismatch, .diskFull, .unsafePath] {
      #expect(!FailureClassifier.isRetryable(TransferFailure(code: code, message: "")))
    }
  }
}
