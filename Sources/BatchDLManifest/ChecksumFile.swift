import BatchDLSupport
import Foundation

/// One line of a checksum file that gave a usable digest: a file's name and its expected digest.
public struct ChecksumEntry: Hashable, Sendable {
  /// The name, a normalized relative path (`./` and empty segments dropped, never absolute, no `..`).
  public var name: String
  public var digest: ExpectedDigest
  /// Where the line starts (its first character that is not a space).
  public var mark: SourceMark

  /// SHA-1 or MD5: checked, but the caller warns that it cannot prove the file was not replaced.
  public var isWeak: Bool { !digest.algorithm.isStrong }
}

/// A name a checksum file lists on a line that gave no usable digest (a bad hash, an algorithm
/// batchdl does not check, two lines that disagree): a task matched to it learns why it has none.
public struct ChecksumLeftOut: Hashable, Sendable {
  public var name: String
  public var mark: SourceMark
  /// Why the name has no digest (names escaped).
  public var message: String
}

/// A checksum file as read: GNU coreutils lines (`HASH  NAME`, `HASH *NAME`, `./NAME`, lines that
/// start with `\` and escape their name) and BSD tags (`SHA256 (NAME) = HASH`), several algorithms
/// mixed. The algorithm comes from the tag or from the hash's length (64 hexadecimal digits:
/// SHA-256, 128: SHA-512, 40: SHA-1, 32: MD5). Blank lines and lines starting with `#` are skipped.
///
/// The file is a document from the network: a line that cannot be read (too long, NUL, not UTF-8,
/// not a checksum line, a bad hash, a name that is absolute, climbs with `..` or holds a control
/// character) is an error at its `FILE:LINE:COLUMN` and is skipped; the other lines are unaffected.
/// Several lines for one name with different algorithms are all kept (the strongest is used); two
/// lines for one name with one algorithm and different hashes leave that name out. Only the whole
/// file's size and line count can refuse it whole (`isUnusable`).
///
/// A clear-signed file (`-----BEGIN PGP SIGNED MESSAGE-----`) is never read as it is:
/// `parse(_:file:)` gives no entries and says it needs its signature checked, and the text gpgv
/// says was signed (`SignatureCheck.verifyClearSigned`) is read with `parse(signedText:of:file:)`.
public struct ChecksumFile: Sendable {
  /// The largest checksum file read (64MB): a million SHA-256 lines with 30-byte names fit.
  public static let maxBytes = 64 << 20
  /// The most checksum lines (neither blank nor comments, good or bad) one file may have: as many
  /// as the tasks a plan is measured for. An entry takes about 60 bytes and its name in memory.
  public static let maxLines = 1_000_000
  /// The longest line read (16KB): a name is at most 4096 bytes (PATH_MAX), twice that escaped, plus
  /// a 128-digit hash. A longer line is an error and is skipped.
  public static let maxLineBytes = 16 << 10
  /// Errors listed one by one; past these, one more says how many lines were skipped besides.
  public static let maxListedProblems = 100
  /// The line that starts an OpenPGP clear-signed message.
  public static let clearSignedHeader = "-----BEGIN PGP SIGNED MESSAGE-----"

  /// The file as diagnostics name it.
  public let file: String
  /// Errors and warnings at `FILE:LINE:COLUMN`, in the file's order.
  public private(set) var diagnostics: [Diagnostic] = []
  /// The bytes are an OpenPGP clear-signed message: nothing was read from them.
  public private(set) var isClearSigned = false
  /// The file was refused whole (too large, too many lines, clear-signed): it has no entries.
  public private(set) var isUnusable = false

  // A million lines are kept as fixed records over two buffers (names, binary digests): no object
  // per line; entries are made when asked for.
  private var names = NameArena()
  /// Per name: its first entry and its first line left out (-1: none), and whether two of its lines
  /// disagree (its entries are then dropped).
  private var firstEntry: [Int32] = []
  private var firstLeftOut: [Int32] = []
  private var conflicted: [Bool] = []
  private var records: [EntryRecord] = []
  private var digests: [UInt8] = []
  private var leftOutRecords: [LeftOutRecord] = []
  /// The reasons of lines left out, each once (`LeftOutRecord.reason`).
  private var reasons: [String] = []
  private var reasonIndex: [String: Int32] = [:]
  private var droppedEntries = 0

  /// One line that gave a digest.
  private struct EntryRecord {
    var name: Int32
    var line: Int32
    var column: Int32
    /// Where its digest starts in `digests` (`algorithm.hexLength / 2` bytes).
    var digest: Int32
    /// The next entry of the same name, or -1.
    var next: Int32
    var algorithm: DigestAlgorithm
  }

  /// One line left out with a readable name.
  private struct LeftOutRecord {
    var name: Int32
    var line: Int32
    var column: Int32
    var reason: Int32
    /// For two lines that disagree: the line of the first.
    var firstLine: Int32
  }

  /// What `add` did with a line's entry.
  package enum Added: Equatable {
    case added
    /// The same digest is already there: the line is dropped.
    case repeated
    /// Another digest of the same algorithm is at `line`: the name is left out from now on.
    case disagrees(line: Int)
    /// The name was left out by an earlier disagreement.
    case nameLeftOut
  }

  package init(file: String) {
    self.file = file
  }

  public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }

  /// The entries kept, in the file's order (a line repeating an earlier one is dropped); made anew
  /// at each call.
  public var entries: [ChecksumEntry] {
    records.indices.compactMap { firstEntry[Int(records[$0].name)] < 0 ? nil : entry(at: $0) }
  }

  /// How many entries are kept.
  public var entryCount: Int { records.count - droppedEntries }

  /// Names listed without a usable digest, in the file's order; made anew at each call.
  public var leftOut: [ChecksumLeftOut] { leftOutRecords.indices.map(leftOut(at:)) }

  // MARK: - Reading

  /// The bytes of the checksum file at `path`, at most `maxBytes` of them; a FIFO, a folder or a
  /// device is refused.
  public static func readBytes(path: String) throws(FileProblem) -> [UInt8] {
    try ManifestLoader.readManifest(
      path, limit: maxBytes,
      tooLarge: "it holds more than \(ByteSize.format(Int64(maxBytes))), the most batchdl reads of a checksum file",
      allowsPipe: false)
  }

  /// Reads the checksum file at `path`; `display` names it in diagnostics (default: `path`). A file
  /// that cannot be read is reported at `named` (the manifest's value that names it) when given.
  public static func read(path: String, display: String? = nil, named: SourceMark? = nil) -> ChecksumFile {
    let name = display ?? path
    do {
      return parse(try readBytes(path: path), file: name)
    } catch {
      return refused(
        Diagnostic(
          .error, at: named ?? SourceMark(file: name, line: 1, column: 1),
          "cannot read the checksum file: \(error.reason)"), file: name)
    }
  }

  /// Whether `bytes` hold an OpenPGP clear-signed message (a line `-----BEGIN PGP SIGNED MESSAGE-----`).
  public static func isClearSigned(_ bytes: [UInt8]) -> Bool {
    clearSignedLine(bytes) != nil
  }

  /// Parses a checksum file held in memory; `file` names it in diagnostics. A clear-signed file
  /// gives no entries (`isClearSigned`, with an error saying that its signature must be checked).
  public static func parse(_ bytes: [UInt8], file: String) -> ChecksumFile {
    parse(bytes, file: file, maxLines: maxLines)
  }

  /// `parse(_:file:)` with another line limit (the tests reach it without a million lines).
  package static func parse(_ bytes: [UInt8], file: String, maxLines: Int) -> ChecksumFile {
    if let refused = refuseSize(bytes.count, file: file) { return refused }
    if let line = clearSignedLine(bytes) {
      var result = refused(
        Diagnostic(
          .error, at: SourceMark(file: file, line: line, column: 1),
          "the checksum file is clear-signed (OpenPGP): batchdl reads its entries only from the text gpgv verified; give 'keyring:' beside 'checksums:'"
        ), file: file)
      result.isClearSigned = true
      return result
    }
    var reader = ChecksumLineReader(file: file, lineMap: .identity, maxLines: maxLines)
    reader.read(bytes)
    return reader.finish()
  }

  /// Parses the text gpgv verified of the clear-signed file `original` (what
  /// `SignatureCheck.verifyClearSigned` returns): only that text is read. Diagnostics point into
  /// `original`: line N of the text is the Nth line after the message's armor headers, and a
  /// dash-escaped line (`- `) is two columns further right.
  public static func parse(signedText: [UInt8], of original: [UInt8], file: String) -> ChecksumFile {
    if let refused = refuseSize(signedText.count, file: file) { return refused }
    var reader = ChecksumLineReader(file: file, lineMap: LineMap(clearSigned: original), maxLines: maxLines)
    reader.read(signedText)
    return reader.finish()
  }

  private static func refuseSize(_ count: Int, file: String) -> ChecksumFile? {
    guard count > maxBytes else { return nil }
    return refused(
      Diagnostic(
        .error, at: SourceMark(file: file, line: 1, column: 1),
        "the checksum file holds \(count) bytes, more than \(ByteSize.format(Int64(maxBytes))), the most batchdl reads"),
      file: file)
  }

  private static func refused(_ diagnostic: Diagnostic, file: String) -> ChecksumFile {
    var result = ChecksumFile(file: file)
    result.refuse(diagnostic)
    return result
  }

  /// The line number of the first `-----BEGIN PGP SIGNED MESSAGE-----` line (trailing spaces and a
  /// carriage return allowed), or nil.
  package static func clearSignedLine(_ bytes: [UInt8]) -> Int? {
    let header = Array(clearSignedHeader.utf8)
    var line = 1
    var start = 0
    while start <= bytes.count {
      let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
      if end - start >= header.count, bytes[start..<(start + header.count)].elementsEqual(header),
        bytes[(start + header.count)..<end].allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D })
      {
        return line
      }
      line += 1
      start = end + 1
    }
    return nil
  }

  // MARK: - Building

  /// Adds the entry of a line: `name` normalized, `hex` checked for `algorithm`.
  package mutating func add(
    name: String, algorithm: DigestAlgorithm, hex: String, line: Int, column: Int
  ) -> Added {
    let id = nameID(name)
    if conflicted[Int(id)] { return .nameLeftOut }
    let digest = Self.binary(hex)
    var current = firstEntry[Int(id)]
    var last: Int32 = -1
    while current >= 0 {
      let earlier = records[Int(current)]
      if earlier.algorithm == algorithm {
        let start = Int(earlier.digest)
        if digests[start..<(start + digest.count)].elementsEqual(digest) { return .repeated }
        conflicted[Int(id)] = true
        var dropped = firstEntry[Int(id)]
        while dropped >= 0 {
          droppedEntries += 1
          dropped = records[Int(dropped)].next
        }
        firstEntry[Int(id)] = -1
        firstLeftOut[Int(id)] = Int32(leftOutRecords.count)
        leftOutRecords.append(
          LeftOutRecord(
            name: id, line: Int32(line), column: Int32(column),
            reason: reason("the checksum file gives it two different \(algorithm.rawValue) hashes"),
            firstLine: earlier.line))
        return .disagrees(line: Int(earlier.line))
      }
      last = current
      current = earlier.next
    }
    let index = Int32(records.count)
    records.append(
      EntryRecord(
        name: id, line: Int32(line), column: Int32(column), digest: Int32(digests.count), next: -1,
        algorithm: algorithm))
    digests.append(contentsOf: digest)
    if last >= 0 { records[Int(last)].next = index } else { firstEntry[Int(id)] = index }
    return .added
  }

  /// Notes a line whose name could be read but which gives no usable digest, and why.
  package mutating func addLeftOut(name: String, line: Int, column: Int, reason text: String) {
    let id = nameID(name)
    if firstLeftOut[Int(id)] < 0 { firstLeftOut[Int(id)] = Int32(leftOutRecords.count) }
    leftOutRecords.append(
      LeftOutRecord(name: id, line: Int32(line), column: Int32(column), reason: reason(text), firstLine: -1))
  }

  package mutating func addDiagnostic(_ diagnostic: Diagnostic) {
    diagnostics.append(diagnostic)
  }

  /// Drops everything read: the whole file is refused for `diagnostic`.
  package mutating func refuse(_ diagnostic: Diagnostic) {
    self = ChecksumFile(file: file)
    isUnusable = true
    diagnostics = [diagnostic]
  }

  /// Sorts the diagnostics.
  package mutating func finish() {
    // By position; ties keep the order they were found in.
    diagnostics = diagnostics.enumerated().sorted { lhs, rhs in
      lhs.element.mark != rhs.element.mark ? lhs.element.mark < rhs.element.mark : lhs.offset < rhs.offset
    }.map(\.element)
  }

  private mutating func nameID(_ name: String) -> Int32 {
    let (id, inserted) = names.insert(Array(name.utf8))
    if inserted {
      firstEntry.append(-1)
      firstLeftOut.append(-1)
      conflicted.append(false)
    }
    return id
  }

  /// The reasons are few (a message per algorithm or hash length); past 1000 different ones, a
  /// general one stands for the rest.
  private mutating func reason(_ text: String) -> Int32 {
    if let index = reasonIndex[text] { return index }
    let general = "its line in the checksum file has a hash batchdl cannot use"
    if reasons.count >= 1000 && text != general { return reason(general) }
    reasons.append(text)
    reasonIndex[text] = Int32(reasons.count - 1)
    return Int32(reasons.count - 1)
  }

  /// Hexadecimal digits (checked) as bytes.
  private static func binary(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    return stride(from: 0, to: digits.count - 1, by: 2).map { index in
      (Hex.value(of: digits[index]) ?? 0) << 4 | (Hex.value(of: digits[index + 1]) ?? 0)
    }
  }

  // MARK: - Lookup

  private func entry(at index: Int) -> ChecksumEntry {
    let record = records[index]
    let start = Int(record.digest)
    let hex = digests[start..<(start + record.algorithm.hexLength / 2)].hexString
    return ChecksumEntry(
      name: names.string(record.name), digest: ExpectedDigest(algorithm: record.algorithm, hex: hex),
      mark: SourceMark(file: file, line: Int(record.line), column: Int(record.column)))
  }

  private func leftOut(at index: Int) -> ChecksumLeftOut {
    let record = leftOutRecords[index]
    var message = reasons[Int(record.reason)]
    if record.firstLine >= 0 { message += " (lines \(record.firstLine) and \(record.line))" }
    return ChecksumLeftOut(
      name: names.string(record.name), mark: SourceMark(file: file, line: Int(record.line), column: Int(record.column)),
      message: message)
  }

  private func entries(ofName id: Int32) -> [ChecksumEntry] {
    var found: [ChecksumEntry] = []
    var index = firstEntry[Int(id)]
    while index >= 0 {
      found.append(entry(at: Int(index)))
      index = records[Int(index)].next
    }
    return found.sorted { $0.digest.algorithm < $1.digest.algorithm }
  }

  /// The entries of `name` (a normalized relative path), strongest first; empty when it has none.
  public func entries(named name: String) -> [ChecksumEntry] {
    names.find(Array(name.utf8)).map { entries(ofName: $0) } ?? []
  }

  /// Why `name` has no entry although the file lists it, or nil.
  public func leftOut(named name: String) -> ChecksumLeftOut? {
    guard let id = names.find(Array(name.utf8)), firstLeftOut[Int(id)] >= 0 else { return nil }
    return leftOut(at: Int(firstLeftOut[Int(id)]))
  }

  /// The id of `name` (a normalized relative path, compared as bytes), when the file lists it
  /// (with an entry or left out).
  package func id(ofName name: String) -> Int32? {
    names.find(Array(name.utf8))
  }

  /// Where the first line of name `id` is (an entry's or a line left out, whichever is first).
  package func checksumName(_ id: Int32) -> ChecksumName {
    var line = Int32.max
    var column: Int32 = 1
    if firstEntry[Int(id)] >= 0 {
      line = records[Int(firstEntry[Int(id)])].line
      column = records[Int(firstEntry[Int(id)])].column
    }
    if firstLeftOut[Int(id)] >= 0, leftOutRecords[Int(firstLeftOut[Int(id)])].line < line {
      line = leftOutRecords[Int(firstLeftOut[Int(id)])].line
      column = leftOutRecords[Int(firstLeftOut[Int(id)])].column
    }
    return ChecksumName(name: names.string(id), mark: SourceMark(file: file, line: Int(line), column: Int(column)))
  }
}
