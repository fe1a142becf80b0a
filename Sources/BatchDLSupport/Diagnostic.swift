/// One problem found in a manifest or a `list:` file.
public struct Diagnostic: Hashable, Sendable, CustomStringConvertible {
  public enum Severity: String, Sendable {
    case error
    case warning
  }

  public var mark: SourceMark
  public var severity: Severity
  public var message: String

  public init(_ severity: Severity, at mark: SourceMark, _ message: String) {
    self.mark = mark
    self.severity = severity
    self.message = message
  }

  /// `FILE:LINE:COLUMN: error: message`, the form compilers and editors understand.
  public var description: String { "\(mark): \(severity.rawValue): \(message)" }
}
