import BatchDLSupport

/// One file a checksum file covers, as matching sees it.
public struct CoveredFile: Hashable, Sendable {
  /// Its path relative to the checksum file's folder (normalized, as `ChecksumFile.relativePath`
  /// gives it), or, for a local checksum file, its destination relative to the session's `dest`;
  /// nil when it is outside that folder.
  public var path: String?
  /// Its file name: the last component of `path`, else of its URL's path.
  public var fileName: String
  /// What makes two covered files one file (compared as bytes): its normalized URL for a checksum
  /// file given by URL; its session and destination for a local one.
  public var identity: String

  public init(path: String?, fileName: String, identity: String) {
    self.path = path
    self.fileName = fileName
    self.identity = identity
  }
}

/// Which entry of one checksum file each file it covers is checked with: the file's entries and
/// the files it covers, counted by name. The rule, decided here only:
/// - a name of the file that is the covered file's `path` matches it; a name with a folder
///   (`sub/README`) matches that path and nothing else;
/// - else a bare name (`README`, no folder) that is the covered file's `fileName` matches it, but
///   only when exactly one file the checksum file covers has that name (covered files counted,
///   not names of the checksum file);
/// - else nothing matches (`checksum-missing` for the planner).
///
/// Names are bytes: an NFC and an NFD spelling are two names. Several checksum files covering one
/// file are combined by `ChecksumMatch.combine`, where a name found by path wins over a bare name.
///
/// The planner learns the covered files one by one: a bare name matched while it was the only
/// covered file of its name is noted, and `staleNames` lists those that another covered file has
/// since; the plan is then made again with `several` holding them (`namesCoveredSeveralTimes`).
public struct ChecksumMatcher: Sendable {
  public let file: ChecksumFile
  /// Per bare name of the file that covered files have (by its id in `file`): the first covered
  /// file's identity and whether another covered file has that name too.
  private var covered: [Int32: Coverage] = [:]
  /// Names known (from an earlier plan) to be had by several covered files.
  private let several: Set<Int32>
  /// Bare names matched by file name while one covered file had them.
  private var matchedAlone = Set<Int32>()

  private struct Coverage: Sendable {
    var first: IdentityKey
    var several: Bool
  }

  /// A covered file's identity as two independent 64-bit hashes of its bytes (with the process's
  /// random seed: no document can choose two that collide).
  private struct IdentityKey: Hashable, Sendable {
    var first: Int
    var second: Int

    init(_ identity: String) {
      var one = Hasher()
      var two = Hasher()
      one.combine(0x6261_7463_6864_6C31)
      two.combine(0x6261_7463_6864_6C32)
      var text = identity
      text.withUTF8 { bytes in
        one.combine(bytes: UnsafeRawBufferPointer(bytes))
        two.combine(bytes: UnsafeRawBufferPointer(bytes))
      }
      first = one.finalize()
      second = two.finalize()
    }
  }

  /// A matcher of `file` with no covered file yet; `several`: names (`namesCoveredSeveralTimes` of
  /// an earlier plan) that several covered files are known to have.
  public init(file: ChecksumFile, several: Set<Int32> = []) {
    self.file = file
    self.several = several
  }

  /// A matcher of `file` covering each of `files` (before any is matched).
  public init(file: ChecksumFile, covering files: [CoveredFile]) {
    self.init(file: file)
    for covered in files { cover(covered) }
  }

  /// Notes that the checksum file covers `covered` (once per file: the same identity again counts
  /// once), whether or not it is matched (a file with its own digest still has its name).
  public mutating func cover(_ covered: CoveredFile) {
    guard let id = bareName(covered.fileName) else { return }
    let key = IdentityKey(covered.identity)
    if let known = self.covered[id] {
      if !known.several && known.first != key { self.covered[id]?.several = true }
    } else {
      self.covered[id] = Coverage(first: key, several: false)
    }
  }

  /// The entries `covered` is checked with (it is noted as covered first), or why it has none.
  public mutating func match(_ covered: CoveredFile) -> ChecksumMatch {
    cover(covered)
    if let path = covered.path {
      let found = file.entries(named: path)
      if !found.isEmpty { return .matched(name: path, rule: .path, entries: found) }
      if let item = file.leftOut(named: path) { return .leftOut(item, rule: .path) }
    }
    let none = ChecksumMatch.none(file: file.file, path: covered.path, fileName: covered.fileName)
    guard let id = bareName(covered.fileName) else { return none }
    if several.contains(id) || self.covered[id]?.several == true {
      return .ambiguous(
        file: file.file, path: covered.path, fileName: covered.fileName, entry: file.checksumName(id))
    }
    matchedAlone.insert(id)
    let found = file.entries(named: covered.fileName)
    if !found.isEmpty { return .matched(name: covered.fileName, rule: .fileName, entries: found) }
    if let item = file.leftOut(named: covered.fileName) { return .leftOut(item, rule: .fileName) }
    return none
  }

  /// Bare names matched by file name while one covered file had them that several have now: a
  /// plan that matched them must be made again (with `namesCoveredSeveralTimes`).
  public var staleNames: [Int32] {
    matchedAlone.filter { covered[$0]?.several == true }.sorted()
  }

  /// The bare names several covered files have (for the next plan's `several`).
  public var namesCoveredSeveralTimes: Set<Int32> {
    several.union(covered.compactMap { $0.value.several ? $0.key : nil })
  }

  /// The id of `fileName` as a bare name of the file (one without `/`), or nil.
  private func bareName(_ fileName: String) -> Int32? {
    guard !fileName.isEmpty, !fileName.utf8.contains(0x2F) else { return nil }
    return file.id(ofName: fileName)
  }
}
