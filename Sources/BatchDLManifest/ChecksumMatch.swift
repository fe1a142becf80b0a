import BatchDLSupport

/// How a task found its name in a checksum file.
public enum ChecksumMatchRule: String, Sendable {
  /// The task's path (its URL's path relative to the checksum file's folder URL, or, for a local
  /// checksum file, its destination relative to the session's `dest`) is a name of the file.
  case path
  /// The task's file name is a bare name of the file (one without a folder), and no other file
  /// the checksum file covers has that name.
  case fileName = "file name"
}

/// A name of a checksum file and where it is listed.
public struct ChecksumName: Hashable, Sendable {
  public var name: String
  public var mark: SourceMark
}

/// Which entries of a checksum file a task is checked with, or why it has none.
public enum ChecksumMatch: Hashable, Sendable {
  /// The entries of the name found, strongest first (one per algorithm).
  case matched(name: String, rule: ChecksumMatchRule, entries: [ChecksumEntry])
  /// The name found is listed without a usable hash (a bad hash, an algorithm batchdl does not
  /// check, two lines that disagree).
  case leftOut(ChecksumLeftOut, rule: ChecksumMatchRule)
  /// No name is the task's path, and the bare name that is its file name (`entry`) names several
  /// of the files the checksum file covers: it is none of theirs.
  case ambiguous(file: String, path: String?, fileName: String, entry: ChecksumName)
  /// No name is the task's path, and no bare name is its file name.
  case none(file: String, path: String?, fileName: String)
  /// Two checksum files give different hashes of one algorithm for the task (`combine`).
  case disagreement(ChecksumEntry, ChecksumEntry)

  /// The digest to check the file with: the strongest entry's.
  public var digest: ExpectedDigest? { entries.first?.digest }

  /// The entries found, strongest first; empty when none matched.
  public var entries: [ChecksumEntry] {
    if case .matched(_, _, let entries) = self { return entries }
    return []
  }

  /// How the name found was found; nil when none was.
  public var rule: ChecksumMatchRule? {
    switch self {
    case .matched(_, let rule, _), .leftOut(_, let rule): return rule
    case .ambiguous, .none, .disagreement: return nil
    }
  }

  /// Which entry matched and how, or why none did: one line, names escaped.
  public var message: String {
    switch self {
    case .matched(let name, let rule, let entries):
      let mark = entries.first.map { " at \($0.mark)" } ?? ""
      return "matched '\(Self.shown(name))'\(mark) by its \(rule.rawValue)"
    case .leftOut(let item, let rule):
      return
        "\(item.mark): '\(Self.shown(item.name))' (matched by its \(rule.rawValue)) has no usable hash: \(item.message)"
    case .ambiguous(let file, let path, let fileName, let entry):
      return
        "\(Self.noPath(file, path))its bare name '\(Self.shown(fileName))' at line \(entry.mark.line) names several of the files it covers: which one is meant is ambiguous (a checksum file names such a file by its path)"
    case .none(let file, let path, let fileName):
      return "\(Self.noPath(file, path))no bare name '\(Self.shown(fileName))'"
    case .disagreement(let first, let second):
      return
        "the checksum files disagree on the \(first.digest.algorithm.rawValue) hash of '\(Self.shown(first.name))' (\(first.mark) and \(second.mark))"
    }
  }

  private static func noPath(_ file: String, _ path: String?) -> String {
    let lists = "\(file) lists "
    guard let path else { return lists + "no entry by path; " }
    return lists + "no '\(shown(path))', and "
  }

  private static func shown(_ text: String) -> String { ShownText.escaped(text, limit: 200) }

  /// The match of a task covered by several checksum files. A name found by the task's path, in
  /// any file, wins over a bare name found by its file name in another: those are then dropped.
  /// Of what is left: the entries of every file that matched (one per algorithm, strongest
  /// first), a disagreement when two give different hashes of one algorithm; when none matched,
  /// the first name left out, else the first ambiguity, else the first miss.
  public static func combine(_ all: [ChecksumMatch]) -> ChecksumMatch? {
    let matches = all.contains { $0.rule == .path } ? all.filter { $0.rule != .fileName } : all
    var first: (name: String, rule: ChecksumMatchRule)?
    var byAlgorithm: [DigestAlgorithm: ChecksumEntry] = [:]
    for case .matched(let name, let rule, let entries) in matches {
      if first == nil { first = (name, rule) }
      for entry in entries {
        if let earlier = byAlgorithm[entry.digest.algorithm] {
          if earlier.digest != entry.digest { return .disagreement(earlier, entry) }
        } else {
          byAlgorithm[entry.digest.algorithm] = entry
        }
      }
    }
    if let first {
      return .matched(
        name: first.name, rule: first.rule,
        entries: byAlgorithm.values.sorted { $0.digest.algorithm < $1.digest.algorithm })
    }
    for match in matches {
      if case .disagreement = match { return match }
    }
    for match in matches {
      if case .leftOut = match { return match }
    }
    for match in matches {
      if case .ambiguous = match { return match }
    }
    return matches.first
  }
}

extension ChecksumFile {
  /// The path of `url` relative to the folder of `checksumURL` (both http or https), percent-decoded
  /// and normalized, as a checksum file names it: `https://h/pub/iso/a%20b.iso` beside
  /// `https://h/pub/SHA256SUMS` is `iso/a b.iso`. Nil when `url` is at another origin or outside
  /// that folder, or when a segment decodes to what no name holds (`/`, NUL, a control character,
  /// bytes that are not UTF-8). The query and fragment are not part of the path.
  public static func relativePath(ofURL url: String, checksumURL: String) -> String? {
    let parsed = Metalink.normalizer.withLock { normalizer in
      (try? normalizer.normalize(url).get(), try? normalizer.normalize(checksumURL).get())
    }
    guard let target = parsed.0, let list = parsed.1, let folder = folderPrefix(ofNormalized: list) else { return nil }
    return relativePath(ofNormalized: target, folderPrefix: folder)
  }

  /// The normalized checksum URL up to and with the last `/` of its path (`https://h/pub/`): what
  /// `relativePath(ofNormalized:folderPrefix:)` takes, made once per checksum file.
  public static func folderPrefix(ofNormalized list: NormalizedURL) -> String? {
    guard let listPath = path(of: list), let slash = listPath.utf8.lastIndex(of: 0x2F) else { return nil }
    let text = list.text.utf8
    guard let scheme = text.firstRange(of: "://".utf8),
      let start = text[scheme.upperBound...].firstIndex(of: 0x2F)
    else { return nil }
    let folderBytes = listPath.utf8.distance(from: listPath.utf8.startIndex, to: slash) + 1
    return String(decoding: text[..<text.index(start, offsetBy: folderBytes)], as: UTF8.self)
  }

  /// `relativePath(ofURL:checksumURL:)` for a URL already normalized, against a checksum file's
  /// `folderPrefix`: the same answer, without normalizing anything again.
  public static func relativePath(ofNormalized target: NormalizedURL, folderPrefix: String) -> String? {
    let text = target.text.utf8
    guard text.starts(with: folderPrefix.utf8) else { return nil }
    var rest = text.dropFirst(folderPrefix.utf8.count)
    if let end = rest.firstIndex(where: { $0 == 0x3F || $0 == 0x23 }) { rest = rest[..<end] }
    guard !rest.isEmpty else { return nil }
    var segments: [String] = []
    for segment in rest.split(separator: 0x2F, omittingEmptySubsequences: false) {
      guard let decoded = percentDecoded(Array(segment)) else { return nil }
      segments.append(decoded)
    }
    guard case .success(let name) = ChecksumLineReader.checkName(segments.joined(separator: "/")) else { return nil }
    return name
  }

  /// The path of a normalized URL (`/` and on, without the query).
  private static func path(of url: NormalizedURL) -> String? {
    let text = url.text.utf8
    guard let scheme = text.firstRange(of: "://".utf8) else { return nil }
    let authorityAndPath = text[scheme.upperBound...]
    guard let start = authorityAndPath.firstIndex(of: 0x2F) else { return nil }
    let end = text[start...].firstIndex { $0 == 0x3F || $0 == 0x23 } ?? text.endIndex
    return String(text[start..<end])
  }

  /// A path segment with every `%XX` decoded; nil when it decodes to `/`, NUL or bytes that are not
  /// UTF-8.
  private static func percentDecoded(_ bytes: [UInt8]) -> String? {
    let out = Hex.percentDecoded(bytes)
    guard !out.contains(0x2F), !out.contains(0) else { return nil }
    return String(validating: out, as: UTF8.self)
  }
}
