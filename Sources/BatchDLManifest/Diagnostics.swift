import BatchDLSupport

/// Collects every problem found while reading a manifest, so that all of them can be reported at once.
public struct Diagnostics: Sendable {
  public private(set) var items: [Diagnostic] = []

  public init() {}

  public mutating func error(_ mark: SourceMark, _ message: String) {
    items.append(Diagnostic(.error, at: mark, message))
  }

  public mutating func warning(_ mark: SourceMark, _ message: String) {
    items.append(Diagnostic(.warning, at: mark, message))
  }

  public mutating func append(contentsOf other: Diagnostics) {
    items.append(contentsOf: other.items)
  }

  public mutating func append(contentsOf other: [Diagnostic]) {
    items.append(contentsOf: other)
  }

  public var hasErrors: Bool { items.contains { $0.severity == .error } }

  public var errorCount: Int { items.count { $0.severity == .error } }

  /// The problems in order of position (file, line, column); ties keep the order they were found in.
  /// A problem found more than once (a value shared through an alias is checked wherever it is used)
  /// is listed once.
  public var sorted: [Diagnostic] {
    var seen = Set<Diagnostic>()
    return items.enumerated().sorted { lhs, rhs in
      if lhs.element.mark != rhs.element.mark { return lhs.element.mark < rhs.element.mark }
      return lhs.offset < rhs.offset
    }.map(\.element).filter { seen.insert($0).inserted }
  }
}

/// A manifest that cannot be used; carries every problem found in it.
public struct ManifestError: Error, CustomStringConvertible {
  public var diagnostics: [Diagnostic]

  public init(diagnostics: [Diagnostic]) {
    self.diagnostics = diagnostics
  }

  public var description: String {
    diagnostics.map(\.description).joined(separator: "\n")
  }
}
