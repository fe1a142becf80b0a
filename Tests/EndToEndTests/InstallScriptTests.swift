import Foundation
import TestSupport
import Testing

/// `scripts/install` and `scripts/uninstall`, with the built binary (`BATCHDL_BIN`) and a prefix in
/// a scratch folder: what install puts there, and that uninstall takes away exactly that.
@Suite struct InstallScriptTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

  /// Runs a script of the repository with `arguments`; its status and what it printed.
  func script(
    _ name: String, _ arguments: [String], in folder: TemporaryDirectory
  ) throws -> (
    status: Int32, output: String
  ) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/bash")
    process.arguments = [Self.root + "/scripts/" + name] + arguments
    var environment = ProcessInfo.processInfo.environment
    environment["BATCHDL_BIN"] = BinaryRunner.executable
    process.environment = environment
    let log = folder.path + "/\(name).log"
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
    process.standardOutput = handle
    process.standardError = handle
    process.standardInput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    try handle.close()
    return (process.terminationStatus, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
  }

  /// Every path under `prefix`, relative to it, folders ending in `/`.
  func tree(_ prefix: String) -> [String] {
    var paths: [String] = []
    let enumerator = FileManager.default.enumerator(atPath: prefix)
    while let path = enumerator?.nextObject() as? String {
      var isFolder: ObjCBool = false
      _ = FileManager.default.fileExists(atPath: prefix + "/" + path, isDirectory: &isFolder)
      paths.append(isFolder.boolValue ? path + "/" : path)
    }
    return paths.sorted()
  }

  @Test func installPutsTheBinaryManualAndCompletionsAndUninstallTakesExactlyThem() throws {
    let scratch = TemporaryDirectory()
    let prefix = scratch.path + "/prefix"
    // Someone else's manual and an empty folder of theirs: both must stay.
    try FileManager.default.createDirectory(atPath: prefix + "/share/man/man1", withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: prefix + "/share/man/man1/other.1", contents: Data("x".utf8))
    try FileManager.default.createDirectory(atPath: prefix + "/bin", withIntermediateDirectories: true)
    let before = tree(prefix)

    let install = try script("install", [prefix], in: scratch)
    #expect(install.status == 0, "\(install.output)")
    let installed = [
      "bin/batchdl", "share/man/man1/batchdl.1", "share/bash-completion/completions/batchdl",
      "share/zsh/site-functions/_batchdl", "share/fish/vendor_completions.d/batchdl.fish", "share/batchdl/installed",
      "share/doc/batchdl/examples/systemd/batchdl-mirror.service", "share/doc/batchdl/examples/batchdl-alerts.yml",
    ]
    for path in installed {
      #expect(FileManager.default.fileExists(atPath: prefix + "/" + path), "\(path)")
    }
    #expect(FileManager.default.isExecutableFile(atPath: prefix + "/bin/batchdl"))
    let version = try BinaryRunner.run(["--version"])
    #expect(install.output.contains(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
    let relative = try script("install", ["relative/prefix"], in: scratch)
    #expect(relative.status == 2, "a relative prefix is refused")
    #expect(relative.output.contains("absolute"), "\(relative.output)")
    for shell in ["bash-completion/completions/batchdl", "zsh/site-functions/_batchdl"] {
      let text = (try? String(contentsOfFile: prefix + "/share/" + shell, encoding: .utf8)) ?? ""
      #expect(text.contains("validate"), "\(shell)")
    }
    let record = (try? String(contentsOfFile: prefix + "/share/batchdl/installed", encoding: .utf8)) ?? ""
    #expect(record.contains(prefix + "/bin/batchdl\n"))
    // It made these folders, and not `bin/` nor `share/man/man1/`, which were there.
    #expect(record.contains(prefix + "/share/zsh/\n"))
    #expect(!record.contains(prefix + "/bin/\n"))
    #expect(!record.contains(prefix + "/share/man/man1/\n"))

    // A second install over the first keeps the first's folders in the record.
    let again = try script("install", [prefix], in: scratch)
    #expect(again.status == 0, "\(again.output)")
    let recordAgain = (try? String(contentsOfFile: prefix + "/share/batchdl/installed", encoding: .utf8)) ?? ""
    #expect(recordAgain.contains(prefix + "/share/zsh/\n"))

    let uninstall = try script("uninstall", [prefix], in: scratch)
    #expect(uninstall.status == 0, "\(uninstall.output)")
    #expect(tree(prefix) == before)
    #expect(FileManager.default.fileExists(atPath: prefix + "/share/man/man1/other.1"))
  }

  @Test func uninstallWithoutARecordRemovesNothing() throws {
    let scratch = TemporaryDirectory()
    let prefix = scratch.path + "/prefix"
    try FileManager.default.createDirectory(atPath: prefix + "/bin", withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: prefix + "/bin/batchdl", contents: Data("someone else's".utf8))
    let uninstall = try script("uninstall", [prefix], in: scratch)
    #expect(uninstall.status == 1)
    #expect(uninstall.output.contains("no record of an install"), "\(uninstall.output)")
    #expect(FileManager.default.fileExists(atPath: prefix + "/bin/batchdl"))
  }
}
