import BatchDLSupport
import Foundation

/// Reads a manifest file: YAML, then the typed model. Every problem is collected before failing.
public enum ManifestLoader {
  /// Loads and checks `path`. `${VAR}` references expand from `environment`.
  ///
  /// - Throws: `ManifestError` with every problem found, in order of position.
  /// - Returns: the manifest and its warnings.
  public static func load(
    path: String, environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(ManifestError) -> (manifest: Manifest, warnings: [Diagnostic]) {
    try checked(read(path: path, environment: environment))
  }

  /// Checks manifest text that claims to come from `path` (used by `load` and by tests).
  public static func parse(
    _ bytes: [UInt8], path: String, environment: [String: String]
  ) throws(ManifestError) -> (manifest: Manifest, warnings: [Diagnostic]) {
    try checked(read(bytes, path: path, environment: environment))
  }

  /// Reads `path` as far as it can: the manifest (nil when the YAML itself is unusable) with the
  /// problems found so far, so that the planner can add its own to the same report.
  public static func read(
    path: String, environment: [String: String] = ProcessInfo.processInfo.environment
  ) -> (manifest: Manifest?, diagnostics: [Diagnostic]) {
    do {
      return read(try readManifest(path), path: path, environment: environment)
    } catch {
      let start = SourceMark(file: path, line: 1, column: 1)
      return (nil, [Diagnostic(.error, at: start, "cannot read the manifest: \(error.reason)")])
    }
  }

  /// The manifest's bytes: a regular file or, when `allowsPipe`, a pipe (`<(command)`), at most
  /// `Limits.manifestBytes`.
  package static func readManifest(
    _ path: String, limit: Int = Limits.manifestBytes,
    tooLarge advice: String? = nil, allowsPipe: Bool = true
  ) throws(FileProblem) -> [UInt8] {
    // Opened without waiting for a writer (a FIFO nobody writes to reads as empty), then read
    // blocking as usual.
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard fd >= 0 else { throw FileProblem(SystemError("open \(path)")) }
    defer { close(fd) }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw FileProblem(SystemError("stat \(path)")) }
    if !allowsPipe || (info.st_mode & S_IFMT) != S_IFIFO, let kind = FileAccess.irregularKind(info.st_mode) {
      throw FileProblem("it is \(kind), not a regular file")
    }
    let tooLarge = FileProblem(
      advice
        ?? "it holds more than \(ByteSize.format(Int64(limit))), the most batchdl reads; move long lists of URLs into 'list:' files"
    )
    if Int64(info.st_size) > Int64(limit) { throw tooLarge }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(max(0, Int(info.st_size)))
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let count = chunk.withUnsafeMutableBytes { SystemCalls.readRetrying(fd, into: $0) }
      if count < 0 { throw FileProblem(SystemError("read \(path)")) }
      if count == 0 { break }
      if bytes.count + count > limit { throw tooLarge }
      bytes.append(contentsOf: chunk[0..<count])
    }
    return bytes
  }

  /// `read(path:environment:)` for text already in memory.
  public static func read(
    _ bytes: [UInt8], path: String, environment: [String: String]
  ) -> (manifest: Manifest?, diagnostics: [Diagnostic]) {
    var diagnostics = Diagnostics()
    let root = YAMLParser().parse(bytes, file: path, diagnostics: &diagnostics)
    guard let root, !root.isNull else {
      if !diagnostics.hasErrors {
        diagnostics.error(
          SourceMark(file: path, line: 1, column: 1), "the manifest is empty: it needs 'version: 1' and 'sessions:'")
      }
      return (nil, diagnostics.sorted.map(Redactor().diagnostic))
    }
    var decoder = ManifestDecoder(file: path, environment: environment)
    let resolved = resolvedLink(path)
    var manifest = decoder.decode(root, path: path, directory: FileAccess.directory(of: resolved))
    manifest?.resolvedPath = resolved
    diagnostics.append(contentsOf: decoder.diagnostics)
    // Messages quote what the manifest says: URL user-info and `${VAR}` secrets are masked in all.
    let redactor = Redactor(secrets: decoder.secrets)
    return (manifest, diagnostics.sorted.map(redactor.diagnostic))
  }

  private static func checked(
    _ result: (manifest: Manifest?, diagnostics: [Diagnostic])
  ) throws(ManifestError) -> (manifest: Manifest, warnings: [Diagnostic]) {
    guard let manifest = result.manifest, !result.diagnostics.contains(where: { $0.severity == .error }) else {
      throw ManifestError(diagnostics: result.diagnostics)
    }
    return (manifest, result.diagnostics)
  }

  /// `path` through symbolic links when it is one (`realpath`), else `path` as it is; a link that
  /// cannot be resolved, or to something that is not a regular file (a pipe), stays as given.
  package static func resolvedLink(_ path: String) -> String {
    var info = stat()
    guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK, let real = realpath(path, nil) else {
      return path
    }
    defer { free(real) }
    let resolved = String(cString: real)
    guard stat(resolved, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return path }
    return resolved
  }
}
