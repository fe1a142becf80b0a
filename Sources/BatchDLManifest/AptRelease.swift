import BatchDLSupport

/// An index file a Release names in its `SHA256` field: its path relative to the suite's folder
/// (`dists/SUITE/`), its size and its SHA-256 digest.
public struct AptReleaseFile: Hashable, Sendable {
  /// Relative to `dists/SUITE/`, as bytes (`main/binary-amd64/Packages.xz`).
  public var path: [UInt8]
  public var size: Int64
  /// 64 lower-case hexadecimal digits.
  public var sha256: String
  /// The line of the Release (or InRelease) that gives it.
  public var line: Int
}

/// A path a repository document names that batchdl refuses, and why; the rest of the document
/// is still used.
public struct AptRefusedPath: Hashable, Sendable {
  /// The path as the document gives it (empty when the line has none).
  public var path: [UInt8]
  public var line: Int
  public var reason: String
}

/// Why a whole Release (or InRelease) is refused.
public struct AptReleaseProblem: Error, Equatable, Sendable, CustomStringConvertible {
  public var line: Int
  public var message: String

  public var description: String { "line \(line): \(message)" }
}

/// A parsed APT `Release` file: the fields a mirror needs, and its `SHA256` list of index files.
///
/// The `SHA256` field is read as `HASH SIZE PATH` lines (never as a checksum file); `MD5Sum`,
/// `SHA1` and `SHA512` are ignored. Each bad line is refused alone (`refused`): a hash that is not
/// 64 hexadecimal digits, a size that is not a decimal number, a path that escapes the suite's
/// folder (`AptPath.problem`), a path given twice with another size or digest (every line of
/// that path is refused). A Release without a `SHA256` field is refused whole.
public struct AptRelease: Sendable {
  /// The most bytes of a Release batchdl reads (Debian's largest are under 1 MiB).
  public static let maxBytes = 32 << 20
  /// The most `SHA256` lines batchdl reads.
  public static let maxEntries = 200_000
  /// The longest line batchdl reads.
  public static let maxLineBytes = 64 << 10

  public var suite: String?
  public var codename: String?
  /// `Date`, in seconds since 1970-01-01 UTC.
  public var date: Int64?
  /// `Valid-Until`, in seconds since 1970-01-01 UTC.
  public var validUntil: Int64?
  public var architectures: [String] = []
  public var components: [String] = []
  /// `Acquire-By-Hash: yes`: clients fetch index files from `…/by-hash/SHA256/<digest>`.
  public var acquireByHash = false
  /// The index files, each path once, in the order of the Release.
  public var files: [AptReleaseFile] = []
  /// Lines of `SHA256` (and names in `Architectures`, `Components`) refused one by one.
  public var refused: [AptRefusedPath] = []

  private var positions: [[UInt8]: Int] = [:]

  /// The index file at `path` (relative to `dists/SUITE/`), or nil when the Release does not list it.
  public func file(_ path: [UInt8]) -> AptReleaseFile? {
    positions[path].map { files[$0] }
  }

  /// Parses a Release, or an InRelease (clear-signed: its signed text is read, see
  /// `AptClearSigned`; the signature is not checked here).
  public static func parse(document: [UInt8]) -> Result<AptRelease, AptReleaseProblem> {
    guard AptClearSigned.looksClearSigned(document) else { return parse(document) }
    switch AptClearSigned.signedText(of: document) {
    case .success(let text): return parse(text.bytes, firstLine: text.firstLine)
    case .failure(let problem):
      return .failure(AptReleaseProblem(line: problem.line, message: "the InRelease is refused: \(problem.message)"))
    }
  }

  /// Parses the text of a Release; `firstLine` is the line of the document it starts on (for an
  /// InRelease's signed text, `AptClearSigned.Text.firstLine`).
  public static func parse(_ text: [UInt8], firstLine: Int = 1) -> Result<AptRelease, AptReleaseProblem> {
    let shift = firstLine - 1
    func refuse(_ line: Int, _ message: String) -> Result<AptRelease, AptReleaseProblem> {
      .failure(AptReleaseProblem(line: line + shift, message: "the Release is refused: \(message)"))
    }
    if text.count > maxBytes {
      return refuse(1, "it holds \(text.count) bytes, more than \(maxBytes), the most batchdl reads of a Release")
    }
    if AptClearSigned.looksClearSigned(text) {
      return refuse(1, "it is clear-signed (an InRelease): read its signed text")
    }
    var reader = Deb822Reader(
      wanted: ["Date", "Valid-Until", "Suite", "Codename", "Architectures", "Components", "Acquire-By-Hash", "SHA256"],
      maxLineBytes: maxLineBytes, maxBytes: Int64(maxBytes), maxStanzas: 2)
    var stanzas: [Deb822Stanza] = []
    reader.feed(text) { stanzas.append($0) }
    reader.finish { stanzas.append($0) }
    if let failure = reader.failure { return refuse(failure.line, failure.message) }
    guard let stanza = stanzas.first else { return refuse(1, "it holds no field") }
    if stanzas.count > 1 {
      return refuse(stanzas[1].firstLine, "it holds more than one paragraph (a blank line inside it)")
    }
    if let problem = stanza.problems.first { return refuse(problem.line, problem.message) }
    var release = AptRelease()
    if let field = stanza.field("suite") { release.suite = String(decoding: field.value, as: UTF8.self) }
    if let field = stanza.field("codename") { release.codename = String(decoding: field.value, as: UTF8.self) }
    for (name, keyPath) in [("date", \AptRelease.date), ("valid-until", \AptRelease.validUntil)] {
      guard let field = stanza.field(name) else { continue }
      guard let seconds = AptDate.seconds(field.value) else {
        let shown = ShownText.escaped(String(decoding: field.value, as: UTF8.self), limit: 60)
        return refuse(
          field.line,
          "its \(name == "date" ? "Date" : "Valid-Until") '\(shown)' is no date like 'Sat, 28 Nov 2026 10:00:00 UTC'")
      }
      release[keyPath: keyPath] = seconds
    }
    if let field = stanza.field("acquire-by-hash") {
      let value = String(decoding: field.value, as: UTF8.self).lowercased()
      release.acquireByHash = ["yes", "true", "with", "on", "enable", "1"].contains(value)
    }
    release.architectures = release.names(stanza.field("architectures"), "Architectures", slash: false, shift: shift)
    release.components = release.names(stanza.field("components"), "Components", slash: true, shift: shift)
    guard let sums = stanza.field("sha256") else {
      return refuse(
        stanza.firstLine,
        "it has no SHA256 field, and batchdl checks index files only against SHA-256 (MD5Sum and SHA1 are not enough)")
    }
    var lines = sums.continuation
    if !sums.value.isEmpty { lines.insert((sums.line, sums.value), at: 0) }
    if lines.count > maxEntries {
      return refuse(sums.line, "its SHA256 field has more than \(maxEntries) lines, the most batchdl reads")
    }
    var conflicted: Set<[UInt8]> = []
    for (line, bytes) in lines {
      release.addEntry(bytes, line: line + shift, conflicted: &conflicted)
    }
    return .success(release)
  }

  /// The names of `field` (words separated by white space); names that cannot be a path segment
  /// (or, with `slash`, a relative path) are refused one by one.
  private mutating func names(_ field: Deb822Stanza.Field?, _ label: String, slash: Bool, shift: Int) -> [String] {
    guard let field else { return [] }
    var result: [String] = []
    for (line, bytes) in [(field.line, field.value)] + field.continuation {
      for word in bytes.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 }) {
        let name = Array(word)
        var reason = AptPath.problem(name)
        if reason == nil, !slash, name.contains(0x2F) { reason = "the name contains '/'" }
        if let reason {
          refused.append(
            AptRefusedPath(path: name, line: line + shift, reason: "\(label) names '\(AptPath.shown(name))': \(reason)")
          )
        } else if !result.contains(String(decoding: name, as: UTF8.self)) {
          result.append(String(decoding: name, as: UTF8.self))
        }
      }
    }
    return result
  }

  /// Adds one `HASH SIZE PATH` line, or refuses it.
  private mutating func addEntry(_ bytes: [UInt8], line: Int, conflicted: inout Set<[UInt8]>) {
    let words = bytes.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 })
    func refuse(_ path: [UInt8], _ reason: String) {
      refused.append(AptRefusedPath(path: path, line: line, reason: reason))
    }
    guard words.count >= 3 else {
      refuse(
        words.count == 2 ? Array(words[1]) : [], "a SHA256 line is 'HASH SIZE PATH'; this one has \(words.count) words")
      return
    }
    let path = Array(bytes[words[2].startIndex...])
    guard words.count == 3 else {
      refuse(path, "the path contains white space, which APT's Release format cannot give")
      return
    }
    guard words[0].count == 64, words[0].allSatisfy({ Hex.value(of: $0) != nil }) else {
      refuse(path, "its hash is not 64 hexadecimal digits (SHA-256)")
      return
    }
    guard words[1].count <= 18, words[1].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
      refuse(path, "its size is not a decimal number of bytes")
      return
    }
    let size = words[1].reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
    if let reason = AptPath.problem(path) {
      refuse(path, reason)
      return
    }
    let sha256 = String(decoding: words[0].map { $0 >= 0x41 && $0 <= 0x46 ? $0 + 0x20 : $0 }, as: UTF8.self)
    if conflicted.contains(path) {
      refuse(path, "the Release gives this path more than once, with different sizes or digests")
      return
    }
    if let index = positions[path] {
      let earlier = files[index]
      if earlier.size == size && earlier.sha256 == sha256 { return }
      conflicted.insert(path)
      files.remove(at: index)
      positions = Dictionary(uniqueKeysWithValues: files.enumerated().map { ($1.path, $0) })
      refuse(
        path,
        "the Release gives this path more than once, with different sizes or digests (lines \(earlier.line) and \(line))"
      )
      return
    }
    positions[path] = files.count
    files.append(AptReleaseFile(path: path, size: size, sha256: sha256, line: line))
  }
}
