import BatchDLSupport

/// Reads a checksum file line by line into a `ChecksumFile` (see there for the formats). Each line
/// is checked on its bytes before any text is made of it; a bad line is one error and is skipped.
package struct ChecksumLineReader {
  private var result: ChecksumFile
  private let file: String
  private let lineMap: LineMap
  private let maxLines: Int
  /// Errors found, listed or not (`maxListedProblems`).
  private var problems = 0
  /// The first error not listed.
  private var firstUnlisted: SourceMark?
  /// Lines neither blank nor comments.
  private var checksumLines = 0
  /// Lines with an algorithm batchdl does not check, by what names it: how many, the first.
  private var unsupported: [String: (count: Int, mark: SourceMark)] = [:]
  private var unsupportedOrder: [String] = []
  /// Algorithms batchdl does not check that get a warning of their own; the rest share one.
  private static let maxUnsupportedNamed = 8

  /// Hash lengths of algorithms batchdl does not check, as a warning names them.
  private static let otherLengths: [Int: String] = [
    56: "SHA-224 or SHA3-224", 96: "SHA-384 or SHA3-384",
  ]

  package init(file: String, lineMap: LineMap, maxLines: Int) {
    self.file = file
    self.lineMap = lineMap
    self.maxLines = maxLines
    result = ChecksumFile(file: file)
  }

  package mutating func read(_ bytes: [UInt8]) {
    var start = 0
    var number = 0
    while start < bytes.count {
      let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
      number += 1
      if !readLine(bytes[start..<end], number: number) { return }
      start = end + 1
    }
  }

  package mutating func finish() -> ChecksumFile {
    guard !result.isUnusable else { return result }
    for tag in unsupportedOrder {
      guard let (count, mark) = unsupported[tag] else { continue }
      let lines = count == 1 ? "1 line gives" : "\(count) lines give"
      result.addDiagnostic(
        Diagnostic(
          .warning, at: mark,
          "\(lines) \(tag), which batchdl does not check; they are ignored (the first is here)"))
    }
    if let firstUnlisted {
      let more = problems - ChecksumFile.maxListedProblems
      result.addDiagnostic(
        Diagnostic(
          .error, at: firstUnlisted,
          "\(more) more \(more == 1 ? "line has" : "lines have") problems (the first \(ChecksumFile.maxListedProblems) are listed); \(more == 1 ? "it is" : "they are") skipped"
        ))
    }
    result.finish()
    return result
  }

  // MARK: - One line

  /// Reads line `number`; false when the whole file is refused.
  private mutating func readLine(_ raw: ArraySlice<UInt8>, number: Int) -> Bool {
    let (lineNumber, shift) = lineMap.place(number)
    var line = Array(raw)
    if number == 1, line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
    let file = self.file
    func mark(_ offset: Int) -> SourceMark {
      SourceMark(file: file, line: lineNumber, column: Self.column(of: offset, in: line) + shift)
    }
    if line.count > ChecksumFile.maxLineBytes {
      if line.first(where: { $0 != 0x20 && $0 != 0x09 }) == 0x23 { return true }  // a long comment
      checksumLines += 1
      problem(
        mark(0),
        "the line is longer than \(ByteSize.format(Int64(ChecksumFile.maxLineBytes))), the most batchdl reads of one checksum line; it is skipped"
      )
      return checkLineCount(mark(0))
    }
    if line.last == 0x0D { line.removeLast() }
    var index = 0
    while index < line.count, line[index] == 0x20 || line[index] == 0x09 { index += 1 }
    if index == line.count || line[index] == 0x23 { return true }  // blank, or a # comment
    checksumLines += 1
    guard checkLineCount(mark(index)) else { return false }
    if let nul = line.firstIndex(of: 0) {
      problem(mark(nul), "the line contains a NUL byte; it is skipped")
      return true
    }
    if let bad = Self.firstInvalidUTF8(line) {
      problem(
        mark(bad), "the line is not UTF-8 (byte 0x\(String(line[bad], radix: 16, uppercase: true))); it is skipped")
      return true
    }
    let lineStart = mark(index)
    let escaped = line[index] == 0x5C
    if escaped { index += 1 }
    if let tagEnd = Self.tagEnd(line, from: index) {
      readTagged(line, tag: index..<tagEnd, escaped: escaped, lineStart: lineStart, mark: mark)
    } else {
      readGNU(line, from: index, escaped: escaped, lineStart: lineStart, mark: mark)
    }
    return true
  }

  private mutating func checkLineCount(_ mark: SourceMark) -> Bool {
    guard checksumLines > maxLines else { return true }
    result.refuse(
      Diagnostic(
        .error, at: mark,
        "the checksum file has more than \(maxLines) checksum lines, the most batchdl reads; it is refused"
      ))
    return false
  }

  /// `HASH  NAME`, `HASH *NAME`, or `HASH NAME` (`md5 -r`).
  private mutating func readGNU(
    _ line: [UInt8], from start: Int, escaped: Bool, lineStart: SourceMark, mark: (Int) -> SourceMark
  ) {
    var end = start
    while end < line.count, Hex.value(of: line[end]) != nil { end += 1 }
    let digits = end - start
    if digits > 0 && end == line.count {
      problem(mark(start), "no file name after the hash; the line is skipped")
      return
    }
    guard digits > 0, line[end] == 0x20 || line[end] == 0x09 else {
      let found = String(decoding: line[start...], as: UTF8.self)
      problem(
        mark(start),
        "not a checksum line: expected 'HASH  NAME', 'HASH *NAME' or 'TAG (NAME) = HASH', found '\(ShownText.escaped(found, limit: 40))'"
      )
      return
    }
    if Self.isReleaseLine(line, hashEnd: end) {
      problem(
        mark(start),
        "not a checksum line: 'HASH SIZE PATH' is Debian's Release format, which batchdl does not read (expected 'HASH  NAME', 'HASH *NAME' or 'TAG (NAME) = HASH'); the line is skipped"
      )
      return
    }
    var nameStart = end + 1
    if nameStart < line.count, line[nameStart] == 0x20 || line[nameStart] == 0x2A { nameStart += 1 }
    let hex = String(decoding: line[start..<end], as: UTF8.self)
    let algorithm: DigestAlgorithm?
    switch digits {
    case 64: algorithm = .sha256
    case 128: algorithm = .sha512
    case 40: algorithm = .sha1
    case 32: algorithm = .md5
    default: algorithm = nil
    }
    let lengthUnknown = algorithm == nil && Self.otherLengths[digits] == nil
    guard let name = readName(line, nameStart..<line.count, escaped: escaped, mark: mark, hashProblem: lengthUnknown)
    else {
      if lengthUnknown { badLength(digits, mark(start)) }
      return
    }
    guard let algorithm else {
      if let other = Self.otherLengths[digits] {
        ignore(
          name, "hashes of \(digits) hexadecimal digits (\(other))", at: lineStart,
          "the checksum file gives it only a hash of \(digits) hexadecimal digits (\(other)), which batchdl does not check"
        )
      } else {
        badLength(digits, mark(start))
        leaveOut(name, at: lineStart, "its line in the checksum file has a hash of \(digits) hexadecimal digits")
      }
      return
    }
    add(name, ExpectedDigest(algorithm: algorithm, hex: hex.lowercased()), at: lineStart)
  }

  private mutating func badLength(_ digits: Int, _ mark: SourceMark) {
    problem(
      mark,
      "a hash of \(digits) hexadecimal digits is none that batchdl checks (64: SHA-256, 128: SHA-512, 40: SHA-1, 32: MD5); the line is skipped"
    )
  }

  /// `TAG (NAME) = HASH`; the name ends at the line's last `)`, as coreutils reads it.
  private mutating func readTagged(
    _ line: [UInt8], tag: Range<Int>, escaped: Bool, lineStart: SourceMark, mark: (Int) -> SourceMark
  ) {
    let tagText = String(decoding: line[tag], as: UTF8.self)
    var open = tag.upperBound
    if line[open] == 0x20 { open += 1 }
    guard let close = line.lastIndex(of: 0x29), close > open else {
      problem(mark(open), "a tagged line is 'TAG (NAME) = HASH': no ')' ends the name; the line is skipped")
      return
    }
    var index = close + 1
    while index < line.count, line[index] == 0x20 || line[index] == 0x09 { index += 1 }
    guard index < line.count, line[index] == 0x3D else {
      problem(mark(close), "a tagged line is 'TAG (NAME) = HASH': expected ' = ' after the name; the line is skipped")
      return
    }
    index += 1
    while index < line.count, line[index] == 0x20 || line[index] == 0x09 { index += 1 }
    var hashEnd = line.count
    while hashEnd > index, line[hashEnd - 1] == 0x20 || line[hashEnd - 1] == 0x09 { hashEnd -= 1 }
    let hashText = String(decoding: line[index..<hashEnd], as: UTF8.self)
    guard let algorithm = Self.algorithm(tag: tagText) else {
      guard let name = readName(line, (open + 1)..<close, escaped: escaped, mark: mark, hashProblem: false) else {
        return
      }
      let shown = ShownText.escaped(tagText, limit: 40)
      ignore(
        name, "\(shown) hashes", at: lineStart,
        "the checksum file gives it only a \(shown) hash, which batchdl does not check")
      return
    }
    let digest = ExpectedDigest.parse(hashText, algorithm: algorithm)
    let hashProblem = (try? digest.get()) == nil
    guard let name = readName(line, (open + 1)..<close, escaped: escaped, mark: mark, hashProblem: hashProblem) else {
      return
    }
    switch digest {
    case .success(let value):
      add(name, value, at: lineStart)
    case .failure(let failure):
      problem(
        mark(index), "bad \(ShownText.escaped(tagText, limit: 40)) hash: \(failure.message); the line is skipped")
      leaveOut(name, at: lineStart, "its line in the checksum file has a bad hash (\(failure.message))")
    }
  }

  /// The name in `range`, unescaped and checked, or nil after reporting why it is refused (unless
  /// `hashProblem`: the line's hash is bad too, and that is reported instead).
  private mutating func readName(
    _ line: [UInt8], _ range: Range<Int>, escaped: Bool, mark: (Int) -> SourceMark, hashProblem: Bool
  ) -> String? {
    var bytes = Array(line[range])
    if escaped {
      switch Self.unescape(bytes) {
      case .success(let plain): bytes = plain
      case .failure(let failure):
        if !hashProblem {
          let offset = range.lowerBound + failure.offset
          let sequence = String(decoding: line[offset...].prefix(2), as: UTF8.self)
          problem(
            mark(offset),
            "unknown escape '\(ShownText.escaped(sequence, limit: 4))' in the name: a line that starts with '\\' writes '\\\\' for a backslash, '\\n' for a newline and '\\r' for a carriage return; the line is skipped"
          )
        }
        return nil
      }
    }
    let written = String(decoding: bytes, as: UTF8.self)
    switch Self.checkName(written) {
    case .success(let name):
      return name
    case .failure(let refused):
      if !hashProblem { problem(mark(range.lowerBound), refused.message + "; the line is skipped") }
      return nil
    }
  }

  // MARK: - Results

  private mutating func add(_ name: String, _ digest: ExpectedDigest, at mark: SourceMark) {
    let added = result.add(
      name: name, algorithm: digest.algorithm, hex: digest.hex, line: mark.line, column: mark.column)
    guard case .disagrees(let line) = added else { return }
    problem(
      mark,
      "'\(ShownText.escaped(name, limit: 200))' has another \(digest.algorithm.rawValue) hash at line \(line): the checksum file disagrees with itself, and the name is left out"
    )
  }

  private mutating func leaveOut(_ name: String, at mark: SourceMark, _ message: String) {
    result.addLeftOut(name: name, line: mark.line, column: mark.column, reason: message)
  }

  /// A line of an algorithm batchdl does not check: counted for one warning (a few algorithms by
  /// name, the rest together), and its name kept.
  private mutating func ignore(_ name: String, _ named: String, at mark: SourceMark, _ message: String) {
    var what = named
    if unsupported[what] == nil && unsupported.count >= Self.maxUnsupportedNamed {
      what = "hashes of other algorithms"
    }
    if let (count, first) = unsupported[what] {
      unsupported[what] = (count + 1, first)
    } else {
      unsupported[what] = (1, mark)
      unsupportedOrder.append(what)
    }
    leaveOut(name, at: mark, message)
  }

  private mutating func problem(_ mark: SourceMark, _ message: String) {
    problems += 1
    if problems <= ChecksumFile.maxListedProblems {
      result.addDiagnostic(Diagnostic(.error, at: mark, message))
    } else if firstUnlisted == nil {
      firstUnlisted = mark
    }
  }

  // MARK: - Pieces of a line

  /// Whether a line whose hash ends at `hashEnd` is a line of a Debian Release file's
  /// `SHA256:` field (` HASH SIZE PATH`, the size right-aligned): after the hash, blanks, decimal
  /// digits, blanks and a path, with the line indented or the digits set off by more than the
  /// two characters of coreutils' separator (or a tab). Such a line never becomes an entry named
  /// `SIZE PATH`; `HASH  2024 notes.txt` from coreutils (not indented, two spaces) stays a name.
  package static func isReleaseLine(_ line: [UInt8], hashEnd: Int) -> Bool {
    func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
    var index = hashEnd
    while index < line.count, isBlank(line[index]) { index += 1 }
    let gap = line[hashEnd..<index]
    let digitsStart = index
    while index < line.count, (0x30...0x39).contains(line[index]) { index += 1 }
    guard index > digitsStart, index < line.count, isBlank(line[index]) else { return false }
    while index < line.count, isBlank(line[index]) { index += 1 }
    guard index < line.count else { return false }
    let indented = line.first.map(isBlank) ?? false
    return indented || gap.count > 2 || gap.contains(0x09)
  }

  /// The end of a BSD tag (`SHA256`, `SHA2-256`, `BLAKE2b`...) that starts at `start` and is
  /// followed by ` (` or `(`; nil when the line has none.
  private static func tagEnd(_ line: [UInt8], from start: Int) -> Int? {
    var end = start
    while end < line.count, isTagByte(line[end]) { end += 1 }
    guard end > start, end < line.count, isLetter(line[start]) else { return nil }
    let open = line[end] == 0x20 ? end + 1 : end
    guard open < line.count, line[open] == 0x28 else { return nil }
    // No tag is all hexadecimal digits: such a run is a GNU line's hash.
    if line[start..<end].allSatisfy({ Hex.value(of: $0) != nil }) { return nil }
    return end
  }

  private static func isLetter(_ byte: UInt8) -> Bool {
    (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
  }

  private static func isTagByte(_ byte: UInt8) -> Bool {
    isLetter(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
  }

  /// The algorithm a BSD tag names: `SHA256`, `SHA512`, `SHA1`, `MD5` (BSD, coreutils `--tag`),
  /// `SHA2-256`, `SHA2-512` (coreutils `cksum -a sha2`), `SHA-256`... in either case.
  package static func algorithm(tag: String) -> DigestAlgorithm? {
    switch tag.uppercased() {
    case "SHA2-256", "SHA2_256": return .sha256
    case "SHA2-512", "SHA2_512": return .sha512
    default: return DigestAlgorithm(named: tag)
    }
  }

  /// `\\` → `\`, `\n` → newline, `\r` → carriage return (coreutils' escapes); the offset of any
  /// other backslash.
  package static func unescape(_ bytes: [UInt8]) -> Result<[UInt8], UnescapeFailure> {
    guard bytes.contains(0x5C) else { return .success(bytes) }
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var index = 0
    while index < bytes.count {
      let byte = bytes[index]
      guard byte == 0x5C else {
        out.append(byte)
        index += 1
        continue
      }
      switch index + 1 < bytes.count ? bytes[index + 1] : 0 {
      case 0x5C: out.append(0x5C)
      case 0x6E: out.append(0x0A)
      case 0x72: out.append(0x0D)
      default: return .failure(UnescapeFailure(offset: index))
      }
      index += 2
    }
    return .success(out)
  }

  package struct UnescapeFailure: Error {
    package var offset: Int
  }

  /// A name as a relative path that stays inside the checksum file's folder, normalized; or why not.
  package static func checkName(_ name: String) -> Result<String, ChecksumNameProblem> {
    func refused(_ reason: String) -> Result<String, ChecksumNameProblem> {
      .failure(ChecksumNameProblem("file name '\(ShownText.escaped(name, limit: 200))' \(reason)"))
    }
    if name.isEmpty { return .failure(ChecksumNameProblem("no file name after the hash")) }
    if name.hasPrefix("/") { return refused("is absolute; names in a checksum file are relative to its folder") }
    // One pass over the bytes: control characters (C0, DEL, C1 as 0xC2 0x80...0x9F) and `..` segments.
    var previous: UInt8 = 0x2F
    var segmentDots = 0
    var climbs = false
    for byte in name.utf8 {
      if byte < 0x20 || byte == 0x7F || (previous == 0xC2 && (0x80...0x9F).contains(byte)) {
        return refused("contains a control character")
      }
      if byte == 0x2F {
        if segmentDots == 2 { climbs = true }
        segmentDots = 0
      } else if byte == 0x2E && (previous == 0x2F || previous == 0x2E) && segmentDots >= 0 {
        segmentDots += 1
      } else {
        segmentDots = -1
      }
      previous = byte
    }
    if climbs || segmentDots == 2 {
      return refused("contains '..'; it could name a file outside the checksum file's folder")
    }
    if name.hasSuffix("/") { return refused("names a folder, not a file") }
    switch RelativeDestination.parse(name) {
    case .success(let value) where !value.isFolder: return .success(value.path)
    case .success: return refused("names the folder itself, not a file")
    case .failure(let problem): return refused(problem.reason.message)
    }
  }

  /// The 1-based column (in characters) of byte `offset` of a UTF-8 line.
  package static func column(of offset: Int, in line: [UInt8]) -> Int {
    var column = 1
    for byte in line.prefix(offset) where byte & 0xC0 != 0x80 { column += 1 }
    return column
  }

  /// The offset of the first byte that does not belong to valid UTF-8, or nil.
  package static func firstInvalidUTF8(_ line: [UInt8]) -> Int? {
    if line.allSatisfy({ $0 < 0x80 }) { return nil }
    var offset = 0
    var iterator = line.makeIterator()
    var decoder = UTF8()
    while true {
      switch decoder.decode(&iterator) {
      case .scalarValue(let scalar): offset += UTF8.width(scalar)
      case .emptyInput: return nil
      case .error: return offset
      }
    }
  }
}

/// Why a name of a checksum file is refused.
package struct ChecksumNameProblem: Error {
  package var message: String
  package init(_ message: String) { self.message = message }
}
