import BatchDLSupport

/// A node of a parsed YAML document, with the position it was read from.
///
/// Nodes are reference types so that an alias shares the node its anchor names instead of copying
/// it; `weight` counts the nodes of the subtree as if every alias inside it were expanded, which is
/// what bounds alias expansion.
public final class YAMLNode {
  public enum Content {
    /// A scalar's text; `plain` is false for quoted and block scalars and for explicit `!!str` tags,
    /// which are always strings.
    case scalar(String, plain: Bool)
    case sequence([YAMLNode])
    /// Entries in document order; merge keys (`<<`) are already applied.
    case mapping([(key: YAMLNode, value: YAMLNode)])
  }

  public let content: Content
  public let mark: SourceMark
  public let weight: Int
  /// A scalar as written from its mark (anchor, tag, quotes and escapes included) when it holds `${`
  /// and sits on one line: what maps a position in its text back to a column.
  public let source: String?

  package init(_ content: Content, mark: SourceMark, weight: Int, source: String? = nil) {
    self.content = content
    self.mark = mark
    self.weight = weight
    self.source = source
  }

  /// Columns from the node's mark to character `offset` of its scalar text: exact for scalars on one
  /// line (escapes in quoted ones counted as written), 0 when it spans lines.
  public func sourceColumns(to offset: Int) -> Int {
    guard let source = source.map(Array.init) else { return 0 }
    var start = 0
    while start < source.count, source[start] == "&" || source[start] == "!" {
      while start < source.count, source[start] != " " && source[start] != "\t" { start += 1 }
      while start < source.count, source[start] == " " || source[start] == "\t" { start += 1 }
    }
    guard start < source.count else { return 0 }
    let quote = source[start]
    guard quote == "\"" || quote == "'" else { return start + offset }
    var index = start + 1
    for _ in 0..<offset where index < source.count {
      if quote == "\"", source[index] == "\\", index + 1 < source.count {
        switch source[index + 1] {
        case "x": index += 4
        case "u": index += 6
        case "U": index += 10
        default: index += 2
        }
      } else if quote == "'", source[index] == "'" {
        index += 2
      } else {
        index += 1
      }
    }
    return index
  }

  /// The scalar's text, if this is a scalar.
  public var scalar: String? {
    if case .scalar(let text, _) = content { return text }
    return nil
  }

  /// True for `~`, `null`, `Null`, `NULL` and an empty plain scalar.
  public var isNull: Bool {
    guard case .scalar(let text, let plain) = content, plain else { return false }
    return text.isEmpty || text == "~" || text == "null" || text == "Null" || text == "NULL"
  }

  /// A short name of what this node is, for error messages ("a mapping", "a list", "a string").
  public var kindName: String {
    switch content {
    case .scalar: return isNull ? "nothing (null)" : "a scalar"
    case .sequence: return "a list"
    case .mapping: return "a mapping"
    }
  }

  /// The value under `key` in a mapping node.
  public subscript(key: String) -> YAMLNode? {
    guard case .mapping(let entries) = content else { return nil }
    return entries.first { $0.key.scalar == key }?.value
  }
}
