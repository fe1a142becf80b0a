import Foundation

/// New versions of the synthetic repository, published in place as an archive's update does, and
/// the hostile ones.
///
/// ```swift
/// try repository.update(changing: ["pkg0"], removing: ["pkg1"], adding: ["newpkg"])
/// try repository.replaceIndex("main/binary-amd64/Packages", of: "stable", with: "Package: x\nFilename: ../../x\n")
/// repository.tamper("main/binary-amd64/Packages.xz", of: "stable")  // after signing
/// try repository.update(suites: ["stable"], date: "Fri, 27 Nov 2026 10:00:00 UTC")  // a rollback
/// try repository.update(suites: ["stable"], signedBy: OpenPGPKeys.other)  // a key not in `keyring`
/// ```
extension AptRepositoryFixture {
  /// Publishes a new version of `suites` (every suite when nil), as an archive update does: the
  /// packages named in `changing` get a new version (`VERSION+uN`: new pool files beside the old
  /// ones), those in `removing` leave the indexes, those in `adding` come in (version `1.0+uN`,
  /// in every component); the new pool files are written first, then every index (each
  /// compression, a new by-hash copy beside the older ones, which stay as Debian's archive keeps
  /// them), then Release, InRelease and Release.gpg signed by `signer` with `date` (default: one
  /// minute after the suite's previous `Date`) and `validUntil` (default: the previous one; both
  /// stay for later updates). Pool files no index names any more stay on disk, as an upstream pool
  /// keeps them for a while, unless `deletingOldPool` (then those of earlier updates go too).
  /// Each publish gives the files it changes a modification time later than the last one's (nginx's
  /// `Last-Modified` and `ETag` change at once). An update with no change re-signs the suite
  /// (a rollback with an older `date`, an expired Release with a past `validUntil`, a Release
  /// signed by `OpenPGPKeys.other`).
  public func update(
    suites: [String]? = nil, date: String? = nil, validUntil: String? = nil, changing: Set<String> = [],
    removing: Set<String> = [], adding: [String] = [], deletingOldPool: Bool = false,
    signedBy signer: String = OpenPGPKeys.test
  ) throws {
    updates += 1
    for suite in suites ?? self.suites {
      guard var byComponent = packages[suite] else { throw Problem("\(suite) is not a suite of the repository") }
      for component in components {
        var list = byComponent[component] ?? []
        list.removeAll { removing.contains($0.name) }
        for index in list.indices where changing.contains(list[index].name) {
          list[index].version += "+u\(updates)"
        }
        for name in adding where !list.contains(where: { $0.name == name }) {
          list.append(Package(name: name, version: "1.0+u\(updates)", hasSource: true))
        }
        byComponent[component] = list
      }
      packages[suite] = byComponent
      releaseDates[suite] = try date ?? Self.minuteAfter(releaseDates[suite] ?? self.date)
      if let validUntil { validUntils[suite] = validUntil }
      try publish(suite, signedBy: signer)
    }
    guard deletingOldPool else { return }
    for file in everInPool.subtracting(pool.keys) { remove(file) }
  }

  /// Makes the index `index` of `suite` (its path below `dists/SUITE/` without compression suffix,
  /// e.g. `main/binary-amd64/Packages`, `main/source/Sources`, or one the suite does not have)
  /// hold `text` — any stanzas: a `Filename: ../../x`, a stanza naming `dists/stable/InRelease`,
  /// duplicates that disagree — plain, `.gz`, `.xz` and by hash, and re-signs the suite's Release
  /// over it (its `Date` unchanged unless `date`). The text stays over later updates; nil goes back
  /// to the generated index. `pool` and `poolBySuite` still count the generated indexes.
  public func replaceIndex(
    _ index: String, of suite: String, with text: String?, date: String? = nil,
    signedBy signer: String = OpenPGPKeys.test
  ) throws {
    guard packages[suite] != nil else { throw Problem("\(suite) is not a suite of the repository") }
    replacedIndexes[suite, default: [:]][index] = text
    if let date { releaseDates[suite] = date }
    try publish(suite, signedBy: signer)
  }

  /// The by-hash path (below the root) of `file` (below `dists/SUITE/`, e.g.
  /// `main/binary-amd64/Packages.xz`) as the suite's current Release lists it: the path apt fetches.
  public func byHashPath(_ file: String, of suite: String) -> String? {
    guard let digest = listedDigests[suite]?[file] else { return nil }
    return "dists/\(suite)/\((file as NSString).deletingLastPathComponent)/by-hash/SHA256/\(digest)"
  }

  /// Changes one byte of `file` (below `dists/SUITE/`, as the Release lists it) and of its by-hash
  /// copy, keeping their size, after the Release was signed: an index whose bytes do not match
  /// its Release line (apt: "Hash Sum mismatch").
  public func tamper(_ file: String, of suite: String) {
    for relative in ["dists/\(suite)/\(file)", byHashPath(file, of: suite)].compactMap({ $0 }) {
      guard var bytes = read(relative), !bytes.isEmpty else { continue }
      bytes[bytes.count / 2] ^= 0xFF
      write(relative, bytes)
    }
  }

  /// Removes `relative` (a file or a folder) below the root: a Release that lists a file the
  /// server does not have, a pool file gone.
  public func remove(_ relative: String) {
    try? FileManager.default.removeItem(atPath: path(relative))
  }

  /// Why an update could not be made.
  public struct Problem: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
  }

  /// The Release `Date` one minute after `date` (`Sat, 28 Nov 2026 10:00:00 UTC`).
  static func minuteAfter(_ date: String) throws -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'UTC'"
    guard let parsed = formatter.date(from: date) else { throw Problem("\(date) is not a Release date") }
    return formatter.string(from: parsed.addingTimeInterval(60))
  }
}
