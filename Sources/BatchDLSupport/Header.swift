/// One HTTP header as the manifest gives it.
public struct Header: Hashable, Sendable {
  public var name: String
  public var value: String
  public var mark: SourceMark

  public init(name: String, value: String, mark: SourceMark) {
    self.name = name
    self.value = value
    self.mark = mark
  }
}

extension [Header] {
  /// These headers with `overrides` laid over them: a header of the same name (compared without
  /// case) is replaced, and keeps the later position. The one rule by which defaults, a session's
  /// headers and a task's headers combine.
  public func merged(with overrides: [Header]) -> [Header] {
    var result = self
    for header in overrides {
      let name = header.name.lowercased()
      result.removeAll { $0.name.lowercased() == name }
      result.append(header)
    }
    return result
  }
}
