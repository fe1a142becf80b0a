/// A position in a source file, 1-based, as printed in `FILE:LINE:COLUMN` diagnostics.
public struct SourceMark: Hashable, Comparable, Sendable, CustomStringConvertible {
  /// The file as the user named it (relative to the working directory when it was given so).
  public var file: String
  public var line: Int
  public var column: Int

  public init(file: String, line: Int, column: Int) {
    self.file = file
    self.line = line
    self.column = column
  }

  /// The same position moved `count` characters to the right on its line.
  public func advanced(by count: Int) -> SourceMark {
    SourceMark(file: file, line: line, column: column + count)
  }

  public var description: String { "\(file):\(line):\(column)" }

  public static func < (lhs: SourceMark, rhs: SourceMark) -> Bool {
    if lhs.file != rhs.file { return lhs.file < rhs.file }
    if lhs.line != rhs.line { return lhs.line < rhs.line }
    return lhs.column < rhs.column
  }
}
