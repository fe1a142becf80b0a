import CCurl
import Testing

@testable import BatchDLTransfer

/// A response head past libcurl's limits is `bad-response`, tried once, whichever HTTP carried it;
/// the same libcurl codes for other reasons, or after the head, stay what they were.
@Suite struct HeadLimitTests {
  @Test(
    arguments: [
      // code, libcurl's words, in the head → failure code, retried
      (CURLE_OUT_OF_MEMORY, "Out of memory", true, "bad-response", false),
      (CURLE_RECV_ERROR, "Too large response headers: 308941 > 307200", true, "bad-response", false),
      (
        CURLE_RECV_ERROR,
        "h2_process_pending_input: nghttp2_session_mem_recv() returned -902:The user callback function failed", true,
        "bad-response", false
      ),
      (
        CURLE_RECV_ERROR,
        "h2_process_pending_input: nghttp2_session_mem_recv() returned -902:The user callback function failed", false,
        "network", true
      ),
      (CURLE_RECV_ERROR, "Connection reset by peer", true, "network", true),
      (CURLE_RECV_ERROR, "Too large response headers: 308941 > 307200", false, "network", true),
      (CURLE_OUT_OF_MEMORY, "Out of memory", false, "internal", false),
      (CURLE_HTTP2_STREAM, "HTTP/2 stream 1 was not closed cleanly: INTERNAL_ERROR (err 2)", true, "network", true),
    ] as [(CURLcode, String, Bool, String, Bool)])
  func aHeadPastTheLimitIsABadResponse(code: CURLcode, message: String, inHead: Bool, expected: String, retried: Bool) {
    let failure = FailureClassifier.classify(code, message: message, inHead: inHead)
    #expect(failure.code.description == expected, "\(failure)")
    #expect(FailureClassifier.isRetryable(failure) == retried)
    if expected == "bad-response" { #expect(failure.message.hasPrefix(FailureClassifier.headTooLarge)) }
  }
}
