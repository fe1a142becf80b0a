import BatchDLSupport

/// A netrc file (`netrc:`), read when the manifest is: credentials per host, looked up the way
/// curl reads the file, with the rules curl's history taught (CVE-2024-11053, CVE-2025-0167): each
/// host's entry stands alone — an entry without a password gives no password, the `default` entry
/// gives only its own, and a URL naming a user gets only that user's password.
public struct Netrc: Sendable, Hashable {
  public struct Entry: Sendable, Hashable {
    /// The host; nil for the `default` entry.
    public var machine: String?
    public var login: String?
    public var password: String?
  }

  public var entries: [Entry]
  /// Where it was read from.
  public var path: String

  public struct Problem: Error, Sendable, Equatable {
    public var line: Int
    public var message: String
  }

  /// The tokens of `text`: `machine NAME`, `default`, `login NAME`, `password WORD`, `account WORD`
  /// and `macdef NAME` (whose body, up to an empty line, is skipped); words may be quoted with `"`
  /// (with `\"` and `\\` inside); `#` starts a comment at the start of a token.
  public static func parse(_ text: String, path: String) -> Result<Netrc, Problem> {
    var tokens: [(word: String, line: Int)] = []
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    var lineIndex = 0
    while lineIndex < lines.count {
      let line = Array(lines[lineIndex].utf8)
      var index = 0
      var word: [UInt8] = []
      var inWord = false
      func finish() {
        if inWord { tokens.append((String(decoding: word, as: UTF8.self), lineIndex + 1)) }
        word = []
        inWord = false
      }
      while index < line.count {
        let byte = line[index]
        if byte == UInt8(ascii: "\"") && !inWord {
          inWord = true
          index += 1
          var closed = false
          while index < line.count {
            if line[index] == UInt8(ascii: "\\"), index + 1 < line.count {
              word.append(line[index + 1])
              index += 2
              continue
            }
            if line[index] == UInt8(ascii: "\"") {
              closed = true
              index += 1
              break
            }
            word.append(line[index])
            index += 1
          }
          guard closed else {
            return .failure(Problem(line: lineIndex + 1, message: "a quoted word has no closing '\"'"))
          }
          finish()
          continue
        }
        if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") {
          finish()
        } else if byte == UInt8(ascii: "#") && !inWord {
          break
        } else {
          inWord = true
          word.append(byte)
        }
        index += 1
      }
      finish()
      // `macdef NAME`: its body runs to the next empty line.
      if let last = tokens.last, tokens.count >= 2, tokens[tokens.count - 2].word == "macdef",
        last.line == lineIndex + 1
      {
        tokens.removeLast(2)
        lineIndex += 1
        while lineIndex < lines.count, !lines[lineIndex].allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) {
          lineIndex += 1
        }
      }
      lineIndex += 1
    }

    var entries: [Entry] = []
    var index = 0
    func value(after keyword: (word: String, line: Int)) -> Result<String, Problem> {
      guard index < tokens.count else {
        return .failure(Problem(line: keyword.line, message: "'\(keyword.word)' has no value after it"))
      }
      defer { index += 1 }
      return .success(tokens[index].word)
    }
    while index < tokens.count {
      let token = tokens[index]
      index += 1
      switch token.word {
      case "machine":
        switch value(after: token) {
        case .success(let name): entries.append(Entry(machine: name.lowercased()))
        case .failure(let problem): return .failure(problem)
        }
      case "default":
        entries.append(Entry(machine: nil))
      case "login", "password", "account":
        guard !entries.isEmpty else {
          return .failure(Problem(line: token.line, message: "'\(token.word)' before any 'machine' or 'default'"))
        }
        switch value(after: token) {
        case .success(let text):
          if token.word == "login" { entries[entries.count - 1].login = text }
          if token.word == "password" { entries[entries.count - 1].password = text }
        case .failure(let problem): return .failure(problem)
        }
      default:
        // A word right after a password may be the rest of it (a password with a space, not
        // quoted): it is a secret, and is not shown; any other is shown short.
        if index >= 3, tokens[index - 3].word == "password" {
          return .failure(
            Problem(
              line: token.line,
              message:
                "an unknown word follows a password (not shown): a password holding a space is quoted, password \"...\""
            ))
        }
        return .failure(
          Problem(
            line: token.line,
            message:
              "unknown word '\(ShownText.escaped(token.word, limit: 40))': a netrc file holds machine, default, login, password, account and macdef"
          ))
      }
    }
    return .success(Netrc(entries: entries, path: path))
  }

  /// The user and password for `host` (lower case); `user` is the user a URL names, when it names
  /// one. The first `machine` entry of the host (with that login, when a user is named) answers;
  /// a host with entries, none of them for that user, gets nothing; a host without any gets the
  /// `default` entry (with that login, when a user is named). An entry without a password answers
  /// with no credentials.
  public func credentials(host: String, user: String?) -> (user: String, password: String)? {
    let host = host.lowercased()
    func fits(_ entry: Entry) -> Bool { user == nil || entry.login == user }
    let entry =
      entries.first { $0.machine == host && fits($0) }
      ?? (entries.contains { $0.machine == host } ? nil : entries.first { $0.machine == nil && fits($0) })
    guard let entry, let password = entry.password else { return nil }
    guard let login = entry.login ?? user else { return nil }
    return (login, password)
  }

  /// Every password, for the redactor.
  public var passwords: [String] { entries.compactMap(\.password).filter { !$0.isEmpty } }

  /// The entries, for an identity (hashed by the caller).
  var fingerprint: String {
    entries.map { "\($0.machine ?? "*")\u{1F}\($0.login ?? "")\u{1F}\($0.password ?? "")" }.joined(separator: "\u{1E}")
  }
}
