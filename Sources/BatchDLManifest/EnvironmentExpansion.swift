import BatchDLSupport

/// Expands `${NAME}` and `${NAME:-fallback}` from the environment; `$${` is a literal `${`.
package struct EnvironmentExpansion {
  package struct Problem: Error {
    /// Offset in characters from the start of the text.
    package var offset: Int
    package var message: String
  }

  package struct Result {
    package var text: String
    /// The names and values substituted, for masking.
    package var substituted: [Secret]
  }

  package static func expand(_ text: String, environment: [String: String]) -> Swift.Result<Result, Problem> {
    guard text.contains("$") else { return .success(Result(text: text, substituted: [])) }
    var output = ""
    var substituted: [Secret] = []
    let chars = Array(text)
    var index = 0
    while index < chars.count {
      let char = chars[index]
      if char == "$", index + 2 < chars.count, chars[index + 1] == "$", chars[index + 2] == "{" {
        output += "${"
        index += 3
        continue
      }
      guard char == "$", index + 1 < chars.count, chars[index + 1] == "{" else {
        output.append(char)
        index += 1
        continue
      }
      guard let close = chars[(index + 2)...].firstIndex(of: "}") else {
        return .failure(Problem(offset: index, message: "unterminated '${': write ${NAME}, or $${ for a literal '${'"))
      }
      let inner = String(chars[(index + 2)..<close])
      let name: String
      let fallback: String?
      if let range = inner.range(of: ":-") {
        name = String(inner[..<range.lowerBound])
        fallback = String(inner[range.upperBound...])
      } else {
        name = inner
        fallback = nil
      }
      guard isValidName(name) else {
        return .failure(
          Problem(
            offset: index,
            message:
              "'${\(inner)}' is not a variable reference: names are letters, digits and '_', not starting with a digit")
        )
      }
      if let value = environment[name] {
        output += value
        substituted.append(Secret(name: name, value: value))
      } else if let fallback {
        output += fallback
      } else {
        return .failure(
          Problem(
            offset: index,
            message:
              "environment variable \(name) is not set: export it before running batchdl, or write ${\(name):-default}")
        )
      }
      index = close + 1
    }
    return .success(Result(text: output, substituted: substituted))
  }

  package static func isValidName(_ name: String) -> Bool {
    guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else {
      return false
    }
    return name.unicodeScalars.allSatisfy {
      $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
    }
  }
}
