import BatchDLSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The last run reports of a manifest, kept in its state folder (`runs/MANIFEST/run-N.json`, N
/// counting up), so that `report diff MANIFEST` and `report show MANIFEST` have the nights before
/// without a `--report` file or a rotation script. Every run that takes the manifest's lock adds
/// one, with or without `--report`; the oldest go past `report_history`.
public struct RunHistory: Sendable {
  /// One kept report: its number (larger is later) and its path.
  public struct Entry: Sendable, Equatable {
    public var number: Int
    public var path: String
  }

  /// The folder the reports are in.
  public let folder: String

  public init(folder: String) {
    self.folder = folder
  }

  /// The name of run `number`'s report: zero-padded, so that a listing sorts by time.
  static func name(of number: Int) -> String {
    "run-" + TextFormat.zeroPadded(number, width: 6) + ".json"
  }

  /// The number in a report's name, or nil for a file that is not one (a partial file, anything
  /// put there by hand).
  static func number(in name: String) -> Int? {
    guard name.hasPrefix("run-"), name.hasSuffix(".json") else { return nil }
    let digits = name.dropFirst("run-".count).dropLast(".json".count)
    guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
    return Int(digits)
  }

  /// The kept reports, oldest first.
  public func entries() -> [Entry] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    return names.compactMap { name in Self.number(in: name).map { Entry(number: $0, path: folder + "/" + name) } }
      .sorted { $0.number < $1.number }
  }

  /// The report of run `offset` counted back from the last (-1 the last, -2 the one before), or
  /// nil when fewer are kept.
  public func entry(run offset: Int) -> Entry? {
    let all = entries()
    guard offset < 0, -offset <= all.count else { return nil }
    return all[all.count + offset]
  }

  /// Writes the next run's report (what `body` writes), atomically, then removes the oldest so
  /// that `keep` stay; `keep` 0 writes nothing. Returns the report's path.
  @discardableResult
  public func add(keep: Int, _ body: (inout AtomicFile.FileStream) -> Void) throws(SystemError) -> String? {
    guard keep > 0 else {
      trim(keep: 0)
      return nil
    }
    let path = folder + "/" + Self.name(of: (entries().last?.number ?? 0) + 1)
    try AtomicFile.write(to: path, body)
    trim(keep: keep)
    return path
  }

  /// Removes the oldest reports beyond the last `keep`.
  public func trim(keep: Int) {
    let all = entries()
    for entry in all.dropLast(max(0, keep)) { unlink(entry.path) }
  }

  /// Which runs are kept, for a message: `3 runs are kept (run-000001.json to run-000003.json)`.
  public var summary: String {
    let all = entries()
    guard let first = all.first, let last = all.last else { return "no run is kept in \(folder)" }
    let count = all.count == 1 ? "1 run is" : "\(all.count) runs are"
    let names = FileAccess.name(of: first.path) + (all.count > 1 ? " to " + FileAccess.name(of: last.path) : "")
    return "\(count) kept in \(folder) (\(names))"
  }
}
