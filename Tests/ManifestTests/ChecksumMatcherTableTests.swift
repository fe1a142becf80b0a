import Testing

@testable import BatchDLManifest
@testable import BatchDLSupport

/// The checksum matching rule as one table: every covered set drawn from names that repeat in
/// folders (with an NFC and an NFD `café`), crossed with path entries, bare-name entries, and one
/// or two checksum files (`/pub/SUMS` and `/pub/docs/SUMS`). Each case is matched as the planner
/// does (files one by one, made again when a bare name went stale) and compared with the rule
/// written plainly; a file listed by its path never gets another file's digest.
@Suite struct ChecksumMatcherTableTests {
  /// NFC and NFD spellings of `café`: two names.
  static let nfc = "caf\u{E9}"
  static let nfd = "cafe\u{301}"

  /// Files upstream, relative to `/pub/`.
  static let universe = [
    "README", "sub/README", "docs/README", "NOTES", "extra/NOTES", nfc, "x/" + nfd, "docs/" + nfc,
  ]

  /// The entries of `/pub/SUMS` (names relative to `/pub/`) the table tries.
  static let topEntries: [[String]] = [
    [],
    ["sub/README"],
    ["README", "docs/README"],
    ["README"],
    ["extra/NOTES", "NOTES"],
    ["extra/NOTES"],
    [nfc],
    [nfd],
    ["x/" + nfd, "README", "sub/README"],
  ]

  /// The entries of `/pub/docs/SUMS` (relative to `/pub/docs/`), or nil when only one file covers.
  static let docsEntries: [[String]?] = [nil, ["README"], [nfc], ["README", nfd]]

  /// The correct hash of the file at `path` (relative to `/pub/`): each file's own.
  static func hash(_ path: String) -> String {
    let index = (universe.firstIndex { Array($0.utf8) == Array(path.utf8) } ?? universe.count) + 1
    let hex = String(index, radix: 16)
    return String(repeating: "0", count: 64 - hex.count) + hex
  }

  struct Sums {
    var folder: String
    var names: [String]
    var file: ChecksumFile

    init(folder: String, names: [String]) {
      self.folder = folder
      self.names = names
      let text = names.map { "\(ChecksumMatcherTableTests.hash(folder + $0))  \($0)\n" }.joined()
      file = ChecksumFile.parse(Array(text.utf8), file: "/pub/\(folder)SUMS")
    }

    func covered(_ path: String) -> CoveredFile {
      let bytes = Array(path.utf8)
      let relative =
        bytes.starts(with: Array(folder.utf8))
        ? String(decoding: bytes.dropFirst(folder.utf8.count), as: UTF8.self) : nil
      let name = String(decoding: bytes.split(separator: 0x2F).last ?? [], as: UTF8.self)
      return CoveredFile(path: relative, fileName: name, identity: path)
    }
  }

  /// What the rule says `path` is checked with: a hash, nil for checksum-missing, "disagree".
  static func expected(_ path: String, covered: [String], sums: [Sums]) -> String? {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
    var byPath: [String] = []
    var byName: [String] = []
    for sum in sums {
      let file = sum.covered(path)
      if let relative = file.path, sum.names.contains(where: { bytes($0) == bytes(relative) }) {
        byPath.append(hash(sum.folder + relative))
        continue
      }
      let sameName = covered.filter { bytes(sum.covered($0).fileName) == bytes(file.fileName) }.count
      if sameName == 1, sum.names.contains(where: { bytes($0) == bytes(file.fileName) }) {
        byName.append(hash(sum.folder + file.fileName))
      }
    }
    let found = Set(byPath.isEmpty ? byName : byPath)
    if found.count > 1 { return "disagree" }
    return found.first
  }

  /// What the matcher says, learning the files in `covered`'s order as the planner does.
  static func actual(covered: [String], sums: [Sums]) -> [String: String?] {
    var several: [Set<Int32>] = sums.map { _ in [] }
    for _ in 0...covered.count {
      var matchers = zip(sums, several).map { ChecksumMatcher(file: $0.file, several: $1) }
      var result: [String: String?] = [:]
      for path in covered {
        var matches: [ChecksumMatch] = []
        for index in sums.indices { matches.append(matchers[index].match(sums[index].covered(path))) }
        switch ChecksumMatch.combine(matches) {
        case .disagreement: result[path] = .some("disagree")
        case let match?: result[path] = .some(match.digest?.hex)
        case nil: result[path] = .some(nil)
        }
      }
      if matchers.allSatisfy({ $0.staleNames.isEmpty }) { return result }
      several = matchers.map(\.namesCoveredSeveralTimes)
    }
    Issue.record("the matching did not settle")
    return [:]
  }

  @Test func everyCaseFollowsTheRule() {
    var cases = 0
    var byName = 0
    var missing = 0
    for mask in 1..<(1 << Self.universe.count) {
      let covered = Self.universe.indices.filter { mask & (1 << $0) != 0 }.map { Self.universe[$0] }
      for top in Self.topEntries {
        for docs in Self.docsEntries {
          var sums = [Sums(folder: "", names: top)]
          if let docs { sums.append(Sums(folder: "docs/", names: docs)) }
          let actual = Self.actual(covered: covered, sums: sums)
          for path in covered {
            cases += 1
            let want = Self.expected(path, covered: covered, sums: sums)
            let got = actual[path] ?? nil
            #expect(got == want, "\(path) covered \(covered) top \(top) docs \(docs ?? [])")
            if got == nil { missing += 1 }
            // A file listed by its own path is checked with its own hash, whatever else is listed.
            let listed = sums.contains { sum in
              sum.covered(path).path.map { relative in sum.names.contains { Array($0.utf8) == Array(relative.utf8) } }
                ?? false
            }
            if listed { #expect(got == Self.hash(path), "\(path) covered \(covered) top \(top) docs \(docs ?? [])") }
            if let got, got != "disagree", got != Self.hash(path) { byName += 1 }
          }
        }
      }
    }
    // The table reaches every outcome: own hash, a unique bare name's, missing.
    #expect(cases > 10_000 && byName > 0 && missing > 0, "\(cases) \(byName) \(missing)")
  }

  /// The cases of issue 36, one by one.
  @Test func theIssueCasesAreDecidedByTheRule() {
    // Item 3: SUMS lists only `sub/README`; `README` is covered too.
    let item3 = [Sums(folder: "", names: ["sub/README"])]
    let three = Self.actual(covered: ["README", "sub/README"], sums: item3)
    #expect(three["README"] == .some(nil))
    #expect(three["sub/README"] == .some(Self.hash("sub/README")))
    // Item 25: two checksum files, each file its own entry; no disagreement.
    let item25 = [
      Sums(folder: "", names: ["README", "docs/README"]), Sums(folder: "docs/", names: ["README"]),
    ]
    for order in [["README", "docs/README"], ["docs/README", "README"]] {
      let result = Self.actual(covered: order, sums: item25)
      #expect(result["README"] == .some(Self.hash("README")), "\(order)")
      #expect(result["docs/README"] == .some(Self.hash("docs/README")), "\(order)")
    }
    // Item 25: a new `NOTES` is not `extra/NOTES`.
    let notes = Self.actual(covered: ["NOTES", "extra/NOTES"], sums: [Sums(folder: "", names: ["extra/NOTES"])])
    #expect(notes["NOTES"] == .some(nil))
    // Names are bytes: an NFD entry is not the NFC file's.
    let nfc = Self.actual(covered: [Self.nfc], sums: [Sums(folder: "", names: [Self.nfd])])
    #expect(nfc[Self.nfc] == .some(nil))
  }
}
