/// The record `keep_removed` works from, as a value: the paths (relative to a repository's root)
/// the last complete crawl of an `apt:` entry named, and those it keeps in the mirror though no
/// index names them any more, with the time (seconds since 1970) each may go.
///
/// Stored in the state folder as lines `N<TAB>PATH` and `K<TAB>TIME<TAB>PATH` (paths from a
/// repository never hold a tab or a newline: `AptPath` refuses control characters).
public struct NamedPaths: Equatable, Sendable {
  public var named = Set<[UInt8]>()
  public var kept: [[UInt8]: Int64] = [:]

  public init(named: Set<[UInt8]> = [], kept: [[UInt8]: Int64] = [:]) {
    self.named = named
    self.kept = kept
  }

  /// What a crawl that names `named` makes of this record, at `now`:
  /// - `complete` (the crawl fetched every document and nothing failed): a path named before and
  ///   not now is kept `keepSeconds` from now (not at all when 0); a kept path goes when its time
  ///   has come or it is named again; the new record is returned to be stored.
  /// - otherwise (a document or path failed, or copies were only read): nothing is learnt, the
  ///   record stays as it is (nil), and every path it names or keeps that is not named now is kept
  ///   (the session does not prune after such a night anyway).
  public func next(
    named now: Set<[UInt8]>, complete: Bool, keepSeconds: Int64, now time: Int64
  ) -> (
    record: NamedPaths?, kept: [[UInt8]: Int64]
  ) {
    guard complete else {
      var kept = self.kept.filter { !now.contains($0.key) }
      for path in named where !now.contains(path) { kept[path] = max(kept[path] ?? 0, time + keepSeconds) }
      return (nil, kept)
    }
    var record = NamedPaths(named: now)
    if keepSeconds > 0 {
      for path in named where !now.contains(path) { record.kept[path] = time + keepSeconds }
    }
    for (path, until) in kept where until > time && !now.contains(path) {
      record.kept[path] = min(until, record.kept[path] ?? until)
    }
    return (record, record.kept)
  }

  /// The record as stored; unreadable lines are skipped (the record only ever keeps files longer).
  public static func parse(_ bytes: [UInt8]) -> NamedPaths {
    var record = NamedPaths()
    for line in bytes.split(separator: 0x0A) {
      let fields = line.split(separator: 0x09, maxSplits: 2, omittingEmptySubsequences: false)
      if fields.count == 2, fields[0].elementsEqual([0x4E]) {
        record.named.insert(Array(fields[1]))
      } else if fields.count == 3, fields[0].elementsEqual([0x4B]),
        let until = Int64(String(decoding: fields[1], as: UTF8.self))
      {
        record.kept[Array(fields[2])] = until
      }
    }
    return record
  }

  /// The record as stored, lines sorted by path.
  public var bytes: [UInt8] {
    var bytes: [UInt8] = []
    for path in named.sorted(by: { $0.lexicographicallyPrecedes($1) }) { bytes += [0x4E, 0x09] + path + [0x0A] }
    for (path, until) in kept.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
      bytes += [0x4B, 0x09] + Array(String(until).utf8) + [0x09] + path + [0x0A]
    }
    return bytes
  }
}
