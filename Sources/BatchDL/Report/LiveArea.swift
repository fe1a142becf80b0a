import BatchDLSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The bars' lines at the bottom of a terminal, redrawn in place. Every change is one `write`:
/// the cursor goes back up over the lines drawn last, each bar line is rewritten and erased to its
/// end (`ESC[K`), and what is left below is erased (`ESC[J`); the screen is never cleared (and
/// never erased from its top left corner, which tmux would take for a clear and copy to its
/// scrollback). Lines that stay (finished tasks, notes) replace the bars first, and the bars follow
/// them in the same write. Bar lines are cut to the terminal's width (asked at every frame, so a
/// resized terminal is followed) and never wrap, which would shift every later frame; there are
/// never more of them than the terminal has rows. The cursor is hidden and line wrapping turned
/// off only inside a frame's write, so the terminal is in its own state between frames: an
/// interrupt, a kill or a crash cannot leave it changed.
///
/// Shared with the signal handler's thread (an interrupt's message is printed above the bars), so
/// every use takes the lock.
public final class LiveArea: @unchecked Sendable {
  /// A terminal's size in character cells.
  public struct Size: Sendable, Equatable {
    public var columns: Int
    public var rows: Int

    public init(columns: Int, rows: Int) {
      self.columns = columns
      self.rows = rows
    }
  }

  private let lock = NSLock()
  private let output: @Sendable ([UInt8]) -> Void
  private let measure: @Sendable () -> Size
  /// The bar lines as last given (their text, not yet cut to a width).
  private var lines: [String] = []
  /// The width in cells of each line as it is on the screen.
  private var drawnWidths: [Int] = []
  /// Set once the run's output ends: nothing is drawn after.
  private var closed = false

  /// An area that writes with `output` and asks `size` for the terminal's size.
  public init(size: @escaping @Sendable () -> Size, output: @escaping @Sendable ([UInt8]) -> Void) {
    measure = size
    self.output = output
  }

  /// The area on file descriptor `descriptor` (standard error).
  public convenience init(descriptor: Int32) {
    self.init(
      size: { Self.size(of: descriptor) },
      output: { bytes in _ = bytes.withUnsafeBytes { SystemCalls.writeAll(descriptor, $0) } })
  }

  /// The terminal's size, or 80 by 24 when `descriptor` is not a terminal (`--progress always`
  /// into a file).
  static func size(of descriptor: Int32) -> Size {
    var size = winsize()
    guard ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else {
      return Size(columns: 80, rows: 24)
    }
    return Size(columns: Int(size.ws_col), rows: Int(size.ws_row))
  }

  /// The terminal's size now.
  public var size: Size { measure() }

  /// Prints `above` (lines that scroll up and stay) and draws `lines` as the bars.
  public func draw(_ lines: [String], above: [String] = []) {
    lock.lock()
    defer { lock.unlock() }
    guard !closed else { return }
    self.lines = lines
    output(frame(above: above, bars: lines))
  }

  /// Prints `above` above the bars, which are drawn again below it (with nothing drawn, the lines
  /// are written as they are).
  public func print(_ above: [String]) {
    lock.lock()
    defer { lock.unlock() }
    if drawnWidths.isEmpty || closed {
      output(plain(above))
    } else {
      output(frame(above: above, bars: lines))
    }
  }

  /// Erases the bars (after printing `above`); with `close`, for good.
  public func clear(above: [String] = [], close: Bool = false) {
    lock.lock()
    defer { lock.unlock() }
    if close { closed = true }
    lines = []
    if drawnWidths.isEmpty {
      if !above.isEmpty { output(plain(above)) }
    } else {
      output(frame(above: above, bars: []))
    }
  }

  /// `lines` as they are, with no bars on the screen.
  private func plain(_ lines: [String]) -> [UInt8] {
    Array(lines.map { TerminalText.sanitized($0) + "\n" }.joined().utf8)
  }

  /// One frame's bytes; records what it leaves on the screen.
  private func frame(above: [String], bars: [String]) -> [UInt8] {
    let size = measure()
    let columns = max(1, size.columns)
    // A line is cut to one cell less than the width: a line that fills the last column leaves some
    // terminals about to wrap.
    let width = max(1, columns - 1)
    // The cursor's line stays free below the bars, so that the bars never scroll.
    let shown = bars.suffix(max(0, size.rows - 1))
    // A narrower terminal may have wrapped the lines drawn last (most terminals reflow).
    let up = drawnWidths.reduce(0) { $0 + max(1, ($1 + columns - 1) / columns) }
    var text = "\u{1B}[?25l\r"
    if up > 0 { text += "\u{1B}[\(up)A" }
    let eraseFirst = !above.isEmpty || shown.isEmpty
    if eraseFirst {
      // Lines that stay may wrap: the old bars are erased first, then each line is written whole.
      // Erasing to the end of the screen from its top left corner would clear the whole screen,
      // which tmux (scroll-on-clear) first copies into the scrollback: the first row is erased on
      // its own, the rest from the row below (which exists: the cursor was below the bars).
      text += up > 0 ? "\u{1B}[K\u{1B}[B\u{1B}[J\u{1B}[A" : "\u{1B}[K"
      for line in above { text += TerminalText.sanitized(line) + "\n" }
    }
    text += "\u{1B}[?7l"
    drawnWidths = []
    for line in shown {
      let fitted = TerminalText.truncated(TerminalText.sanitized(line), to: width)
      drawnWidths.append(TerminalText.width(of: fitted))
      text += fitted + "\u{1B}[K\n"
    }
    // What the last bars left below the new ones (the cursor is past a line here, never at the top).
    if !eraseFirst { text += "\u{1B}[J" }
    text += "\u{1B}[?7h\u{1B}[?25h"
    return Array(text.utf8)
  }
}

/// Text for a terminal: control characters replaced, widths in cells, cut to a width.
public enum TerminalText {
  /// `text` with control characters (escape sequences, carriage returns, bidirectional overrides)
  /// replaced by `?`: a name or a server's message cannot move the cursor or change the terminal.
  public static func sanitized(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: isControl) else { return text }
    var scalars = String.UnicodeScalarView()
    for scalar in text.unicodeScalars { scalars.append(isControl(scalar) ? "?" : scalar) }
    return String(scalars)
  }

  private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0..<0x20, 0x7F..<0xA0, 0x202A...0x202E, 0x2066...0x2069: return true
    default: return false
    }
  }

  /// The cells `text` takes on a terminal: two for East Asian wide characters and emoji, none for
  /// combining marks and zero-width characters, one for the rest.
  public static func width<S: StringProtocol>(of text: S) -> Int {
    text.reduce(0) { $0 + width(of: $1) }
  }

  /// The cells one character (grapheme cluster) takes.
  public static func width(of character: Character) -> Int {
    guard let first = character.unicodeScalars.first else { return 0 }
    if first.properties.isEmojiPresentation || isWide(first.value) { return 2 }
    if character.unicodeScalars.contains("\u{FE0F}") && first.properties.isEmoji { return 2 }
    switch first.properties.generalCategory {
    case .nonspacingMark, .enclosingMark, .format: return 0
    default: return 1
    }
  }

  /// East Asian Wide and Fullwidth blocks (Unicode's EastAsianWidth.txt, W and F).
  private static func isWide(_ value: UInt32) -> Bool {
    switch value {
    case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
      0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19,
      0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF,
      0x20000...0x2FFFD, 0x30000...0x3FFFD:
      return true
    default:
      return false
    }
  }

  /// `text` cut to at most `columns` cells, its end replaced by `…` when it is cut.
  public static func truncated(_ text: String, to columns: Int) -> String {
    guard width(of: text) > columns else { return text }
    guard columns > 0 else { return "" }
    var result = ""
    var used = 0
    for character in text {
      let cells = width(of: character)
      if used + cells > columns - 1 { break }
      result.append(character)
      used += cells
    }
    return result + "…"
  }

  /// `text` cut to at most `columns` cells, its start replaced by `…` when it is cut: a path keeps
  /// its file name.
  public static func truncatedKeepingEnd(_ text: String, to columns: Int) -> String {
    guard width(of: text) > columns else { return text }
    guard columns > 0 else { return "" }
    var kept: [Character] = []
    var used = 0
    for character in text.reversed() {
      let cells = width(of: character)
      if used + cells > columns - 1 { break }
      kept.append(character)
      used += cells
    }
    return "…" + String(kept.reversed())
  }
}
