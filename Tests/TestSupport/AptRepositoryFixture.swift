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
///
/// `update(...)` publishes a new version of the repository in place, as an archive's update does;
/// `replaceIndex`, `tamper`, `byHashPath` and `remove` make the hostile ones
/// (AptRepositoryFixtureUpdate.swift).
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

  /// One package of a suite's component: a binary per architecture and, unless `common`, a source.
  struct Package {
    var name: String
    var version: String
    var hasSource: Bool
  }

  public let folder = TemporaryDirectory()
  public let keys: OpenPGPKeys
  public let suites: [String]
  public let components: [String]
  public let architectures: [String]
  /// Every pool file the indexes of every suite name now, by path relative to the root
  /// (`pool/main/p/pkg0/…`). A file an update dropped from the indexes is no longer in it (it
  /// may still be on disk).
  public internal(set) var pool: [String: PoolFile] = [:]
  /// The pool files the indexes of each suite name now (binary and source).
  public internal(set) var poolBySuite: [String: Set<String>] = [:]
  /// The `Date` of the Release written last: `Sat, 28 Nov 2026 10:00:00 UTC` unless given.
  public internal(set) var date: String
  /// The `Valid-Until` of the Release written last.
  public internal(set) var validUntil: String

  /// The packages of each suite and component, in the order of their indexes.
  var packages: [String: [String: [Package]]] = [:]
  var releaseDates: [String: String] = [:]
  var validUntils: [String: String] = [:]
  /// Index texts given by `replaceIndex`, by suite and index path (`main/binary-amd64/Packages`).
  var replacedIndexes: [String: [String: String]] = [:]
  /// The SHA-256 of every file each suite's current Release lists, by path below `dists/SUITE/`.
  var listedDigests: [String: [String: String]] = [:]
  /// How many updates were published (the `+uN` of the versions they give).
  var updates = 0
  /// Every pool file any index named since the repository was made.
  var everInPool: Set<String> = []
  /// The modification time given to the files the last publish wrote.
  var lastStamp = Date.distantPast

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
    for suite in suites {
      var byComponent: [String: [Package]] = [:]
      for component in components {
        byComponent[component] =
          (0..<packages).map { Package(name: "pkg\($0)", version: "1.\($0)-\(suite.count)", hasSource: true) }
          + [Package(name: "common", version: "1.0", hasSource: false)]
      }
      self.packages[suite] = byComponent
      releaseDates[suite] = date
      validUntils[suite] = validUntil
      try publish(suite)
    }
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

  /// The pool files of `package` in `component`: its `.deb` for each architecture, its `.dsc`
  /// and `.tar.gz` when it has a source.
  func poolFiles(_ package: Package, component: String) -> [(path: String, bytes: [UInt8])] {
    let (name, version) = (package.name, package.version)
    let folder = "pool/\(component)/\(name.prefix(1))/\(name)"
    var files = architectures.map { architecture in
      (
        "\(folder)/\(name)_\(version)_\(architecture).deb",
        Array("fake deb \(name) \(version) \(architecture) \(component)\n".utf8)
      )
    }
    if package.hasSource {
      files.append(("\(folder)/\(name)_\(version).dsc", Array("Source: \(name)\nVersion: \(version)\n".utf8)))
      files.append(
        ("\(folder)/\(name)_\(version).tar.gz", Array("tarball of \(name) \(version) in \(component)\n".utf8)))
    }
    return files
  }

  /// Writes the pool files of `suite` that are not on disk yet, then its indexes (each compression
  /// and by hash), then its Release, InRelease and Release.gpg signed by `signer`; counts the pool.
  func publish(_ suite: String, signedBy signer: String = OpenPGPKeys.test) throws {
    var listed: [(path: String, bytes: [UInt8])] = []
    var names: Set<String> = []
    var replaced = replacedIndexes[suite] ?? [:]
    func index(_ relative: String, _ text: String) throws {
      listed += try variants(relative, replaced.removeValue(forKey: relative) ?? text)
    }
    for component in components {
      let packages = self.packages[suite]?[component] ?? []
      var sources = ""
      for package in packages {
        for (file, bytes) in poolFiles(package, component: component) {
          names.insert(file)
          pool[file] = PoolFile(size: Int64(bytes.count), sha256: Self.sha256(bytes))
          if !FileManager.default.fileExists(atPath: path(file)) { write(file, bytes) }
        }
        guard package.hasSource else { continue }
        let folder = "pool/\(component)/\(package.name.prefix(1))/\(package.name)"
        let sums = poolFiles(package, component: component).dropFirst(architectures.count).map {
          " \(Self.sha256($0.bytes)) \($0.bytes.count) \(($0.path as NSString).lastPathComponent)"
        }
        sources += """
          Package: \(package.name)
          Binary: \(package.name)
          Version: \(package.version)
          Directory: \(folder)
          Checksums-Sha256:
          \(sums.joined(separator: "\n"))


          """
      }
      try index("\(component)/source/Sources", sources)
      try index("\(component)/i18n/Translation-en", "Package: pkg0\nDescription-en: a package\n")
      for architecture in architectures {
        var text = ""
        for package in packages {
          let (file, bytes) = poolFiles(package, component: component)[architectures.firstIndex(of: architecture) ?? 0]
          text += """
            Package: \(package.name)
            Version: \(package.version)
            Architecture: \(architecture)
            Description: test package \(package.name)
             in \(component)
            Filename: \(file)
            Size: \(bytes.count)
            SHA256: \(Self.sha256(bytes))


            """
        }
        try index("\(component)/binary-\(architecture)/Packages", text)
      }
    }
    // Indexes replaced where the suite has none (another architecture, a made-up name).
    for (relative, text) in replaced.sorted(by: { $0.key < $1.key }) { listed += try variants(relative, text) }
    poolBySuite[suite] = names
    everInPool.formUnion(names)
    pool = pool.filter { entry in poolBySuite.values.contains { $0.contains(entry.key) } }
    try writeRelease(suite, listed, signedBy: signer)
  }

  /// `text` at `relative` plain, `.gz` and `.xz`.
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

  /// Writes each of `listed` at `dists/SUITE/path` and by hash (older by-hash copies stay), then
  /// the Release over them, its InRelease and its Release.gpg.
  private func writeRelease(
    _ suite: String, _ listed: [(path: String, bytes: [UInt8])], signedBy signer: String
  ) throws {
    let dists = "dists/\(suite)"
    var md5 = ""
    var sha256 = ""
    var digests: [String: String] = [:]
    // A file's modification time goes forward with each publish (one second at least), so that
    // nginx's Last-Modified and ETag change even when updates come within a second; a file
    // whose bytes did not change is not written.
    let stamp = max(Date(), lastStamp.addingTimeInterval(1))
    lastStamp = stamp
    func place(_ relative: String, _ bytes: [UInt8]) {
      guard read(relative) != bytes else { return }
      write(relative, bytes)
      try? FileManager.default.setAttributes([.modificationDate: stamp], ofItemAtPath: path(relative))
    }
    for (relative, bytes) in listed {
      let digest = Self.sha256(bytes)
      digests[relative] = digest
      place("\(dists)/\(relative)", bytes)
      let folder = (relative as NSString).deletingLastPathComponent
      place("\(dists)/\(folder)/by-hash/SHA256/\(digest)", bytes)
      let size = String(bytes.count)
      let padded = String(repeating: " ", count: max(0, 9 - size.count)) + size
      md5 += " \(FileDigest.hex(of: bytes, algorithm: .md5)) \(padded) \(relative)\n"
      sha256 += " \(digest) \(padded) \(relative)\n"
    }
    listedDigests[suite] = digests
    date = releaseDates[suite] ?? date
    validUntil = validUntils[suite] ?? validUntil
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
    place("\(dists)/Release", Array(release.utf8))
    let inRelease = try keys.clearSign("\(suite)-Release", release, as: signer)
    place("\(dists)/InRelease", Array(inRelease.utf8))
    let data = keys.folder.write("\(suite)-Release-detached", release)
    let signature = data + ".sig"
    try? FileManager.default.removeItem(atPath: signature)
    try keys.run(["--local-user", signer, "--armor", "--output", signature, "--detach-sign", data])
    place("\(dists)/Release.gpg", Array(FileManager.default.contents(atPath: signature) ?? Data()))
  }
}
