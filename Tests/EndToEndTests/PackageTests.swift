import Foundation
import TestSupport
import Testing

/// The Debian package: the files `scripts/install` stages for it (`LAYOUT=debian`), and that
/// `scripts/package` refuses a binary that links the Swift toolchain's runtime, in the default suite;
/// with `BATCHDL_PACKAGE_TESTS=1`, the package itself, from the release build (a few minutes: the
/// release build and xz); with `BATCHDL_PACKAGE_TESTS=chroot`, also `scripts/check-package`, which
/// installs it in a clean Debian 12 root and runs the demo there (as root, with debootstrap).
@Suite struct PackageTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
  static let level = ProcessInfo.processInfo.environment["BATCHDL_PACKAGE_TESTS"] ?? ""
  static let packaging = ["1", "chroot"].contains(level)
  static let dpkgTools = ["/usr/bin/dpkg-deb", "/usr/bin/dpkg-shlibdeps", "/usr/bin/objdump"].allSatisfy {
    FileManager.default.isExecutableFile(atPath: $0)
  }

  /// Runs `command arguments` with `environment` changed (nil removes a variable) and waits for it, at
  /// most `timeout` seconds; its status and what it printed (standard output, then standard error).
  static func run(
    _ command: String, _ arguments: [String], environment changes: [String: String?] = [:],
    in folder: TemporaryDirectory, timeout: TimeInterval = 120
  ) throws -> (status: Int32, stdout: String, stderr: String) {
    let result = try ExternalTool.run(command, arguments, environment: changes, in: root, timeout: timeout)
    return (result.status, result.stdout, result.stderr)
  }

  /// Whether the built binary links the Swift runtime's shared library (a debug build does).
  static var binaryLinksTheSwiftRuntime: Bool {
    let folder = TemporaryDirectory()
    let dump = try? run("/usr/bin/objdump", ["-p", BinaryRunner.executable], in: folder)
    return dump?.stdout.contains("libswiftCore.so") ?? false
  }

  @Test func theDebianLayoutStagesWhatAPackageShips() throws {
    let folder = TemporaryDirectory()
    let stage = folder.path + "/stage"
    let install = try Self.run(
      "/bin/bash", [Self.root + "/scripts/install", "/usr"],
      environment: ["LAYOUT": "debian", "DESTDIR": stage, "BATCHDL_BIN": BinaryRunner.executable], in: folder)
    #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
    for path in [
      "bin/batchdl", "share/man/man1/batchdl.1.gz", "share/bash-completion/completions/batchdl",
      "share/zsh/vendor-completions/_batchdl", "share/fish/vendor_completions.d/batchdl.fish",
      "share/doc/batchdl/examples/systemd/batchdl-mirror.service",
      "share/doc/batchdl/examples/systemd/batchdl-mirror.timer", "share/doc/batchdl/examples/batchdl-alerts.yml",
    ] {
      #expect(FileManager.default.fileExists(atPath: stage + "/usr/" + path), "\(path)")
    }
    // dpkg keeps its own list: no record for scripts/uninstall, no uncompressed manual.
    #expect(!FileManager.default.fileExists(atPath: stage + "/usr/share/batchdl/installed"))
    #expect(!FileManager.default.fileExists(atPath: stage + "/usr/share/man/man1/batchdl.1"))
    #expect(!FileManager.default.fileExists(atPath: stage + "/usr/share/zsh/site-functions/_batchdl"))
    let bash = (try? String(contentsOfFile: stage + "/usr/share/bash-completion/completions/batchdl", encoding: .utf8))
    #expect(bash.map { !$0.hasPrefix("#!") && $0.contains("validate") } == true, "sourced, without #!")
    let manual = try Self.run("/bin/gzip", ["-dc", stage + "/usr/share/man/man1/batchdl.1.gz"], in: folder)
    #expect(manual.status == 0)
    #expect(manual.stdout.contains(".Dt BATCHDL 1"), "\(manual.stdout.prefix(200))")
    let symbols = try Self.run("/usr/bin/objdump", ["-h", stage + "/usr/bin/batchdl"], in: folder)
    #expect(!symbols.stdout.contains(".debug_info"), "stripped")

    let unknown = try Self.run(
      "/bin/bash", [Self.root + "/scripts/install", "/usr"],
      environment: ["LAYOUT": "rpm", "DESTDIR": stage, "BATCHDL_BIN": BinaryRunner.executable], in: folder)
    #expect(unknown.status == 2)
    #expect(unknown.stderr.contains("LAYOUT"), "\(unknown.stderr)")
  }

  @Test(.enabled(if: dpkgTools && binaryLinksTheSwiftRuntime))
  func aBinaryThatLinksTheSwiftRuntimeIsNotPackaged() throws {
    let folder = TemporaryDirectory()
    let result = try Self.run(
      "/bin/bash", [Self.root + "/scripts/package", folder.path + "/out"],
      environment: ["BATCHDL_BIN": BinaryRunner.executable], in: folder)
    #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
    #expect(result.stderr.contains("no Debian package provides"), "\(result.stderr)")
    #expect(result.stderr.contains("libswift"), "\(result.stderr)")
    #expect(result.stderr.contains("scripts/build-release"), "\(result.stderr)")
    let written = (try? FileManager.default.contentsOfDirectory(atPath: folder.path + "/out")) ?? []
    #expect(written.isEmpty, "\(written)")
  }

  @Test(.enabled(if: packaging && dpkgTools, "BATCHDL_PACKAGE_TESTS=1: builds the release binary and the package"))
  func thePackageHoldsTheReleaseBinaryAndNeedsNoSwiftToolchain() throws {
    let folder = TemporaryDirectory()
    let out = folder.path + "/out"
    // Without BATCHDL_BIN: the package is made of the release build, as shipped.
    let result = try Self.run(
      "/bin/bash", [Self.root + "/scripts/package", out], environment: ["BATCHDL_BIN": nil], in: folder,
      timeout: 1800)
    #expect(result.status == 0, "\(result.stderr)")
    let deb = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    let architecture = try Self.run("/usr/bin/dpkg", ["--print-architecture"], in: folder).stdout
      .trimmingCharacters(in: .whitespacesAndNewlines)
    let version = try BinaryRunner.run(["--version"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    #expect(deb == out + "/batchdl_\(version)_\(architecture).deb")
    #expect(FileManager.default.fileExists(atPath: deb))

    func field(_ name: String) throws -> String {
      try Self.run("/usr/bin/dpkg-deb", ["-f", deb, name], in: folder).stdout
        .trimmingCharacters(in: .whitespacesAndNewlines)
    }
    #expect(try field("Package") == "batchdl")
    #expect(try field("Version") == version)
    #expect(try field("Architecture") == architecture)
    #expect(try !field("Maintainer").isEmpty)
    #expect(try field("Recommends") == "gpgv")
    let depends = try field("Depends")
    let names = depends.split(separator: ",").map {
      $0.split(separator: "(")[0].trimmingCharacters(in: .whitespaces)
    }
    for library in ["libc6", "libcurl4", "libyaml-0-2", "libsqlite3-0", "libxml2"] {
      #expect(names.contains(library), "\(library) in \(depends)")
    }
    #expect(!depends.lowercased().contains("swift"), "\(depends)")

    let contents = try Self.run("/usr/bin/dpkg-deb", ["-c", deb], in: folder).stdout
    for path in [
      "./usr/bin/batchdl", "./usr/share/man/man1/batchdl.1.gz", "./usr/share/bash-completion/completions/batchdl",
      "./usr/share/zsh/vendor-completions/_batchdl", "./usr/share/fish/vendor_completions.d/batchdl.fish",
      "./usr/share/doc/batchdl/copyright", "./usr/share/doc/batchdl/changelog.gz",
      "./usr/share/doc/batchdl/examples/systemd/batchdl-mirror.timer",
      "./usr/share/doc/batchdl/examples/batchdl-alerts.test.yml",
    ] {
      #expect(contents.contains(" " + path + "\n"), "\(path)")
    }
    let lines = contents.split(separator: "\n")
    #expect(!lines.isEmpty && lines.allSatisfy { $0.contains(" root/root ") }, "owned by root")
    #expect(!contents.contains("swift"), "no Swift runtime files")
    #expect(!contents.contains("share/batchdl/installed"), "dpkg keeps its own record")

    if Self.level == "chroot" {
      // Installs it in a clean Debian 12 root and runs the demo there (the first run makes the root).
      let check = try Self.run(
        "/bin/bash", [Self.root + "/scripts/check-package", deb], environment: ["BATCHDL_BIN": nil], in: folder,
        timeout: 1800)
      #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
      #expect(check.stdout.contains("passed:"), "\(check.stdout)")
    }
  }
}
