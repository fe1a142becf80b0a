import BatchDLManifest
import BatchDLSupport
import Foundation

/// One run of gpgv: its private folder (removed by `remove`) and the files in it. Internal, not
/// private: `SignatureCheck` (SignatureCheck.swift) makes and runs it.
struct GPGVRun {
  let gpgv: String
  let folder: String

  var home: String { folder + "/home" }
  var keyring: String { folder + "/keyring.gpg" }

  static func make(gpgv: String) -> Result<GPGVRun, SignatureFailure> {
    var template = Array((NSTemporaryDirectory() + "batchdl-gpgv-XXXXXX").utf8CString)
    let made = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.flatMap { mkdtemp($0) } }
    guard let made else {
      return .failure(.failed("cannot make a temporary folder for gpgv: \(String(cString: strerror(errno)))"))
    }
    let run = GPGVRun(gpgv: gpgv, folder: String(cString: made))
    guard mkdir(run.home, 0o700) == 0 else {
      let reason = String(cString: strerror(errno))
      run.remove()
      return .failure(.failed("cannot make a temporary folder for gpgv: \(reason)"))
    }
    return .success(run)
  }

  func remove() {
    try? FileManager.default.removeItem(atPath: folder)
  }

  /// Writes `bytes` to a new file `path` (mode 0600) of the folder; nil when it went well.
  func write(_ bytes: [UInt8], to path: String) -> SignatureFailure? {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return .failed("cannot write the files gpgv checks: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    guard bytes.withUnsafeBytes({ SystemCalls.writeAll(fd, $0) }) else {
      return .failed("cannot write the files gpgv checks: \(String(cString: strerror(errno)))")
    }
    return nil
  }

  /// Runs gpgv with `files` (and what goes before them) and judges its status lines.
  func gpgv(
    _ files: [String], timeout: Double, clearSigned: Bool, keyring shownKeyring: String
  ) -> Result<GPGVStatus.Signers, SignatureFailure> {
    let statusPath = folder + "/status"
    let errorPath = folder + "/stderr"
    guard FileManager.default.createFile(atPath: statusPath, contents: nil, attributes: [.posixPermissions: 0o600]),
      FileManager.default.createFile(atPath: errorPath, contents: nil, attributes: [.posixPermissions: 0o600]),
      let status = FileHandle(forWritingAtPath: statusPath), let errors = FileHandle(forWritingAtPath: errorPath)
    else { return .failure(.failed("cannot make the files gpgv writes to")) }
    defer {
      try? status.close()
      try? errors.close()
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: gpgv)
    process.arguments =
      ["--homedir", home, "--status-fd", "1", "--weak-digest", "SHA1", "--keyring", keyring] + files
    process.environment = ["LC_ALL": "C", "PATH": "/usr/bin:/bin"]
    process.currentDirectoryURL = URL(fileURLWithPath: folder)
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = status
    process.standardError = errors
    let finished = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in finished.signal() }
    do {
      try process.run()
    } catch {
      return .failure(
        .failed("cannot start gpgv (\(ShownText.escaped(gpgv, limit: 200))): \(error.localizedDescription)"))
    }
    if finished.wait(timeout: .now() + timeout) == .timedOut {
      kill(process.processIdentifier, SIGKILL)
      finished.wait()
      return .failure(.timedOut(seconds: timeout))
    }
    let stderr = Self.lastLines(Self.readBounded(errorPath, limit: SignatureCheck.maxErrorBytes, keepEnd: true) ?? [])
    if process.terminationReason == .uncaughtSignal {
      return .failure(
        .failed("gpgv was ended by signal \(process.terminationStatus)\(stderr.isEmpty ? "" : ": \(stderr)")"))
    }
    guard let statusBytes = Self.readBounded(statusPath, limit: SignatureCheck.maxStatusBytes) else {
      return .failure(
        .failed("gpgv wrote more than \(ByteSize.format(Int64(SignatureCheck.maxStatusBytes))) of status lines"))
    }
    let lines = GPGVStatus(String(decoding: statusBytes, as: UTF8.self))
    return lines.verdict(
      exitStatus: process.terminationStatus, clearSigned: clearSigned, keyring: shownKeyring, stderr: stderr)
  }

  /// The file's bytes, or nil when it is missing or holds more than `limit` (unless `keepEnd`: then
  /// its last `limit` bytes).
  static func readBounded(_ path: String, limit: Int, keepEnd: Bool = false) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
    var offset: Int64 = 0
    if Int64(info.st_size) > Int64(limit) {
      guard keepEnd else { return nil }
      offset = Int64(info.st_size) - Int64(limit)
    }
    var bytes = [UInt8](repeating: 0, count: Int(Int64(info.st_size) - offset))
    var filled = 0
    while filled < bytes.count {
      let count = bytes.withUnsafeMutableBytes {
        SystemCalls.preadRetrying(
          fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...]), at: offset + Int64(filled))
      }
      guard count >= 0 else { return nil }
      if count == 0 { break }
      filled += count
    }
    return Array(bytes.prefix(filled))
  }

  /// gpgv's last two messages on standard error (its `gpgv: ` lines, else any), on one line,
  /// escaped.
  static func lastLines(_ bytes: [UInt8]) -> String {
    let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline)
      .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    let own = lines.filter { $0.hasPrefix("gpgv: ") }.map { String($0.dropFirst(6)) }
    return ShownText.escaped((own.isEmpty ? lines : own).suffix(2).joined(separator: "; "), limit: 300)
  }
}
