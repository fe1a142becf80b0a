import BatchDLSupport

/// A file of an APT repository's pool that an index (`Packages`, `Sources`) names, with the size
/// and SHA-256 digest it must have.
public struct AptPoolFile: Hashable, Sendable {
  /// Relative to the repository's root, as bytes (`pool/main/h/hello/hello_1.0_amd64.deb`).
  public var path: [UInt8]
  public var size: Int64
  /// 64 lower-case hexadecimal digits.
  public var sha256: String
  /// The `Package`, `Version` and `Architecture` of the first paragraph that names it (empty when
  /// the paragraph has none; a `Sources` paragraph's `Architecture` is its list of them).
  public var package: String
  public var version: String
  public var architecture: String
  /// The line of the first paragraph that names it.
  public var line: Int
}

/// Why a whole index is refused (past a limit, see `AptIndexReader.Limits`).
public struct AptIndexProblem: Error, Equatable, Sendable, CustomStringConvertible {
  public var line: Int
  public var message: String

  public var description: String { "line \(line): \(message)" }
}

/// The pool files of one index, each path once, and what it names that batchdl refuses.
public struct AptIndex: Sendable {
  public var files: [AptPoolFile] = []
  /// Refused paragraphs and paths, one by one (at most `Limits.maxListedRefusals` listed).
  public var refused: [AptRefusedPath] = []
  /// How many were refused, listed or not.
  public var refusedCount = 0
  /// How many paragraphs the index holds.
  public var stanzas = 0
}

/// Reads a `Packages` or `Sources` index, decompressed, from chunks of any size (a Debian
/// `Packages` is hundreds of MB): no more than the current line and the current paragraph's
/// fields of interest are held besides the result.
///
/// - `Packages`: each paragraph's `Filename` (relative to the repository's root), `Size` and
///   `SHA256`; a paragraph without one of them is refused (with its line).
/// - `Sources`: each paragraph's `Directory` and its `Checksums-Sha256` lines (`HASH SIZE NAME`),
///   each file at `Directory/NAME`; a bad line is refused alone.
/// - Every path is checked (`AptPath.poolProblem`): one that escapes, lies in `dists/` or names
///   batchdl's own files is refused alone. Two paragraphs naming one path with different sizes or
///   digests are a conflict: that path is refused (every paragraph of it), the rest is kept.
/// - Past a limit (`Limits`) the whole index is refused.
public struct AptIndexReader {
  public enum Kind: Sendable { case packages, sources }

  /// The bounds of one index.
  public struct Limits: Sendable {
    /// Decompressed bytes (2 GiB; Debian's main/amd64 `Packages` is about 100 MiB).
    public var maxBytes: Int64 = 2 << 30
    /// Paragraphs (Debian's main/amd64 has about 65,000).
    public var maxStanzas = 1_000_000
    /// One line (a `Description` line is under 1 KiB in practice).
    public var maxLineBytes = 1 << 20
    /// Pool files (a `Sources` paragraph names several).
    public var maxFiles = 2_000_000
    /// Refusals listed (the rest are counted).
    public var maxListedRefusals = 1_000

    public init() {}
  }

  public let kind: Kind
  public let limits: Limits
  private var reader: Deb822Reader
  private var index = AptIndex()
  /// Position of each path in `index.files`; nil entries of `alive` are conflicts removed.
  private var positions: [[UInt8]: Int] = [:]
  private var alive: [Bool] = []
  private var conflicted: Set<[UInt8]> = []
  private var tooMany: AptIndexProblem?

  public init(kind: Kind, limits: Limits = Limits()) {
    self.kind = kind
    self.limits = limits
    let wanted =
      kind == .packages
      ? ["Package", "Version", "Architecture", "Filename", "Size", "SHA256"]
      : ["Package", "Version", "Architecture", "Directory", "Checksums-Sha256"]
    reader = Deb822Reader(
      wanted: wanted, maxLineBytes: limits.maxLineBytes, maxBytes: limits.maxBytes, maxStanzas: limits.maxStanzas)
  }

  /// Reads a whole index held in memory.
  public static func read(_ bytes: [UInt8], kind: Kind, limits: Limits = Limits()) -> Result<AptIndex, AptIndexProblem>
  {
    var reader = AptIndexReader(kind: kind, limits: limits)
    reader.feed(bytes)
    return reader.finish()
  }

  /// Reads the next chunk of the decompressed index.
  public mutating func feed(_ chunk: UnsafeBufferPointer<UInt8>) {
    guard tooMany == nil else { return }
    var stanzas: [Deb822Stanza] = []
    reader.feed(chunk) { stanzas.append($0) }
    for stanza in stanzas { take(stanza) }
  }

  public mutating func feed(_ chunk: [UInt8]) {
    chunk.withUnsafeBufferPointer { feed($0) }
  }

  /// The index read, or why it is refused whole.
  public mutating func finish() -> Result<AptIndex, AptIndexProblem> {
    if let tooMany { return .failure(tooMany) }
    var stanzas: [Deb822Stanza] = []
    reader.finish { stanzas.append($0) }
    if let failure = reader.failure {
      return .failure(AptIndexProblem(line: failure.line, message: "the index is refused: \(failure.message)"))
    }
    for stanza in stanzas { take(stanza) }
    if let tooMany { return .failure(tooMany) }
    var result = index
    result.stanzas = reader.stanzaCount
    result.files = zip(index.files, alive).compactMap { $1 ? $0 : nil }
    return .success(result)
  }

  // MARK: - Paragraphs

  private mutating func take(_ stanza: Deb822Stanza) {
    let text = { (name: String) in stanza.field(name).map { String(decoding: $0.value, as: UTF8.self) } ?? "" }
    let package = text("package")
    let label = package.isEmpty ? "the paragraph" : "the paragraph of '\(ShownText.escaped(package, limit: 60))'"
    if let problem = stanza.problems.first {
      refuse(
        stanza.field(kind == .packages ? "filename" : "directory")?.value ?? [], problem.line,
        "\(label) is refused: \(problem.message)")
      return
    }
    let found = (package: package, version: text("version"), architecture: text("architecture"), line: stanza.firstLine)
    switch kind {
    case .packages: takePackages(stanza, label: label, found: found)
    case .sources: takeSources(stanza, label: label, found: found)
    }
  }

  private typealias Found = (package: String, version: String, architecture: String, line: Int)

  private mutating func takePackages(_ stanza: Deb822Stanza, label: String, found: Found) {
    let filename = stanza.field("filename")
    let path = filename?.value ?? []
    for name in ["Filename", "Size", "SHA256"] where stanza.field(name.lowercased()) == nil {
      refuse(path, stanza.firstLine, "\(label) (line \(stanza.firstLine)) has no \(name) field")
      return
    }
    guard let filename, let sizeField = stanza.field("size"), let shaField = stanza.field("sha256") else { return }
    if !filename.continuation.isEmpty || !sizeField.continuation.isEmpty || !shaField.continuation.isEmpty {
      refuse(path, stanza.firstLine, "\(label) has Filename, Size or SHA256 on more than one line")
      return
    }
    guard let size = Self.size(sizeField.value) else {
      refuse(path, sizeField.line, "\(label) has a Size that is not a decimal number of bytes")
      return
    }
    guard let sha256 = Self.sha256(shaField.value) else {
      refuse(path, shaField.line, "\(label) has a SHA256 that is not 64 hexadecimal digits")
      return
    }
    add(path, size: size, sha256: sha256, found: found, line: filename.line)
  }

  private mutating func takeSources(_ stanza: Deb822Stanza, label: String, found: Found) {
    guard let directory = stanza.field("directory"), directory.continuation.isEmpty else {
      refuse([], stanza.firstLine, "\(label) (line \(stanza.firstLine)) has no Directory field on one line")
      return
    }
    guard let sums = stanza.field("checksums-sha256") else {
      refuse(directory.value, stanza.firstLine, "\(label) (line \(stanza.firstLine)) has no Checksums-Sha256 field")
      return
    }
    var lines = sums.continuation
    if !sums.value.isEmpty { lines.insert((sums.line, sums.value), at: 0) }
    if lines.isEmpty {
      refuse(directory.value, sums.line, "\(label) has an empty Checksums-Sha256 field")
    }
    for (line, bytes) in lines {
      let words = bytes.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 })
      let name = words.count >= 3 ? Array(bytes[words[2].startIndex...]) : []
      let path = directory.value + [0x2F] + name
      guard words.count == 3 else {
        refuse(path, line, "\(label): a Checksums-Sha256 line is 'HASH SIZE NAME'; this one has \(words.count) words")
        continue
      }
      guard !name.contains(0x2F) else {
        refuse(path, line, "\(label): the file name contains '/'")
        continue
      }
      guard let size = Self.size(Array(words[1])), let sha256 = Self.sha256(Array(words[0])) else {
        refuse(path, line, "\(label): the line's hash is not 64 hexadecimal digits or its size not a number of bytes")
        continue
      }
      add(path, size: size, sha256: sha256, found: found, line: line)
    }
  }

  // MARK: - Files

  private mutating func add(_ path: [UInt8], size: Int64, sha256: String, found: Found, line: Int) {
    if let reason = AptPath.poolProblem(path) {
      refuse(path, line, reason)
      return
    }
    if conflicted.contains(path) {
      refuse(path, line, "paragraphs give this path different sizes or digests")
      return
    }
    if let position = positions[path] {
      let earlier = index.files[position]
      if earlier.size == size && earlier.sha256 == sha256 { return }
      conflicted.insert(path)
      alive[position] = false
      positions[path] = nil
      refuse(
        path, line,
        "paragraphs give this path different sizes or digests (lines \(earlier.line) and \(line)); it is refused")
      return
    }
    guard index.files.count < limits.maxFiles else {
      tooMany = AptIndexProblem(
        line: line, message: "the index is refused: it names more than \(limits.maxFiles) files, the most batchdl reads"
      )
      return
    }
    positions[path] = index.files.count
    alive.append(true)
    index.files.append(
      AptPoolFile(
        path: path, size: size, sha256: sha256, package: found.package, version: found.version,
        architecture: found.architecture, line: found.line))
  }

  private mutating func refuse(_ path: [UInt8], _ line: Int, _ reason: String) {
    index.refusedCount += 1
    guard index.refused.count < limits.maxListedRefusals else { return }
    index.refused.append(AptRefusedPath(path: path, line: line, reason: reason))
  }

  static func size(_ bytes: [UInt8]) -> Int64? {
    guard !bytes.isEmpty, bytes.count <= 18, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
    return bytes.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
  }

  static func sha256(_ bytes: [UInt8]) -> String? {
    guard bytes.count == 64, bytes.allSatisfy({ Hex.value(of: $0) != nil }) else { return nil }
    return String(decoding: bytes.map { $0 >= 0x41 && $0 <= 0x46 ? $0 + 0x20 : $0 }, as: UTF8.self)
  }
}
