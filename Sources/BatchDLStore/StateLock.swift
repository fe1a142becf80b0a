import BatchDLSupport
import Foundation

/// The lock that keeps two runs out of one state folder, held with `flock` so that the kernel
/// releases it when the holder dies: a crash never leaves a stale lock.
public final class StateLock {
  public struct Held: Error, CustomStringConvertible {
    public var folder: String
    public var pid: Int32?

    public init(folder: String, pid: Int32?) {
      self.folder = folder
      self.pid = pid
    }

    public var description: String {
      let holder = pid.map { "batchdl (pid \($0))" } ?? "another batchdl run"
      return
        "\(holder) is using the state folder \(folder); wait for it to finish, or give this run another folder with --state"
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
      let text = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self)
      throw Held(folder: folder, pid: Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
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
