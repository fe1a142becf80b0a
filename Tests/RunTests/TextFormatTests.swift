import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLSupport

@Suite struct TextFormatTests {
  @Test func numbersReadAsPrintfWritesThem() {
    var generator = SystemRandomNumberGenerator()
    var values: [Double] = [
      0, -0.0, 0.05, 0.25, 0.35, 1.45, 2.5, 3.5, 0.5, 1.5, 99.95, 1023.96, 123_456.789, -3.25, -0.01, 0.0005,
      1e-300, .leastNonzeroMagnitude, 1e15, 4503599627370495.5, 9007199254740991, 1e20, .infinity, -.infinity, .nan,
    ]
    for _ in 0..<2000 {
      values.append(Double.random(in: 0..<2048, using: &generator))
      values.append(Double(Int.random(in: 0..<100_000, using: &generator)) / 8)
      values.append(Double(Int.random(in: 0..<1_000_000, using: &generator)) / 1024)
    }
    for value in values {
      for decimals in 0...3 {
        #expect(TextFormat.fixed(value, decimals: decimals) == String(format: "%.\(decimals)f", value))
      }
    }
    #expect(TextFormat.rightAligned(7, width: 3) == String(format: "%3d", 7))
    #expect(TextFormat.rightAligned(1234, width: 3) == "1234")
    #expect(TextFormat.zeroPadded(5, width: 2) == "05")
    #expect(TextFormat.padded("done", to: 9) == "done".padding(toLength: 9, withPad: " ", startingAt: 0))
    #expect(TextFormat.padded("cancelled!", to: 9) == "cancelled")
  }
}
