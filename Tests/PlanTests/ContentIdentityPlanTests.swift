import Foundation
import Testing

@testable import BatchDL

/// Downloads that expect the same SHA-256 are one content: one request, from the union of their
/// sources.
@Suite struct ContentIdentityPlanTests {
  static let digest = String(repeating: "ab", count: 32)

  @Test func downloadsExpectingOneDigestAreOneRequest() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://a.test/x.iso
              to: one/x.iso
              sha256: \(Self.digest)
            - download: https://b.test/pub/x.iso
              to: two/x.iso
              sha256: \(Self.digest.uppercased())
              mirrors: [https://c.test/x.iso]
            - download: https://d.test/y.iso
              to: y.iso
              sha256: \(String(repeating: "cd", count: 32))
      """)
    #expect(planned.plan.requests.count == 2)
    let request = try #require(planned.request("https://a.test/x.iso"))
    #expect(request.taskCount == 2)
    #expect(request.mirrors.map(planned.plan.text.string) == ["https://b.test/pub/x.iso", "https://c.test/x.iso"])
    #expect(planned.text().contains("3 tasks → 2 requests"))
    #expect(planned.orderedTasks.contains(["one/x.iso", "two/x.iso"]))
  }

  @Test func otherHeadersOrSessionsOrKindsStayApart() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://a.test/x.iso
              to: one/x.iso
              sha256: \(Self.digest)
            - download: https://b.test/x.iso
              to: two/x.iso
              sha256: \(Self.digest)
              headers: {Authorization: "Bearer t"}
        t:
          tasks:
            - download: https://c.test/x.iso
              to: three/x.iso
              sha256: \(Self.digest)
      """)
    #expect(planned.plan.requests.count == 3)
    #expect(planned.plan.requests.allSatisfy { $0.mirrors.isEmpty })
  }
}
