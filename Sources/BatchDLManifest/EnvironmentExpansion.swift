import BatchDLSupport

#if canImport(Glibc)
  import Glibc
#endif

/// Expands `${NAME}` and `${NAME:-fallback}` from the environment, and `${file:PATH}` from a file
/// (its trailing newline dropped; a relative path is read from `directory`, the manifest's
/// folder); `$${` is a literal `${`.
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

  package static func expand(
    _ text: String, environment: [String: String], directory: String = ""
  ) -> Swift.Result<Result, Problem> {
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
      if inner.hasPrefix("file:") {
        switch secretFile(String(inner.dropFirst(5)), directory: directory) {
        case .success(let value):
          output += value
          substituted.append(Secret(name: inner, value: value))
        case .failure(let problem): return .failure(Problem(offset: index, message: problem.message))
        }
        index = close + 1
        continue
      }
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

  /// The most a `${file:PATH}` file may hold: it is a password, a key or a token.
  package static let secretFileLimit = 64 << 10

  /// The text of a `${file:PATH}` file without its trailing newline, or why it cannot be read.
  static func secretFile(_ written: String, directory: String) -> Swift.Result<String, Problem> {
    guard !written.isEmpty else {
      return .failure(Problem(offset: 0, message: "${file:} names no file: write ${file:/run/secrets/NAME}"))
    }
    let bytes: [UInt8]
    let read = FileAccess.readSmallFile(FileAccess.resolve(written, against: directory), limit: Int64(secretFileLimit))
    switch read {
    case .success(let contents): bytes = contents
    case .failure(.missing), .failure(.unreadable):
      var reason = String(cString: strerror(ENOENT))
      if case .failure(.unreadable(let words)) = read { reason = words }
      let relative = written.hasPrefix("/") ? "" : " (a relative path is read from the manifest's folder)"
      return .failure(Problem(offset: 0, message: "${file:\(written)} cannot be read: \(reason)\(relative)"))
    case .failure(.notRegular(let kind)):
      return .failure(Problem(offset: 0, message: "${file:\(written)} is not a regular file (it is \(kind))"))
    case .failure(.tooLarge(let size)):
      return .failure(
        Problem(offset: 0, message: "${file:\(written)} holds \(size) bytes: a secret file holds at most 64 KiB"))
    }
    var end = bytes.count
    if end > 0, bytes[end - 1] == 0x0A {
      end -= 1
      if end > 0, bytes[end - 1] == 0x0D { end -= 1 }
    }
    return .success(String(decoding: bytes[..<end], as: UTF8.self))
  }
}
