import BatchDL
import BatchDLManifest
import BatchDLPlan
import Foundation

/// A folder under the system's temporary directory, removed when the value is released.
public final class TemporaryDirectory: @unchecked Sendable {
  public let path: String

  public init() {
    let template = NSTemporaryDirectory() + "batchdl-test-XXXXXX"
    var bytes = Array(template.utf8CString)
    let made = bytes.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.flatMap { mkdtemp($0) } }
    path = made.map { String(cString: $0) } ?? (NSTemporaryDirectory() + "batchdl-test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  deinit {
    try? FileManager.default.removeItem(atPath: path)
  }

  /// Writes `contents` to `name` (relative to the folder), creating folders on the way.
  @discardableResult
  public func write(_ name: String, _ contents: String) -> String {
    let file = path + "/" + name
    try? FileManager.default.createDirectory(
      atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: file, contents: Data(contents.utf8))
    return file
  }

  /// The contents of `name`, or nil when it does not exist.
  public func read(_ name: String) -> String? {
    (try? Data(contentsOf: URL(fileURLWithPath: path + "/" + name))).map { String(decoding: $0, as: UTF8.self) }
  }

  public func exists(_ name: String) -> Bool {
    FileManager.default.fileExists(atPath: path + "/" + name)
  }
}

/// Checks manifest text the way `batchdl validate` does, from a fresh folder.
public enum ManifestFixture {
  /// Writes `yaml` as `manifest.yaml` (and `files`) into a new folder and plans it.
  public static func plan(
    _ yaml: String, files: [String: String] = [:], environment: [String: String] = [:]
  ) -> (folder: TemporaryDirectory, result: Result<Plan, ManifestError>) {
    let folder = TemporaryDirectory()
    for (name, contents) in files { folder.write(name, contents) }
    let path = folder.write("manifest.yaml", yaml)
    do {
      return (folder, .success(try ManifestCheck.plan(path: path, environment: environment)))
    } catch {
      return (folder, .failure(error))
    }
  }

  /// The diagnostics of an invalid manifest as `LINE:COLUMN: severity: message` (file names of the
  /// manifest itself dropped, list files kept by base name), or [] when it is valid.
  public static func problems(
    _ yaml: String, files: [String: String] = [:], environment: [String: String] = [:]
  ) -> [String] {
    let (folder, result) = plan(yaml, files: files, environment: environment)
    guard case .failure(let error) = result else { return [] }
    return error.diagnostics.map { diagnostic in
      let file = diagnostic.mark.file
      let prefix =
        file == folder.path + "/manifest.yaml" ? "" : String(file.dropFirst(folder.path.count + 1)) + ":"
      return
        "\(prefix)\(diagnostic.mark.line):\(diagnostic.mark.column): \(diagnostic.severity.rawValue): \(diagnostic.message)"
    }
  }
}
