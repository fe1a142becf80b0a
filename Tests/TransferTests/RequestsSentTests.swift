import Testing

@testable import BatchDLTransfer

/// Whether a transfer counts as a request sent (`summary.requests`), from what libcurl says of it
/// when it leaves the engine: finished, failed, or cut by a signal.
@Suite struct RequestsSentTests {
  @Test(arguments: [
    // (request bytes, status, redirects followed) → requests
    (0, 0, 0, 0),  // no connection: nothing went out
    (0, 0, 2, 0),  // nothing went out, whatever the counter says
    (312, 0, 0, 1),  // sent, cut before any answer (a signal, a timeout)
    (312, 200, 0, 1),  // sent and answered, or cut in its body
    (0, 206, 0, 1),  // answered (a response proves a request)
    (900, 200, 2, 3),  // two redirects libcurl followed itself
    (312, 302, -1, 1),  // a negative counter counts no redirect
  ])
  func counts(_ item: (Int, Int, Int, Int)) {
    #expect(Engine.requestsSent(requestBytes: item.0, status: item.1, redirects: item.2) == item.3)
  }
}
