import BatchDLSupport
import Foundation

/// A synthetic Debian-style repository made in a temporary folder for the tests: small fake
/// `.deb` files (any bytes: apt-get checks only their size and digest) across several suites,
/// components and architectures, with `Packages`, `Packages.gz`, `Packages.xz`, `Sources`,
/// `Sources.gz`, `Sources.xz`, a `Translation-en`, by-hash copies of every index, a `Release` with
/// `Acquire-By-Hash: yes`, and its `InRelease` and `Release.gpg` signed with a throw-away key.
///
/// The files are written by the fixture itself (gzip and xz compress; no apt-ftparchive). One
/// package, `common`, is the same file in every suite (one pool path, one digest).
public final class AptRepositoryFixture {
  /// A pool file the indexes name: its size and SHA-256 digest.
  public struct PoolFile: Hashable, Sendable {
    public var size: Int64
    public var sha256: String

    public init(size: Int64, sha256: String) {
      self.size = size
      self.sha256 = sha256
    }
  }

  public let folder = TemporaryDirectory()
  public let keys: OpenPGPKeys
  public let suites: [String]
  public let components: [String]
  public let architectures: [String]
  /// Every pool file of every suite, by path relative to the root (`pool/main/p/pkg0/…`).
  public private(set) var pool: [String: PoolFile] = [:]
  /// The pool files of each suite (binary and source).
  public private(set) var poolBySuite: [String: Set<String>] = [:]
  /// The `Date` of every Release: `Sat, 28 Nov 2026 10:00:00 UTC` unless given.
  public let date: String
  public let validUntil: String

  /// The repository's root: `dists/` and `pool/` are in it.
  public var root: String { folder.path + "/repo" }
  /// The public key that signs the Release files (`gpg --export`).
  public var keyring: String { keys.keyring }

  /// Makes `packages` packages per suite, component and architecture (and their sources).
  public init(
    suites: [String] = ["stable", "testing"], components: [String] = ["main", "contrib"],
    architectures: [String] = ["amd64", "arm64"], packages: Int = 3,
    date: String = "Sat, 28 Nov 2026 10:00:00 UTC", validUntil: String = "Sat, 05 Dec 2099 10:00:00 UTC"
  ) throws {
    keys = try OpenPGPKeys()
    self.suites = suites
    self.components = components
    self.architectures = architectures
    self.date = date
    self.validUntil = validUntil
    for suite in suites { try makeSuite(suite, packages: packages) }
  }

  /// The path of `relative` below the root.
  public func path(_ relative: String) -> String { root + "/" + relative }

  /// Writes `bytes` at `relative` below the root, creating folders on the way.
  public func write(_ relative: String, _ bytes: [UInt8]) {
    let file = path(relative)
    try? FileManager.default.createDirectory(
      atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: file, contents: Data(bytes))
  }

  public func read(_ relative: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path(relative)).map { Array($0) }
  }

  public static func sha256(_ bytes: [UInt8]) -> String { FileDigest.hex(of: bytes, algorithm: .sha256) }

  // MARK: - Making

  private func makeSuite(_ suite: String, packages: Int) throws {
    var listed: [(path: String, bytes: [UInt8])] = []
    var names: Set<String> = []
    for component in components {
      var sources = ""
      for index in 0..<packages {
        let name = "pkg\(index)"
        let version = "1.\(index)-\(suite.count)"
        let folder = "pool/\(component)/p/\(name)"
        var sums: [String] = []
        for (file, bytes) in [
          ("\(name)_\(version).dsc", Array("Source: \(name)\nVersion: \(version)\n".utf8)),
          ("\(name)_\(version).tar.gz", Array("tarball of \(name) \(version) in \(component)\n".utf8)),
        ] {
          addPool("\(folder)/\(file)", bytes, suite: suite, names: &names)
          sums.append(" \(Self.sha256(bytes)) \(bytes.count) \(file)")
        }
        sources += """
          Package: \(name)
          Binary: \(name)
          Version: \(version)
          Directory: \(folder)
          Checksums-Sha256:
          \(sums.joined(separator: "\n"))


          """
      }
      listed += try variants("\(component)/source/Sources", sources)
      listed += try variants("\(component)/i18n/Translation-en", "Package: pkg0\nDescription-en: a package\n")
      for architecture in architectures {
        var text = ""
        let commonFile = "pool/\(component)/c/common/common_1.0_\(architecture).deb"
        for index in 0...packages {
          let common = index == packages
          let name = common ? "common" : "pkg\(index)"
          let version = common ? "1.0" : "1.\(index)-\(suite.count)"
          let file = common ? commonFile : "pool/\(component)/p/\(name)/\(name)_\(version)_\(architecture).deb"
          let bytes = Array("fake deb \(name) \(version) \(architecture) \(component)\n".utf8)
          addPool(file, bytes, suite: suite, names: &names)
          text += """
            Package: \(name)
            Version: \(version)
            Architecture: \(architecture)
            Description: test package \(name)
             in \(component)
            Filename: \(file)
            Size: \(bytes.count)
            SHA256: \(Self.sha256(bytes))


            """
        }
        listed += try variants("\(component)/binary-\(architecture)/Packages", text)
      }
    }
    poolBySuite[suite] = names
    try writeRelease(suite, listed)
  }

  private func addPool(_ relative: String, _ bytes: [UInt8], suite: String, names: inout Set<String>) {
    write(relative, bytes)
    pool[relative] = PoolFile(size: Int64(bytes.count), sha256: Self.sha256(bytes))
    names.insert(relative)
  }

  /// Writes `text` at `dists/SUITE/relative` (plain, `.gz`, `.xz`) and by-hash copies of each.
  private func variants(_ relative: String, _ text: String) throws -> [(path: String, bytes: [UInt8])] {
    let plain = Array(text.utf8)
    return [
      (relative, plain), (relative + ".gz", try compress("gzip", plain)), (relative + ".xz", try compress("xz", plain)),
    ]
  }

  private func compress(_ tool: String, _ bytes: [UInt8]) throws -> [UInt8] {
    let input = folder.path + "/compress-input"
    _ = FileManager.default.createFile(atPath: input, contents: Data(bytes))
    guard let program = ExternalTool.find(tool) else {
      throw OpenPGPKeys.ToolMissing(description: "\(tool) is not installed")
    }
    let outcome = try ExternalTool.run(program, tool == "gzip" ? ["-9nkf", input] : ["-kf", input])
    let output = input + (tool == "gzip" ? ".gz" : ".xz")
    guard outcome.status == 0, let data = FileManager.default.contents(atPath: output) else {
      throw OpenPGPKeys.ToolMissing(description: "\(tool) failed: \(outcome.output)")
    }
    try? FileManager.default.removeItem(atPath: output)
    return Array(data)
  }

  private func writeRelease(_ suite: String, _ listed: [(path: String, bytes: [UInt8])]) throws {
    let dists = "dists/\(suite)"
    var md5 = ""
    var sha256 = ""
    for (relative, bytes) in listed {
      let digest = Self.sha256(bytes)
      write("\(dists)/\(relative)", bytes)
      let folder = (relative as NSString).deletingLastPathComponent
      write("\(dists)/\(folder)/by-hash/SHA256/\(digest)", bytes)
      let size = String(bytes.count)
      let padded = String(repeating: " ", count: max(0, 9 - size.count)) + size
      md5 += " \(FileDigest.hex(of: bytes, algorithm: .md5)) \(padded) \(relative)\n"
      sha256 += " \(digest) \(padded) \(relative)\n"
    }
    let release = """
      Origin: batchdl-test
      Label: batchdl-test
      Suite: \(suite)
      Codename: \(suite)-code
      Date: \(date)
      Valid-Until: \(validUntil)
      Acquire-By-Hash: yes
      Architectures: \(architectures.joined(separator: " "))
      Components: \(components.joined(separator: " "))
      Description: a synthetic repository for batchdl's tests
      MD5Sum:
      \(md5)SHA256:
      \(sha256)
      """
    write("\(dists)/Release", Array(release.utf8))
    let inRelease = try keys.clearSign("\(suite)-Release", release)
    write("\(dists)/InRelease", Array(inRelease.utf8))
    let data = keys.folder.write("\(suite)-Release-detached", release)
    try keys.run([
      "--local-user", OpenPGPKeys.test, "--armor", "--output", path("\(dists)/Release.gpg"), "--detach-sign", data,
    ])
  }
}
