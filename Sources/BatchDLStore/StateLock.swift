import BatchDLSupport
import Foundation

/// The lock that keeps two runs out of one state folder, held with `flock` so that the kernel
/// releases it when the holder dies: a crash never leaves a stale lock.
public final class StateLock {
  public struct Held: Error, CustomStringConvertible {
    public var folder: String
    public var pid: Int32?
    /// When the holder took the lock (the lock file's time, which it set then), if known.
    public var since: Date?
    /// The holder's command line (`batchdl run mirror.yaml --quiet`), when the system shows it.
    public var command: String?

    public init(folder: String, pid: Int32?, since: Date? = nil, command: String? = nil) {
      self.folder = folder
      self.pid = pid
      self.since = since
      self.command = command
    }

    /// Who holds the lock and since when: `batchdl run mirror.yaml (pid 4242), since 2026-12-01
    /// 02:00:03 +0100 (12 min ago)`.
    public var holder: String {
      var text = command ?? "another batchdl run"
      if let pid { text += " (pid \(pid))" }
      if let since { text += ", since " + StateLock.localTime(since) + " (" + StateLock.age(since) + " ago)" }
      return text
    }

    /// For a command that is not a run (`cache clear`): wait for the holder.
    public var description: String {
      "\(holder) holds the lock of the state folder \(folder); wait for it to finish"
    }

    /// For a run (exit 4): it did nothing, and the next scheduled run picks up. Never another
    /// `--state`: two runs would write the same `dest`.
    public var runDescription: String {
      "\(holder) holds the lock of the state folder \(folder), so this run sent nothing and changed nothing; "
        + "the next timer or cron run will pick up where that one ends (to run now, wait for it to finish)"
    }
  }

  public let folder: String
  private let descriptor: Int32

  /// Creates the folder if needed and takes its lock without waiting.
  ///
  /// - Throws: `Held` when another process holds it, `SystemError` when the folder cannot be used.
  /// `name` is the lock's path in the folder: a manifest's (`StateFolder.lockName`) or a worker's
  /// (`StateFolder.WorkerFiles`).
  public init(folder: String, name: String) throws {
    self.folder = folder
    let path = folder + "/" + name
    try FileAccess.makeDirectories(FileAccess.directory(of: path))
    let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard fd >= 0 else { throw SystemError("open \(path)") }
    if flock(fd, LOCK_EX | LOCK_NB) != 0 {
      let code = errno
      var buffer = [UInt8](repeating: 0, count: 32)
      let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
      close(fd)
      guard code == EWOULDBLOCK else { throw SystemError("lock \(path)", code: code) }
      throw Self.held(folder: folder, path: path, text: buffer.prefix(max(0, count)))
    }
    descriptor = fd
    let pid = "\(getpid())\n"
    _ = ftruncate(fd, 0)
    _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
  }

  deinit {
    flock(descriptor, LOCK_UN)
    close(descriptor)
  }

  /// Who holds lock `name` in `folder` (its pid, since when, its command line), or nil when nobody
  /// does.
  public static func holding(folder: String, name: String) -> Held? {
    guard let pid = holder(folder: folder, name: name) else { return nil }
    var held = Held(folder: folder, pid: pid == 0 ? nil : pid)
    held.since = modified(folder + "/" + name)
    if pid != 0 { held.command = commandLine(of: pid) }
    return held
  }

  private static func held(folder: String, path: String, text: some Collection<UInt8>) -> Held {
    let pid = Int32(String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    return Held(folder: folder, pid: pid, since: modified(path), command: pid.flatMap(commandLine(of:)))
  }

  /// The time of the file at `path`: when the holder of the lock wrote its pid there.
  private static func modified(_ path: String) -> Date? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
  }

  /// The command line of process `pid` (`/proc/PID/cmdline`), its program shortened to its name,
  /// control characters dropped, at most 200 characters; nil where the system does not show it.
  static func commandLine(of pid: Int32) -> String? {
    guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"), !data.isEmpty else { return nil }
    var words = data.split(separator: 0, omittingEmptySubsequences: false).map {
      String(decoding: $0, as: UTF8.self).unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }
        .reduce(into: "") { $0.unicodeScalars.append($1) }
    }
    if words.last?.isEmpty == true { words.removeLast() }
    guard let program = words.first else { return nil }
    words[0] = program.split(separator: "/").last.map(String.init) ?? program
    let text = words.joined(separator: " ")
    return text.count > 200 ? String(text.prefix(200)) + "…" : text
  }

  /// `2026-12-01 02:00:03 +0100`: local time, as a cron mail is read.
  static func localTime(_ date: Date) -> String {
    var seconds = time_t(date.timeIntervalSince1970)
    var parts = tm()
    guard localtime_r(&seconds, &parts) != nil else { return "\(Int(date.timeIntervalSince1970)) s after the epoch" }
    var buffer = [CChar](repeating: 0, count: 64)
    let count = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S %z", &parts)
    return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// `40 s`, `12 min`, `3 h 5 min`, `2 days`: how long ago `date` was.
  static func age(_ date: Date, now: Date = Date()) -> String {
    let seconds = max(0, Int(now.timeIntervalSince(date)))
    if seconds < 60 { return "\(seconds) s" }
    if seconds < 3600 { return "\(seconds / 60) min" }
    if seconds < 86_400 { return "\(seconds / 3600) h \(seconds / 60 % 60) min" }
    let days = seconds / 86_400
    return "\(days) day\(days == 1 ? "" : "s")"
  }

  /// The pid of the process holding lock `name` in `folder`, or nil when nobody holds it.
  public static func holder(folder: String, name: String) -> Int32? {
    let path = folder + "/" + name
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    // A shared lock succeeds only when no one holds the exclusive one; it is dropped at once.
    if flock(fd, LOCK_SH | LOCK_NB) == 0 {
      flock(fd, LOCK_UN)
      return nil
    }
    var buffer = [UInt8](repeating: 0, count: 32)
    let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
    return Int32(
      String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
      ?? 0
  }
}
