import Foundation
import Testing

@testable import BatchDLTransfer

/// HTTP-dates from servers: the IMF-fixdate read from its bytes gives what the general reading
/// gives, and text that only looks like one is refused.
@Suite struct HTTPDateTests {
  @Test(
    arguments: [
      ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777.0),
      ("sun, 06 nov 1994 08:49:37 gmt", 784_111_777.0),
      ("Thu, 29 Feb 2024 23:59:60 GMT", 1_709_251_200.0),
      ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777.0),
      ("Sun Nov  6 08:49:37 1994", 784_111_777.0),
      // Spaces and tabs between the parts are read as one separator, as before.
      ("Sun, 06 Nov 1994 08:49:37 GMT ", 784_111_777.0),
      ("Sun,\t06 Nov 1994 08:49:37 GMT", 784_111_777.0),
    ])
  func readsEachForm(_ text: String, seconds: Double) {
    #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == seconds)
  }

  @Test(
    arguments: [
      "Thu, 30 Feb 2023 08:49:37 GMT", "Sun, 06 Nov 1994 24:49:37 GMT", "Sun, 06 Xyz 1994 08:49:37 GMT",
      "Sun, 06 Nov 1994 08:49:37 UTC", "S n, 06 Nov 1994 08:49:37 GMT", "Sun, 0a Nov 1994 08:49:37 GMT",
      "", "Sun, 06 Nov 1994 08:4:377 GMT",
    ])
  func refusesWhatIsNotADate(_ text: String) {
    #expect(HTTPDate.parse(text) == nil)
  }
}
