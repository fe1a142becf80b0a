import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLStore
@testable import BatchDLTransfer

@Suite struct CacheControlTests {
  @Test func directivesAreReadWithoutRegardToCase() {
    let control = CacheControl("Max-Age=60, NO-CACHE, must-revalidate, private, s-maxage=5")
    #expect(control.maxAge == 60)
    #expect(control.noCache)
    #expect(control.mustRevalidate)
    #expect(!control.noStore)
  }

  @Test func quotedValuesAndCommasInsideQuotes() {
    let control = CacheControl(#"no-cache="set-cookie, x-private", max-age="30""#)
    #expect(control.noCache)
    #expect(control.maxAge == 30)
    #expect(CacheControl(#"community="no-store, x""#) == CacheControl(""))
  }

  @Test func maxAgeEdgeCases() {
    #expect(CacheControl("max-age=abc").maxAge == 0)
    #expect(CacheControl("max-age").maxAge == 0)
    #expect(CacheControl("max-age=10, max-age=20").maxAge == 10)
    #expect(CacheControl("max-age=99999999999999999999999").maxAge == 1 << 31)
    #expect(CacheControl("no-store").maxAge == nil)
  }

  @Test func everyFieldLineCounts() {
    let control = CacheControl(head(200, [("Cache-Control", "max-age=5"), ("Cache-Control", "no-store")]))
    #expect(control.maxAge == 5)
    #expect(control.noStore)
  }

  @Test func threeDateForms() {
    let expected = Date(timeIntervalSince1970: 784_111_777)
    #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
    #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
    #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
    #expect(HTTPDate.parse("Tue, 14 Nov 2023 22:13:20 GMT") == start)
    #expect(HTTPDate.parse(httpDate(at(86_400 * 400))) == at(86_400 * 400))
    #expect(HTTPDate.parse("Thu, 29 Feb 2024 00:00:00 GMT") == Date(timeIntervalSince1970: 1_709_164_800))
  }

  @Test func invalidDates() {
    for text in [
      "", "0", "-1", "tomorrow", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 CET",
      "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
      "Sun, 06 Nov 1994 8:49:37 GMT", "Sun Nov  6 08:49:37", "Fri, 29 Feb 2023 00:00:00 GMT",
    ] {
      #expect(HTTPDate.parse(text) == nil, "\(text)")
    }
  }

  @Test func lifetimeFromMaxAgeThenExpires() {
    let dated = head(200, [("Date", httpDate(start)), ("Expires", httpDate(at(100)))])
    #expect(Freshness.lifetime(of: dated, control: CacheControl(dated), stored: at(5)) == 100)
    var both = dated
    both.fields.append(("cache-control", "max-age=7"))
    #expect(Freshness.lifetime(of: both, control: CacheControl(both), stored: start) == 7)
    let undated = head(200, [("Expires", httpDate(at(100)))])
    #expect(Freshness.lifetime(of: undated, control: CacheControl(undated), stored: at(40)) == 60)
    let invalid = head(200, [("Date", httpDate(start)), ("Expires", "0")])
    #expect(Freshness.lifetime(of: invalid, control: CacheControl(invalid), stored: start) == 0)
    let past = head(200, [("Date", httpDate(start)), ("Expires", httpDate(at(-100)))])
    #expect(Freshness.lifetime(of: past, control: CacheControl(past), stored: start) == 0)
    let nothing = head(200, [("Last-Modified", httpDate(at(-1000)))])
    #expect(Freshness.lifetime(of: nothing, control: CacheControl(nothing), stored: start) == 0)
  }

  @Test func ageAddsTheAgeField() {
    #expect(Freshness.age(of: head(200, [("Age", "30")]), stored: start, now: at(10)) == 40)
    #expect(Freshness.age(of: head(200, [("Age", "junk")]), stored: start, now: at(10)) == 10)
    #expect(Freshness.age(of: head(), stored: start, now: at(-10)) == 0)
  }
}
