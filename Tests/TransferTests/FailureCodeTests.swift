import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLTransfer

@Suite struct FailureCodeTests {
  static let numbered: [FailureCode] = [.http(200), .http(404), .http(599), .curl(0), .curl(7), .curl(99)]

  @Test func everyCodeReadsBackFromItsString() {
    for code in FailureCode.named + Self.numbered {
      #expect(FailureCode(rawValue: code.rawValue) == code, "\(code)")
      #expect(code.description == code.rawValue)
    }
    #expect(Set((FailureCode.named).map(\.rawValue)).count == FailureCode.named.count)
  }

  @Test func theStringsAreTheOnesReportsWrite() {
    #expect(FailureCode.http(404).rawValue == "http-404")
    #expect(FailureCode.curl(56).rawValue == "curl-56")
    #expect(FailureCode.rangeMismatch.rawValue == "range-mismatch")
    #expect(FailureCode.protocol.rawValue == "protocol")
    #expect("\(TransferFailure(code: .diskFull, message: "no space"))" == "disk-full: no space")
  }

  @Test func otherStringsAreNoCode() {
    for text in ["", "http-", "http-x", "http-007", "curl-", "curl-+1", "HTTP-404", "range_mismatch", "failed"] {
      #expect(FailureCode(rawValue: text) == nil, "\(text)")
    }
  }

  /// docs/run.md's table of error codes names every code, and only those.
  @Test func theDocumentedCodesAreTheCodes() throws {
    let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("docs/run.md")
    let text = try String(contentsOf: docs, encoding: .utf8)
    let table =
      try #require(text.components(separatedBy: "## Error codes").dropFirst().first)
      .components(separatedBy: "\n\n").dropFirst().first ?? ""
    var documented: Set<String> = []
    for line in table.split(separator: "\n") where line.hasPrefix("| `") {
      let first = line.split(separator: "|").first ?? ""
      for name in first.split(separator: "`") where !name.contains(",") && !name.allSatisfy(\.isWhitespace) {
        documented.insert(String(name))
      }
    }
    let named = Set(FailureCode.named.map(\.rawValue))
    #expect(documented.subtracting(["http-NNN", "curl-N"]) == named)
    #expect(documented.isSuperset(of: ["http-NNN", "curl-N"]))
  }
}
