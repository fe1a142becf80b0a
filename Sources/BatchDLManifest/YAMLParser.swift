import BatchDLSupport
import CYAML

#if canImport(Glibc)
  import Glibc
#endif

/// Reads one YAML document into a `YAMLNode` tree with libyaml's event API.
///
/// Duplicate keys, non-string keys, unknown anchors, more than one document, nesting deeper than
/// `maxDepth` and aliases that would expand past `maxAliasExpansion` nodes are reported as
/// diagnostics. A syntax error stops the parse (libyaml cannot go on after one); everything else is
/// collected.
public struct YAMLParser {
  /// How many nodes aliases may add when expanded, across the whole document.
  public var maxAliasExpansion = 100_000
  /// How deeply collections may nest.
  public var maxDepth = 64

  public init() {}

  /// A collection being read; a class so that appending to the top of the stack never copies.
  private final class Frame {
    let isMapping: Bool
    let mark: SourceMark
    let anchor: String?
    var items: [YAMLNode] = []
    var entries: [(key: YAMLNode, value: YAMLNode)] = []
    var pendingKey: YAMLNode?
    var weight = 1

    init(isMapping: Bool, mark: SourceMark, anchor: String?) {
      self.isMapping = isMapping
      self.mark = mark
      self.anchor = anchor
    }
  }

  private struct Abort: Error {}

  /// Parses `bytes`, naming positions after `file`. Returns nil when nothing usable was read.
  public func parse(_ bytes: [UInt8], file: String, diagnostics: inout Diagnostics) -> YAMLNode? {
    var state = State(file: file, limits: self, bytes: bytes)
    var parser = yaml_parser_t()
    guard yaml_parser_initialize(&parser) != 0 else {
      diagnostics.error(SourceMark(file: file, line: 1, column: 1), "out of memory reading YAML")
      return nil
    }
    defer { yaml_parser_delete(&parser) }
    let root: YAMLNode? = bytes.withUnsafeBufferPointer { buffer in
      yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
      do {
        return try state.run(&parser)
      } catch {
        return nil
      }
    }
    diagnostics.append(contentsOf: state.diagnostics)
    return root
  }

  private struct State {
    let file: String
    let limits: YAMLParser
    let bytes: [UInt8]
    /// Where each line starts in `bytes`, built the first time a scalar's source is needed.
    var lineStarts: [Int] = []
    var diagnostics = Diagnostics()
    var stack: [Frame] = []
    var anchors: [String: YAMLNode] = [:]
    var aliasExpansion = 0
    var documents = 0
    var root: YAMLNode?

    init(file: String, limits: YAMLParser, bytes: [UInt8]) {
      self.file = file
      self.limits = limits
      self.bytes = bytes
    }

    /// The text between two marks on the same line as written, or nil when it cannot be told.
    mutating func source(from start: yaml_mark_t, to end: yaml_mark_t) -> String? {
      guard start.line == end.line, start.column <= end.column else { return nil }
      if lineStarts.isEmpty {
        lineStarts = [0]
        for (index, byte) in bytes.enumerated() where byte == 0x0A { lineStarts.append(index + 1) }
      }
      let line = Int(start.line)
      guard line < lineStarts.count else { return nil }
      let lineEnd = line + 1 < lineStarts.count ? lineStarts[line + 1] : bytes.count
      var scalars = Substring(String(decoding: bytes[lineStarts[line]..<lineEnd], as: UTF8.self)).unicodeScalars
      if line == 0, scalars.first == "\u{FEFF}" { scalars = scalars.dropFirst() }
      let from = Int(start.column)
      let count = Int(end.column) - from
      guard from + count <= scalars.count else { return nil }
      return String(String.UnicodeScalarView(scalars.dropFirst(from).prefix(count)))
    }

    func mark(_ m: yaml_mark_t) -> SourceMark {
      SourceMark(file: file, line: Int(m.line) + 1, column: Int(m.column) + 1)
    }

    static func text(_ pointer: UnsafeMutablePointer<yaml_char_t>?, length: Int? = nil) -> String? {
      guard let pointer else { return nil }
      let count = length ?? strlen(UnsafeRawPointer(pointer).assumingMemoryBound(to: CChar.self))
      return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    mutating func run(_ parser: inout yaml_parser_t) throws -> YAMLNode? {
      var event = yaml_event_t()
      while true {
        guard yaml_parser_parse(&parser, &event) != 0 else {
          reportSyntaxError(parser)
          throw Abort()
        }
        defer { yaml_event_delete(&event) }
        let start = mark(event.start_mark)
        switch event.type {
        case YAML_STREAM_END_EVENT:
          return root
        case YAML_DOCUMENT_START_EVENT:
          documents += 1
          if documents > 1 {
            diagnostics.error(
              start,
              "a manifest holds one YAML document; remove this `---` and what follows, or split it into another file")
            throw Abort()
          }
        case YAML_SCALAR_EVENT:
          let scalar = event.data.scalar
          let value = Self.text(scalar.value, length: scalar.length) ?? ""
          let tag = Self.text(scalar.tag)
          let plain =
            scalar.style == YAML_PLAIN_SCALAR_STYLE
            && tag != "tag:yaml.org,2002:str"
          // Expansion problems point into the scalar: keep its source when it may have one.
          var source = value.contains("${") ? self.source(from: event.start_mark, to: event.end_mark) : nil
          let quoted = { (text: String) in text.last == "\"" || text.last == "'" }
          if let written = source,
            scalar.style == YAML_PLAIN_SCALAR_STYLE ? !written.hasSuffix(value) : !quoted(written)
          {
            source = nil
          }
          let node = YAMLNode(.scalar(value, plain: plain), mark: start, weight: 1, source: source)
          if let anchor = Self.text(scalar.anchor) { anchors[anchor] = node }
          try add(node)
        case YAML_ALIAS_EVENT:
          let name = Self.text(event.data.alias.anchor) ?? ""
          guard let target = anchors[name] else {
            diagnostics.error(start, "unknown alias *\(name): define the anchor &\(name) before using it")
            throw Abort()
          }
          let (sum, overflow) = aliasExpansion.addingReportingOverflow(target.weight)
          aliasExpansion = overflow ? Int.max : sum
          if aliasExpansion > limits.maxAliasExpansion {
            diagnostics.error(
              start,
              "aliases expand to more than \(limits.maxAliasExpansion) nodes; the manifest is too large or is an alias bomb"
            )
            throw Abort()
          }
          try add(target)
        case YAML_SEQUENCE_START_EVENT:
          try push(Frame(isMapping: false, mark: start, anchor: Self.text(event.data.sequence_start.anchor)))
        case YAML_MAPPING_START_EVENT:
          try push(Frame(isMapping: true, mark: start, anchor: Self.text(event.data.mapping_start.anchor)))
        case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
          guard let frame = stack.popLast() else { throw Abort() }
          let node =
            frame.isMapping
            ? YAMLNode(.mapping(applyMerges(frame.entries)), mark: frame.mark, weight: frame.weight)
            : YAMLNode(.sequence(frame.items), mark: frame.mark, weight: frame.weight)
          if let anchor = frame.anchor { anchors[anchor] = node }
          try add(node)
        default:
          break
        }
      }
    }

    mutating func push(_ frame: Frame) throws {
      if stack.count >= limits.maxDepth {
        diagnostics.error(frame.mark, "collections nest more than \(limits.maxDepth) levels deep")
        throw Abort()
      }
      stack.append(frame)
    }

    mutating func add(_ node: YAMLNode) throws {
      guard let top = stack.last else {
        root = node
        return
      }
      let (sum, overflow) = top.weight.addingReportingOverflow(node.weight)
      top.weight = overflow ? Int.max : sum
      if !top.isMapping {
        top.items.append(node)
      } else if let key = top.pendingKey {
        top.entries.append((key: key, value: node))
        top.pendingKey = nil
      } else {
        checkKey(node, against: top.entries)
        top.pendingKey = node
      }
    }

    /// Reports a mapping key that is not a string, or that repeats an earlier key.
    mutating func checkKey(_ key: YAMLNode, against entries: [(key: YAMLNode, value: YAMLNode)]) {
      guard let name = key.scalar else {
        diagnostics.error(key.mark, "mapping keys must be strings, found \(key.kindName)")
        return
      }
      if Self.isMergeKey(key) { return }
      if let first = entries.first(where: { $0.key.scalar == name }) {
        diagnostics.error(
          key.mark,
          "duplicate key '\(name)' (first defined at line \(first.key.mark.line), column \(first.key.mark.column))")
      }
    }

    /// Applies YAML merge keys (`<<: *anchor` or `<<: [*a, *b]`): merged entries never override
    /// explicit ones, and earlier merged mappings win over later ones.
    mutating func applyMerges(_ entries: [(key: YAMLNode, value: YAMLNode)]) -> [(key: YAMLNode, value: YAMLNode)] {
      guard entries.contains(where: { Self.isMergeKey($0.key) }) else { return entries }
      var result = entries.filter { !Self.isMergeKey($0.key) }
      var present = Set(result.compactMap { $0.key.scalar })
      for entry in entries where Self.isMergeKey(entry.key) {
        let sources: [YAMLNode]
        switch entry.value.content {
        case .mapping: sources = [entry.value]
        case .sequence(let items): sources = items
        case .scalar:
          diagnostics.error(
            entry.value.mark, "a merge key (<<) takes a mapping or a list of mappings, found \(entry.value.kindName)")
          continue
        }
        for source in sources {
          guard case .mapping(let merged) = source.content else {
            diagnostics.error(source.mark, "a merge key (<<) takes mappings, found \(source.kindName)")
            continue
          }
          for item in merged {
            guard let name = item.key.scalar, !present.contains(name) else { continue }
            present.insert(name)
            result.append(item)
          }
        }
      }
      return result
    }

    static func isMergeKey(_ node: YAMLNode) -> Bool {
      if case .scalar("<<", plain: true) = node.content { return true }
      return false
    }

    mutating func reportSyntaxError(_ parser: yaml_parser_t) {
      let problem =
        Self.text(
          UnsafeMutablePointer(mutating: parser.problem).map {
            UnsafeMutableRawPointer($0).assumingMemoryBound(to: yaml_char_t.self)
          }) ?? "syntax error"
      var message = "YAML syntax error: \(problem)"
      if let context = Self.text(
        UnsafeMutablePointer(mutating: parser.context).map {
          UnsafeMutableRawPointer($0).assumingMemoryBound(to: yaml_char_t.self)
        })
      {
        message += " (\(context) at line \(parser.context_mark.line + 1), column \(parser.context_mark.column + 1))"
      }
      diagnostics.error(mark(parser.problem_mark), message)
    }
  }
}
