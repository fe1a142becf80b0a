import BatchDLSupport

/// Scalars and shapes: strings, numbers, sizes, durations and choices, each reported where it is
/// wrong; mappings and their keys.
extension ManifestDecoder {
  package mutating func checkKeys(
    _ entries: [(key: YAMLNode, value: YAMLNode)], known: [String], in place: String, extra: [String: String] = [:]
  ) {
    for (key, _) in entries {
      guard let name = key.scalar, !known.contains(name) else { continue }
      if let why = extra[name] {
        diagnostics.error(key.mark, "'\(name)' is not allowed in \(place): \(why)")
      } else {
        diagnostics.error(key.mark, "unknown key '\(name)' in \(place)\(Suggestions.hint(for: name, in: known))")
      }
    }
  }

  package mutating func mapping(_ node: YAMLNode, what: String) -> [(key: YAMLNode, value: YAMLNode)]? {
    if case .mapping(let entries) = node.content { return entries }
    diagnostics.error(node.mark, "\(what) must be a mapping (key: value lines), found \(node.kindName)")
    return nil
  }

  package mutating func string(_ node: YAMLNode, what: String, expand: Expansion = .none) -> String? {
    guard case .scalar(let text, _) = node.content, !node.isNull else {
      diagnostics.error(node.mark, "\(what) must be a string, found \(node.kindName)")
      return nil
    }
    guard expand != .none else { return text }
    switch EnvironmentExpansion.expand(text, environment: environment, directory: absoluteDirectory) {
    case .success(let result):
      if expand == .secret {
        for secret in result.substituted where !secrets.contains(secret) { secrets.append(secret) }
      } else {
        for variable in result.substituted { pathVariables.insert(variable.name) }
      }
      return result.text
    case .failure(let problem):
      diagnostics.error(node.mark.advanced(by: node.sourceColumns(to: problem.offset)), problem.message)
      return nil
    }
  }

  package mutating func stringList(_ node: YAMLNode, what: String) -> [String] {
    if case .sequence(let items) = node.content {
      return items.compactMap { string($0, what: what) }
    }
    return string(node, what: what).map { [$0] } ?? []
  }

  /// A whole number; one too large for 64 bits is reported as out of range (`tooLarge`, e.g.
  /// "must be from 1 to 1000000").
  package mutating func integer(_ node: YAMLNode, what: String, tooLarge: String? = nil) -> Int? {
    guard case .scalar(let text, true) = node.content, let value = Int(text) else {
      if case .scalar(let text, true) = node.content, let tooLarge,
        isDigits(text) || text.hasPrefix("-") && isDigits(String(text.dropFirst()))
      {
        diagnostics.error(node.mark, "\(what) \(tooLarge), found \(text)")
      } else {
        diagnostics.error(node.mark, "\(what) must be a whole number, found \(describe(node))")
      }
      return nil
    }
    return value
  }

  package mutating func boolean(_ node: YAMLNode, what: String) -> Bool? {
    if case .scalar(let text, true) = node.content {
      switch text {
      case "true", "True", "TRUE": return true
      case "false", "False", "FALSE": return false
      case "yes", "Yes", "YES", "on", "On", "ON", "no", "No", "NO", "off", "Off", "OFF":
        diagnostics.error(node.mark, "\(what) must be true or false; '\(text)' is not a boolean here (YAML 1.2)")
        return nil
      default: break
      }
    }
    diagnostics.error(node.mark, "\(what) must be true or false, found \(describe(node))")
    return nil
  }

  package mutating func size(_ node: YAMLNode, what: String) -> Int64? {
    guard let text = string(node, what: what) else { return nil }
    switch ByteSize.parsed(text) {
    case .value(let value) where value <= Limits.bytes:
      return value
    case .value, .tooLarge:
      diagnostics.error(
        node.mark, "\(what) '\(text)' is too large: sizes may be at most \(ByteSize.format(Limits.bytes))")
    case .invalid:
      diagnostics.error(
        node.mark,
        "bad size '\(text)' for \(what): write a number of bytes or use KB, MB, GB, TB (powers of 1024), e.g. 20MB")
    }
    return nil
  }

  package mutating func rate(_ node: YAMLNode) -> Int64? {
    guard let text = string(node, what: "network.rate_limit") else { return nil }
    let trimmed = text.trimmingSpaces
    let parsed = trimmed.hasSuffix("/s") ? ByteSize.parsed(String(trimmed.dropLast(2))) : .invalid
    switch parsed {
    case .value(let value) where value > 0 && value <= Limits.bytes:
      return value
    case .value(let value) where value > 0:
      diagnostics.error(
        node.mark,
        "network.rate_limit '\(text)' is too large: rates may be at most \(ByteSize.format(Limits.bytes))/s")
    case .tooLarge:
      diagnostics.error(
        node.mark,
        "network.rate_limit '\(text)' is too large: rates may be at most \(ByteSize.format(Limits.bytes))/s")
    case .value, .invalid:
      diagnostics.error(node.mark, "bad rate '\(text)' for network.rate_limit: write a size per second, e.g. 50MB/s")
    }
    return nil
  }

  package mutating func interval(_ node: YAMLNode, what: String, positive: Bool) -> Interval? {
    guard let text = string(node, what: what) else { return nil }
    switch Interval.parsed(text) {
    case .value(let value) where value > Limits.interval:
      diagnostics.error(
        node.mark, "\(what) '\(text)' is too long: durations may be at most \(Limits.interval) (about ten years)")
    case .value(let value) where positive && value.milliseconds == 0:
      diagnostics.error(node.mark, "\(what) must be longer than zero")
    case .value(let value):
      return value
    case .tooLarge:
      diagnostics.error(
        node.mark, "\(what) '\(text)' is too long: durations may be at most \(Limits.interval) (about ten years)")
    case .invalid:
      diagnostics.error(node.mark, "bad duration '\(text)' for \(what): use ms, s, m, h or d, e.g. 30s, 5m, 2h, 7d")
    }
    return nil
  }

  package mutating func choice<T: RawRepresentable & CaseIterable>(_ node: YAMLNode, what: String, _ type: T.Type) -> T?
  where T.RawValue == String {
    let names = T.allCases.map(\.rawValue)
    guard let text = string(node, what: what) else { return nil }
    guard let value = T(rawValue: text) else {
      diagnostics.error(
        node.mark,
        "unknown \(what) '\(text)': expected one of \(names.joined(separator: ", "))\(Suggestions.hint(for: text, in: names))"
      )
      return nil
    }
    return value
  }

  package func describe(_ node: YAMLNode) -> String {
    if case .scalar(let text, _) = node.content, !node.isNull { return "'\(text)'" }
    return node.kindName
  }
}
