/// One diagnostic a test expects: its position (`LINE:COLUMN`, or `FILE:LINE:COLUMN` for list files),
/// its severity and words its message must contain.
public struct Expected: CustomStringConvertible, Sendable {
  public var position: String
  public var words: [String]
  public var severity: String

  public init(_ position: String, _ words: String..., severity: String = "error") {
    self.position = position
    self.words = words
    self.severity = severity
  }

  public var description: String { "\(position): \(severity): …\(words.joined(separator: "…"))…" }
}
