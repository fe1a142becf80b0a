import Foundation

/// The report of a run, built from `completed` events: stable JSON for `git diff` (keys sorted,
/// tasks sorted by id, no times unless asked) and JUnit XML for CI.
public struct RunReport: Sendable {
  public var manifest: String
  public var results: [TaskResult] = []
  public var requests = 0
  /// Wall time of the run, reported with `--timings` only.
  public var seconds: Double?
  /// `I/N` when the run was one shard of the manifest (`report merge` drops it).
  public var shard: String?

  public init(manifest: String) {
    self.manifest = manifest
  }

  public var summary: RunSummary {
    var summary = RunSummary()
    summary.requests = requests
    for result in results { summary.add(result) }
    return summary
  }

  public var sortedResults: [TaskResult] { results.sorted { $0.id < $1.id } }

  /// The JSON report (format `batchdl-report/1`), pretty-printed one task per line.
  public func json(timings: Bool) -> String {
    var head: [String: JSON] = [
      "format": .string("batchdl-report/1"), "manifest": .string(manifest), "summary": summary.json,
    ]
    if timings, let seconds { head["seconds"] = .string(String(format: "%.3f", seconds)) }
    if let shard { head["shard"] = .string(shard) }
    // Keys sorted: format, manifest, [seconds,] summary, tasks.
    var out = "{\n"
    for key in head.keys.sorted() {
      out += "  "
      JSON.quote(key, into: &out)
      out += ": "
      head[key]?.write(to: &out)
      out += ",\n"
    }
    out += "  \"tasks\": ["
    let tasks = sortedResults
    for (index, result) in tasks.enumerated() {
      out += index == 0 ? "\n    " : ",\n    "
      JSON.object(result.json(timings: timings)).write(to: &out)
    }
    out += tasks.isEmpty ? "]\n}\n" : "\n  ]\n}\n"
    return out
  }

  /// JUnit XML: one test suite per session, one test case per task; failed tasks are failures,
  /// deferred ones skipped.
  public func junit(timings: Bool) -> String {
    let bySession = Dictionary(grouping: sortedResults, by: \.session)
    var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    let failures = results.count { $0.outcome == .failed }
    out += "<testsuites name=\"\(Self.escape(manifest))\" tests=\"\(results.count)\" failures=\"\(failures)\">\n"
    for session in bySession.keys.sorted() {
      let cases = bySession[session] ?? []
      let failed = cases.count { $0.outcome == .failed }
      let skipped = cases.count { $0.outcome == .deferred || $0.outcome == .cancelled }
      out +=
        "  <testsuite name=\"\(Self.escape(session))\" tests=\"\(cases.count)\" failures=\"\(failed)\" skipped=\"\(skipped)\">\n"
      for result in cases {
        let time = timings ? result.seconds.map { " time=\"\(String(format: "%.3f", $0))\"" } ?? "" : ""
        out += "    <testcase classname=\"\(Self.escape(session))\" name=\"\(Self.escape(result.id))\"\(time)"
        switch result.outcome {
        case .failed:
          let code = result.error?.code ?? "failed"
          let message = result.error?.message ?? ""
          out += ">\n      <failure type=\"\(Self.escape(code))\" message=\"\(Self.escape(message))\">"
          out += "\(Self.escape(result.url)): \(Self.escape(message))</failure>\n    </testcase>\n"
        case .deferred, .cancelled:
          out += ">\n      <skipped message=\"\(result.outcome.rawValue)\"/>\n    </testcase>\n"
        case .completed, .unchanged:
          out += "/>\n"
        }
      }
      out += "  </testsuite>\n"
    }
    out += "</testsuites>\n"
    return out
  }

  static func escape(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&apos;"
      default:
        if scalar.value < 0x20 && scalar != "\n" && scalar != "\t" { continue }
        out.unicodeScalars.append(scalar)
      }
    }
    return out
  }
}

/// `--events FILE`: one JSON object per line, flushed as events happen.
public final class EventLog {
  private let output: BufferedOutput
  private let descriptor: Int32
  private let start: UInt64

  /// Creates (or truncates) `path`.
  public init(path: String) throws(SystemError) {
    try AtomicFile.makeParent(of: path)
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw SystemError("create \(path)") }
    descriptor = fd
    output = BufferedOutput(descriptor: fd)
    start = Engine.now()
  }

  deinit {
    output.flush()
    close(descriptor)
  }

  public func record(_ event: RunEvent) {
    var fields = event.json
    let elapsed = Double(Engine.now() &- start) / 1000
    fields["time"] = .string(String(format: "%.3f", elapsed))
    output.write(JSON.object(fields).text + "\n")
    if case .progress = event { return }
    output.flush()
  }

  public func flush() { output.flush() }
}

/// Writes `contents` to `path` atomically (a temporary file beside it, then a rename).
public enum AtomicFile {
  /// Creates the folders above `path`.
  public static func makeParent(of path: String) throws(SystemError) {
    try FileAccess.makeDirectories(FileAccess.directory(of: path))
  }

  public static func write(_ contents: String, to path: String) throws(SystemError) {
    try write(Array(contents.utf8), to: path)
  }

  /// With `makingParent` false, the folder is known to exist. Returns the written file's size and
  /// modification time (as `FileAccess.status` would read them back).
  @discardableResult
  public static func write(
    _ bytes: [UInt8], to path: String, makingParent: Bool = true
  ) throws(SystemError) -> (size: Int64, modified: Int64)? {
    try write(bytes, to: path, makingParent: makingParent, in: nil)
  }

  /// `folder`: `path`'s folder, already open: the file is made and linked in there without
  /// walking the folder's path again.
  @discardableResult
  static func write(
    _ bytes: [UInt8], to path: String, makingParent: Bool = true, in folder: OpenFolder?
  ) throws(SystemError) -> (size: Int64, modified: Int64)? {
    if makingParent { try makeParent(of: path) }
    if let written = try writeUnnamed(bytes, to: path, in: folder) { return written }
    let temporary = path + ".batchdl-part"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard fd >= 0 else { throw SystemError("create \(temporary)") }
    guard bytes.withUnsafeBytes({ SystemCalls.writeAll(fd, $0) }) else {
      let error = SystemError("write \(temporary)")
      close(fd)
      unlink(temporary)
      throw error
    }
    let status = FileAccess.status(descriptor: fd)
    close(fd)
    guard rename(temporary, path) == 0 else {
      let error = SystemError("rename \(temporary) to \(path)")
      unlink(temporary)
      throw error
    }
    return status
  }

  /// `O_TMPFILE` (`__O_TMPFILE | O_DIRECTORY`, 020200000 on Linux), which Swift does not import.
  private static let unnamedFlag: Int32 = 0o20_200_000
  /// `AT_EMPTY_PATH` (0x1000 on Linux), which Glibc only declares for _GNU_SOURCE.
  private static let emptyPathFlag: Int32 = 0x1000

  /// Writes `bytes` into an unnamed file in `path`'s folder (`O_TMPFILE`), then links it in as
  /// `path`: it appears whole, and the folder changes once (a temporary and a rename change a big
  /// folder three times). Nil, with nothing left behind, when the filesystem has no unnamed
  /// files or something is at `path` already: the caller goes the named way.
  private static func writeUnnamed(
    _ bytes: [UInt8], to path: String, in folder: OpenFolder?
  ) throws(SystemError) -> (size: Int64, modified: Int64)? {
    // In the open folder by name, else by path from the working directory.
    let (base, folderPath, name) =
      folder.map { ($0.descriptor, ".", FileAccess.name(of: path)) } ?? (AT_FDCWD, FileAccess.directory(of: path), path)
    let fd = openat(base, folderPath, unnamedFlag | O_WRONLY | O_CLOEXEC, 0o644)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    guard bytes.withUnsafeBytes({ SystemCalls.writeAll(fd, $0) }) else { throw SystemError("write \(path)") }
    let status = FileAccess.status(descriptor: fd)
    guard link(fd, to: name, in: base, path: path) else { return nil }
    return status ?? FileAccess.status(path)
  }

  /// Links an unnamed file in as `name` in `folder` (`path` in all). By its descriptor where the
  /// kernel lets the process that made the file do so (Linux 6.10 and later, or with
  /// CAP_DAC_READ_SEARCH); else through `/proc/self/fd`, which costs a path walk through procfs.
  private static func link(_ fd: Int32, to name: String, in folder: Int32, path: String) -> Bool {
    if !descriptorLinksRefused.isSet {
      if linkat(fd, "", folder, name, emptyPathFlag) == 0 { return true }
      guard errno == ENOENT || errno == EPERM || errno == EINVAL else { return false }
      // An older kernel answers ENOENT, as for a missing folder: tell the two apart.
      if errno != ENOENT || access(FileAccess.directory(of: path), F_OK) == 0 { descriptorLinksRefused.set() }
    }
    return linkat(AT_FDCWD, "/proc/self/fd/\(fd)", folder, name, AT_SYMLINK_FOLLOW) == 0
  }

  /// Set once the kernel refused to link by descriptor in this process.
  private static let descriptorLinksRefused = Flag()

  /// Whether unnamed files are still linked in by descriptor (for tests).
  static var linksByDescriptor: Bool { !descriptorLinksRefused.isSet }

  /// Links through `/proc/self/fd` from now on, as on a kernel that refuses (for tests).
  static func stopLinkingByDescriptor() { descriptorLinksRefused.set() }
}

/// A folder held open, to make and link files in it by name (`openat`, `linkat`) rather than by
/// path: a run placing thousands of files in one folder walks its path once.
final class OpenFolder {
  let path: String
  let descriptor: Int32

  /// Nil when the folder cannot be opened (the caller goes by path).
  init?(path: String) {
    // O_PATH (010000000 on Linux, not imported): a handle for the *at calls, no read access needed.
    let fd = open(path, 0o10_000_000 | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    self.path = path
    descriptor = fd
  }

  deinit {
    close(descriptor)
  }
}
