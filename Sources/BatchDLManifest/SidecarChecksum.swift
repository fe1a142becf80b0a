import BatchDLSupport

/// A sidecar checksum file (`NAME.sha256` or `NAME.sha512` beside `NAME`, `checksums: sidecar`):
/// the digest it gives its own file.
///
/// Three forms are read: GNU coreutils (`HASH  NAME`), BSD tags (`SHA256 (NAME) = HASH`), both by
/// `ChecksumFile`, or a bare hash (64 hexadecimal digits: SHA-256; 128: SHA-512) alone on its
/// first line. A file never gets another file's digest: a line must name `NAME` (by itself, or as
/// the last component of a path such as `dist/NAME`), unless the file is a bare hash.
public enum SidecarChecksum {
  /// The largest sidecar read (64KB: one line, or a few with other algorithms).
  public static let maxBytes = 64 << 10

  /// The strongest digest `bytes` give the file named `fileName` (its last path component, as
  /// bytes), or why none; `file` names the sidecar in messages.
  public static func digest(_ bytes: [UInt8], fileName: String, file: String) -> Result<ExpectedDigest, SidecarProblem>
  {
    guard bytes.count <= maxBytes else {
      return .failure(
        SidecarProblem("it holds more than \(ByteSize.format(Int64(maxBytes))), the most batchdl reads of a sidecar"))
    }
    if let bare = bareHash(bytes) { return bare }
    let parsed = ChecksumFile.parse(bytes, file: file)
    if parsed.isUnusable || parsed.entryCount == 0 {
      let reason = parsed.diagnostics.first { $0.severity == .error }.map { "\($0.mark): \($0.message)" }
      return .failure(SidecarProblem(reason ?? "it holds no checksum line"))
    }
    let named = parsed.entries(named: fileName)
    let found: [ChecksumEntry]
    if !named.isEmpty {
      found = named
    } else {
      // `HASH  dist/NAME`: the path the file was hashed at upstream; its last component must be NAME.
      let names = Set(parsed.entries.map(\.name))
      let matching = names.filter { Array($0.utf8).split(separator: 0x2F).last.map(Array.init) == Array(fileName.utf8) }
      guard matching.count == 1, let name = matching.first else {
        let listed = names.sorted().prefix(3).map { "'\(ShownText.escaped($0, limit: 100))'" }.joined(separator: ", ")
        return .failure(SidecarProblem("it names \(listed), not '\(ShownText.escaped(fileName, limit: 200))'"))
      }
      found = parsed.entries(named: name)
    }
    guard let strongest = found.first, strongest.digest.algorithm.isStrong else {
      return .failure(
        SidecarProblem(
          "it gives '\(ShownText.escaped(fileName, limit: 200))' only a weak hash (SHA-1 or MD5), which cannot prove the file was not replaced"
        ))
    }
    return .success(strongest.digest)
  }

  /// A bare hash alone on the first line (blank lines and spaces around it allowed), as
  /// `sha256sum FILE | cut -d' ' -f1 > FILE.sha256` writes it; nil when the bytes are not that.
  static func bareHash(_ bytes: [UInt8]) -> Result<ExpectedDigest, SidecarProblem>? {
    let words = bytes.split { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
    guard words.count == 1, let word = words.first, word.allSatisfy({ Hex.value(of: $0) != nil }) else {
      return nil
    }
    let hex = String(decoding: word, as: UTF8.self).lowercased()
    switch hex.utf8.count {
    case 64: return .success(ExpectedDigest(algorithm: .sha256, hex: hex))
    case 128: return .success(ExpectedDigest(algorithm: .sha512, hex: hex))
    default:
      return .failure(
        SidecarProblem("a bare hash of \(hex.utf8.count) hexadecimal digits is neither SHA-256 (64) nor SHA-512 (128)"))
    }
  }
}

/// Why a sidecar gives its file no digest.
public struct SidecarProblem: Error, Sendable, Equatable, CustomStringConvertible {
  public var message: String

  public init(_ message: String) { self.message = message }

  public var description: String { message }
}
