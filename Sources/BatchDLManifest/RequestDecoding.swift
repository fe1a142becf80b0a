import BatchDLSupport

/// What a request sends: its method, headers and form fields.
extension ManifestDecoder {
  package mutating func method(_ node: YAMLNode) -> String? {
    guard let text = string(node, what: "method") else { return nil }
    guard !text.isEmpty, text.unicodeScalars.allSatisfy(HeaderRules.isTokenCharacter) else {
      diagnostics.error(node.mark, "method '\(text)' is not an HTTP method name (e.g. GET, POST, PUT)")
      return nil
    }
    return text
  }

  package mutating func headers(_ node: YAMLNode) -> [Header] {
    guard let entries = mapping(node, what: "headers") else { return [] }
    var result: [Header] = []
    for (key, value) in entries {
      guard let name = key.scalar else { continue }
      if name.isEmpty || !name.unicodeScalars.allSatisfy(HeaderRules.isTokenCharacter) {
        diagnostics.error(key.mark, "'\(name)' is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)")
        continue
      }
      if let duplicate = result.first(where: { $0.name.lowercased() == name.lowercased() }) {
        // The same spelling twice is a duplicate key, which the parser reports.
        if duplicate.name != name {
          diagnostics.error(
            key.mark, "header '\(name)' is given twice (also at line \(duplicate.mark.line)); header names ignore case")
        }
        continue
      }
      guard let text = string(value, what: "header '\(name)'", expand: .secret) else { continue }
      if text.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
        diagnostics.error(
          value.mark, "header '\(name)' contains a line break, which would split the request; remove it")
        continue
      }
      result.append(Header(name: name, value: text, mark: value.mark))
    }
    return result
  }

  package mutating func form(_ node: YAMLNode) -> [FormField] {
    guard let entries = mapping(node, what: "form") else { return [] }
    var fields: [FormField] = []
    for (key, value) in entries {
      guard let name = key.scalar, let text = string(value, what: "form field '\(name)'", expand: .secret) else {
        continue
      }
      if text.hasPrefix("@") {
        let path = String(text.dropFirst())
        if path.isEmpty { diagnostics.error(value.mark, "form field '\(name)': '@' must be followed by a file path") }
        fields.append(FormField(name: name, value: text, file: path))
      } else {
        fields.append(FormField(name: name, value: text, file: nil))
      }
    }
    return fields
  }
}

/// Rules for HTTP header names and values (RFC 9110 tokens).
package enum HeaderRules {
  package static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
    guard scalar.isASCII else { return false }
    if ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) { return true }
    return "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
  }
}
