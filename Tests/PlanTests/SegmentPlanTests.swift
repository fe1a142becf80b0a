import Foundation
import TestSupport
import Testing

@testable import BatchDL

/// `plan` shows a download's segments setting when it allows more than one connection.
@Suite struct SegmentPlanTests {
  @Test func aDownloadShowsItsSegmentsWhenMoreThanOne() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          network: {segments: 4}
          tasks:
            - download: https://h.test/a.iso
            - download: https://h.test/b.iso
              segments: 1
            - download: https://h.test/c.iso
              segments: 8
      """)
    let text = planned.text()
    let lines = text.split(separator: "\n").map(String.init)
    #expect(lines.contains { $0.contains("https://h.test/a.iso") && $0.contains(", segments 4") }, "\(text)")
    #expect(lines.contains { $0.contains("https://h.test/b.iso") && !$0.contains("segments") }, "\(text)")
    #expect(lines.contains { $0.contains("https://h.test/c.iso") && $0.contains(", segments 8") }, "\(text)")
    let json = planned.json()
    #expect(json.contains("\"segments\":4"))
    #expect(json.contains("\"segments\":8"))
    #expect(!json.contains("\"segments\":1"))
  }
}
