import Foundation

/// The real apt client (`apt-get update`, `apt-get download`) pointed at one repository, with all of
/// its configuration, state and cache in a temporary folder: no chroot, no root, nothing of the
/// machine's own apt setup read (`/etc/apt` is replaced by the client's `etc/`).
///
/// Its state persists across calls, as a real client's does: an `update` after the repository
/// changed starts from the lists the previous one stored (the client "during a mirror update").
///
/// ```swift
/// let repository = try AptRepositoryFixture(suites: ["stable"])
/// let nginx = try NginxServer(root: repository.root)
/// let apt = try AptClient(
///   repository: nginx.url("/"), suites: ["stable"], components: ["main"], keyring: repository.keyring,
///   caCertificate: nginx.certificates.caCertificate)
/// #expect(try apt.update().succeeded)
/// #expect(try apt.download(["pkg0"]).files == ["pkg0_1.0-6_amd64.deb"])
/// ```
public final class AptClient {
  /// What one `apt-get` command did.
  public struct Outcome: Sendable {
    public var status: Int32
    /// Standard output, then standard error (`LC_ALL=C`: apt's English messages).
    public var output: String
    /// apt-get ran past its time and was stopped.
    public var timedOut: Bool
    /// The names of the files in the download folder after `download` (sorted; none for `update`).
    public var files: [String] = []

    /// apt found a fetched file whose digest is not the one its Release or index names.
    public var hashSumMismatch: Bool { output.contains("Hash Sum mismatch") }
    /// apt found a fetched file whose size is not the one its Release or index names.
    public var unexpectedSize: Bool { output.contains("File has unexpected size") }
    /// apt refused a Release's signature: unsigned, an unknown or a wrong key, a bad signature.
    public var signatureProblem: Bool {
      [
        "is not signed", "couldn't be verified", "NO_PUBKEY", "BADSIG", "EXPKEYSIG", "REVKEYSIG",
        "signatures were invalid", "At least one invalid signature", "GPG error",
      ].contains { output.contains($0) }
    }
    /// apt refused a Release for its dates: `Valid-Until` past or `Date` in the future.
    public var releaseNotValid: Bool { output.contains("is expired") || output.contains("is not valid yet") }
    /// apt-get printed an error (`E:`) or a warning (`W:`): a failed index apt-get update ignored
    /// shows as `W:` with exit status 0.
    public var errors: [String] {
      output.split(separator: "\n").filter { $0.hasPrefix("E: ") || $0.hasPrefix("W: ") }.map(String.init)
    }
    /// Exit status 0 and none of the problems above (and no `E:`/`W:` line).
    public var succeeded: Bool {
      status == 0 && !timedOut && !hashSumMismatch && !unexpectedSize && !signatureProblem && !releaseNotValid
        && errors.isEmpty
    }
  }

  /// Why the client cannot run: apt-get is missing.
  public struct Problem: Error, CustomStringConvertible {
    public var description: String
  }

  public let folder = TemporaryDirectory()
  public let apt: String
  /// The folder `download` fetches into (emptied before each download).
  public var downloads: String { folder.path + "/downloads" }
  /// The `APT_CONFIG` file every command reads first.
  public var configuration: String { folder.path + "/apt.conf" }

  /// A client of `repository` (the URL of the folder that holds `dists/` and `pool/`), reading
  /// `suites` × `components` for `architecture`, trusting `keyring` alone for the Release
  /// signatures (`signed-by=`) and `caCertificate` for HTTPS (nginx's test CA). `options` are
  /// more `Name "value";` lines for `apt.conf` (e.g. `Acquire::Check-Valid-Until "false";`).
  public init(
    repository: String, suites: [String] = ["stable"], components: [String] = ["main"],
    architecture: String = "amd64", keyring: String, caCertificate: String? = nil, options: [String] = []
  ) throws {
    guard let apt = ExternalTool.find("apt-get") else {
      throw Problem(description: "apt-get is not installed (Debian's apt package)")
    }
    self.apt = apt
    let base = folder.path
    let manager = FileManager.default
    for name in [
      "etc/apt.conf.d", "etc/preferences.d", "etc/sources.list.d", "etc/trusted.gpg.d", "etc/auth.conf.d",
      "state/lists/partial", "cache/archives/partial", "log", "downloads",
    ] {
      try manager.createDirectory(atPath: base + "/" + name, withIntermediateDirectories: true)
    }
    // The keyring by a name apt accepts for signed-by= (`.gpg` binary, `.asc` armored).
    let trusted = base + "/etc/keyring" + (keyring.hasSuffix(".asc") ? ".asc" : ".gpg")
    try manager.copyItem(atPath: keyring, toPath: trusted)
    _ = manager.createFile(atPath: base + "/state/status", contents: Data())
    let url = repository.hasSuffix("/") ? repository : repository + "/"
    let sources = suites.map {
      "deb [signed-by=\(trusted) arch=\(architecture)] \(url) \($0) \(components.joined(separator: " "))\n"
    }
    try sources.joined().write(toFile: base + "/etc/sources.list", atomically: true, encoding: .utf8)
    var lines = [
      // Read first (APT_CONFIG): every later path is ours, the machine's apt.conf(.d) is never read.
      "Dir::Etc \"\(base)/etc/\";",
      "Dir::Etc::Parts \"apt.conf.d\";",
      "Dir::Etc::Main \"/dev/null\";",
      "Dir::State \"\(base)/state/\";",
      "Dir::State::status \"\(base)/state/status\";",
      "Dir::Cache \"\(base)/cache/\";",
      "Dir::Log \"\(base)/log/\";",
      // No lock files in /var/lib/dpkg (a normal user cannot take them).
      "Debug::NoLocking \"1\";",
      // Not the machine's architecture or dpkg's foreign ones: the repository's.
      "APT::Architecture \"\(architecture)\";",
      "APT::Architectures { \"\(architecture)\"; };",
      // Packages only: no Translation-*, no Contents or DEP-11 targets.
      "Acquire::Languages \"none\";",
      "Acquire::Retries \"0\";",
      "Acquire::http::Timeout \"20\";",
      "Acquire::https::Timeout \"20\";",
      "Acquire::http::Proxy \"DIRECT\";",
      "Acquire::https::Proxy \"DIRECT\";",
      "APT::Get::List-Cleanup \"true\";",
    ]
    if let caCertificate { lines.append("Acquire::https::CaInfo \"\(caCertificate)\";") }
    // As root, apt runs its download methods as `_apt`, who cannot enter the test's 0700 folders.
    if getuid() == 0 { lines.append("APT::Sandbox::User \"root\";") }
    try (lines + options).map { $0 + "\n" }.joined().write(toFile: configuration, atomically: true, encoding: .utf8)
  }

  /// `apt-get update`.
  public func update() throws -> Outcome { try run(["update"]) }

  /// `apt-get download PACKAGE...` into an emptied `downloads`; the outcome lists what it holds.
  public func download(_ packages: [String]) throws -> Outcome {
    try emptyDownloads()
    var outcome = try run(["download"] + packages, in: downloads)
    outcome.files = downloadedFiles()
    return outcome
  }

  /// `apt-get install --download-only PACKAGE...` into an emptied `downloads` (as `Dir::Cache::
  /// Archives`, so the packages are resolved against an empty dpkg status).
  public func installDownloadOnly(_ packages: [String]) throws -> Outcome {
    try emptyDownloads()
    var outcome = try run(
      ["install", "--download-only", "--yes", "-o", "Dir::Cache::Archives=\(downloads)/"] + packages)
    outcome.files = downloadedFiles()
    return outcome
  }

  /// Runs `apt-get ARGUMENTS` with the client's configuration (in `directory`, else the client's
  /// folder), for at most `timeout` seconds.
  public func run(_ arguments: [String], in directory: String? = nil, timeout: TimeInterval = 120) throws -> Outcome {
    let outcome = try ExternalTool.run(
      apt, ["--quiet"] + arguments,
      environment: [
        "APT_CONFIG": configuration, "LC_ALL": "C", "LANG": nil, "LANGUAGE": nil, "http_proxy": nil,
        "https_proxy": nil, "HTTP_PROXY": nil, "HTTPS_PROXY": nil, "no_proxy": nil, "DEBIAN_FRONTEND": "noninteractive",
      ], in: directory ?? folder.path, timeout: timeout)
    return Outcome(status: outcome.status, output: outcome.output, timedOut: outcome.timedOut)
  }

  private func emptyDownloads() throws {
    try? FileManager.default.removeItem(atPath: downloads)
    try FileManager.default.createDirectory(atPath: downloads + "/partial", withIntermediateDirectories: true)
  }

  private func downloadedFiles() -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []
    return names.filter { name in
      var isFolder: ObjCBool = false
      return FileManager.default.fileExists(atPath: downloads + "/" + name, isDirectory: &isFolder)
        && !isFolder.boolValue && name != "lock"
    }.sorted()
  }
}
