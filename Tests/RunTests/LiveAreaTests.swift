import Foundation
import Testing

@testable import BatchDL

/// What a `LiveArea` writes, write by write, to a terminal whose size the test sets.
final class FakeTerminal: @unchecked Sendable {
  private let lock = NSLock()
  private var sizeNow: LiveArea.Size
  private var written: [String] = []

  init(columns: Int, rows: Int) {
    sizeNow = LiveArea.Size(columns: columns, rows: rows)
  }

  var size: LiveArea.Size {
    get { lock.withLock { sizeNow } }
    set { lock.withLock { sizeNow = newValue } }
  }

  var writes: [String] { lock.withLock { written } }

  func area() -> LiveArea {
    LiveArea(
      size: { self.size },
      output: { bytes in self.lock.withLock { self.written.append(String(decoding: bytes, as: UTF8.self)) } })
  }
}

@Suite struct LiveAreaTests {
  static let escape = "\u{1B}"

  /// The text lines of a frame, its escape sequences removed.
  func text(of frame: String) -> [String] {
    let plain = frame.replacing(#/\x1B\[[0-9?;]*[A-Za-z]/#, with: "")
    return plain.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map {
      $0.replacingOccurrences(of: "\r", with: "")
    }
  }

  @Test func eachFrameIsOneWriteThatRewritesItsLinesInPlace() {
    let terminal = FakeTerminal(columns: 120, rows: 40)
    let area = terminal.area()
    area.draw(["  one", "  two", "total"])
    area.draw(["  one!", "total"])
    let writes = terminal.writes
    #expect(writes.count == 2)
    #expect(
      writes[0]
        == "\(Self.escape)[?25l\r\(Self.escape)[?7l  one\(Self.escape)[K\n  two\(Self.escape)[K\ntotal\(Self.escape)[K\n\(Self.escape)[J\(Self.escape)[?7h\(Self.escape)[?25h"
    )
    // Back up over the three lines, each rewritten and erased to its end, the rest erased below.
    #expect(writes[1].hasPrefix("\(Self.escape)[?25l\r\(Self.escape)[3A\(Self.escape)[?7l  one!\(Self.escape)[K\n"))
    #expect(writes[1].hasSuffix("total\(Self.escape)[K\n\(Self.escape)[J\(Self.escape)[?7h\(Self.escape)[?25h"))
    // Never the whole screen, never the cursor's home.
    for write in writes {
      #expect(
        !write.contains("\(Self.escape)[2J") && !write.contains("\(Self.escape)[H")
          && !write.contains("\(Self.escape)[2K"))
    }
  }

  @Test func linesThatStayGoAboveTheBarsInTheSameWrite() {
    let terminal = FakeTerminal(columns: 40, rows: 10)
    let area = terminal.area()
    area.draw(["  bar", "total"])
    let long = "failed    out/x  http-500: " + String(repeating: "m", count: 60)
    area.print([long])
    let write = terminal.writes[1]
    // The old bars erased (the first row alone: never from the screen's top left corner), the whole
    // line (it may wrap: it stays), then the bars again.
    #expect(
      write.hasPrefix(
        "\(Self.escape)[?25l\r\(Self.escape)[2A\(Self.escape)[K\(Self.escape)[B\(Self.escape)[J\(Self.escape)[A" + long
          + "\n\(Self.escape)[?7l  bar"))
    #expect(text(of: write) == [long, "  bar", "total"])
  }

  @Test func barsAreCutToTheWidthAndFollowItsChanges() {
    let terminal = FakeTerminal(columns: 120, rows: 40)
    let area = terminal.area()
    let line = String(repeating: "x", count: 100)
    area.draw([line, line, "total"])
    #expect(text(of: terminal.writes[0]).map { $0.count } == [100, 100, 5])
    // Narrowed to 50: the two long lines the terminal rewrapped take two rows each.
    terminal.size = LiveArea.Size(columns: 50, rows: 40)
    area.draw([line, line, "total"])
    #expect(terminal.writes[1].contains("\(Self.escape)[5A"))
    #expect(
      text(of: terminal.writes[1]) == [
        String(repeating: "x", count: 48) + "…", String(repeating: "x", count: 48) + "…", "total",
      ])
    terminal.size = LiveArea.Size(columns: 80, rows: 40)
    area.draw(["total"])
    #expect(terminal.writes[2].contains("\(Self.escape)[3A"))
  }

  @Test func neverMoreLinesThanTheRowsAboveTheCursor() {
    let terminal = FakeTerminal(columns: 80, rows: 4)
    let area = terminal.area()
    area.draw((1...6).map { "  bar \($0)" } + ["total"])
    #expect(text(of: terminal.writes[0]) == ["  bar 5", "  bar 6", "total"])
  }

  @Test func theDisplayCountsTransfersItHasNoRowFor() {
    let display = ProgressDisplay(
      mode: .always, quiet: true, totalTasks: 16, area: FakeTerminal(columns: 80, rows: 40).area())
    let active = (1...16).map {
      ProgressDisplay.Line(name: "out/file-\($0 < 10 ? "0" : "")\($0).bin", received: 1000, expected: 4000)
    }
    let tall = display.frame(active: active, size: LiveArea.Size(columns: 80, rows: 40))
    #expect(tall.count == 10)
    #expect(tall[8] == "  … and 8 more")
    #expect(tall[0].hasPrefix("  [======                  ]  25% 1000 B     out/file-01.bin"))
    let short = display.frame(active: active, size: LiveArea.Size(columns: 80, rows: 6))
    #expect(short.count == 5)
    #expect(short[3] == "  … and 13 more")
    #expect(short[4].contains("0/16 tasks"))
    #expect(display.frame(active: active, size: LiveArea.Size(columns: 80, rows: 2)).count == 1)
  }

  @Test func longWideAndHostileIdsFitTheirLine() {
    let display = ProgressDisplay(
      mode: .always, quiet: true, totalTasks: 3, area: FakeTerminal(columns: 60, rows: 40).area())
    let long = "out/" + String(repeating: "deep/", count: 30) + "file.bin"
    let wide = "out/数据文件-日本語-ファイル-" + String(repeating: "字", count: 20) + ".bin"
    let hostile = "out/\u{1B}[2J\u{1B}]0;title\u{07}\r\u{202E}name.bin"
    let lines = display.frame(
      active: [long, wide, hostile].map { ProgressDisplay.Line(name: $0, received: 10, expected: -1) },
      size: LiveArea.Size(columns: 60, rows: 40))
    for line in lines {
      #expect(TerminalText.width(of: line) <= 59, "\(line)")
      #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x202E }, "\(line)")
    }
    #expect(lines.contains { $0.hasSuffix("…deep/file.bin") })
    #expect(lines.contains { $0.hasSuffix("字字.bin") && $0.contains("…") })
    #expect(lines.contains { $0.hasSuffix("…le???name.bin") })
  }

  @Test func widths() {
    #expect(TerminalText.width(of: "abc") == 3)
    #expect(TerminalText.width(of: "数据") == 4)
    #expect(TerminalText.width(of: "ｗｉｄｅ") == 8)
    #expect(TerminalText.width(of: "e\u{301}") == 1)
    #expect(TerminalText.width(of: "🙂") == 2)
    #expect(TerminalText.width(of: "\u{200B}") == 0)
    #expect(TerminalText.truncated("数据数据", to: 5) == "数据…")
    #expect(TerminalText.truncatedKeepingEnd("数据数据", to: 4) == "…据")
    #expect(TerminalText.sanitized("a\u{1B}b\u{9B}c\u{7F}") == "a?b?c?")
    // Invalid UTF-8 arrives decoded as U+FFFD, one cell.
    #expect(TerminalText.width(of: String(decoding: [0x61, 0xFF, 0x62] as [UInt8], as: UTF8.self)) == 3)
  }

  @Test func nothingIsDrawnAfterTheAreaCloses() {
    let terminal = FakeTerminal(columns: 80, rows: 24)
    let area = terminal.area()
    area.print(["plain"])
    #expect(terminal.writes == ["plain\n"])
    area.draw(["total"])
    area.clear(above: ["batchdl: stopped at once"], close: true)
    #expect(text(of: terminal.writes[2]) == ["batchdl: stopped at once"])
    area.draw(["total"])
    area.print(["late"])
    #expect(terminal.writes.count == 4)
    #expect(terminal.writes[3] == "late\n")
  }
}
