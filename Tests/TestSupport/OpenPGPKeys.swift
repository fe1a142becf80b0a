import Foundation

/// A throw-away GnuPG home with two signing keys (`test@`, `other@`), made with gpg for the test
/// and removed after it, with its gpg-agent stopped.
public final class OpenPGPKeys {
  /// Why the keys could not be made: gpg or gpgv is missing (scripts/setup installs them).
  public struct ToolMissing: Error, CustomStringConvertible {
    public var description: String
  }

  public let folder = TemporaryDirectory()
  public let gpg: String
  public let home: String
  /// The public key of `test@` alone, as `gpg --export` writes it.
  public let keyring: String

  public static let test = "test@example.invalid"
  public static let other = "other@example.invalid"

  public init() throws {
    guard let gpg = ExternalTool.find("gpg") else {
      throw OpenPGPKeys.ToolMissing(description: "gpg is not installed: run scripts/setup (it installs gnupg and gpgv)")
    }
    guard ExternalTool.find("gpgv") != nil else {
      throw OpenPGPKeys.ToolMissing(
        description: "gpgv is not installed: run scripts/setup (it installs gnupg and gpgv)")
    }
    self.gpg = gpg
    home = folder.path + "/gnupg"
    keyring = folder.path + "/test.gpg"
    guard mkdir(home, 0o700) == 0 else { throw OpenPGPKeys.ToolMissing(description: "cannot make \(home)") }
    try run(["--quick-gen-key", "batchdl test <\(Self.test)>", "ed25519", "sign", "never"])
    try run(["--quick-gen-key", "other <\(Self.other)>", "ed25519", "sign", "never"])
    try run(["--output", keyring, "--export", Self.test])
  }

  deinit {
    if let gpgconf = ExternalTool.find("gpgconf") {
      _ = try? ExternalTool.run(gpgconf, ["--homedir", home, "--kill", "gpg-agent"], timeout: 20)
    }
  }

  /// Runs gpg in batch mode on this home; fails on a non-zero exit.
  @discardableResult
  public func run(_ arguments: [String]) throws -> String {
    let outcome = try ExternalTool.run(
      gpg, ["--homedir", home, "--batch", "--pinentry-mode", "loopback", "--passphrase", ""] + arguments,
      environment: ["GNUPGHOME": home, "LC_ALL": "C"], timeout: 60)
    guard outcome.status == 0 else {
      throw OpenPGPKeys.ToolMissing(description: "gpg \(arguments.joined(separator: " ")) failed: \(outcome.output)")
    }
    return outcome.stdout
  }

  /// The fingerprint of `user`'s primary key.
  public func fingerprint(_ user: String) throws -> String {
    let listing = try run(["--with-colons", "--list-keys", user])
    let field = listing.split(separator: "\n").first { $0.hasPrefix("fpr:") }?.split(
      separator: ":", omittingEmptySubsequences: false)
    guard let field, field.count > 9 else { throw OpenPGPKeys.ToolMissing(description: "no fingerprint for \(user)") }
    return String(field[9])
  }

  /// Writes `text` to `name` and signs it (detached) as `users`; returns the data and signature paths.
  public func signDetached(
    _ name: String, _ text: String, as users: [String] = [OpenPGPKeys.test], extra: [String] = []
  )
    throws -> (data: String, signature: String)
  {
    let data = folder.write(name, text)
    let signature = data + ".sig"
    try run(users.flatMap { ["--local-user", $0] } + extra + ["--output", signature, "--detach-sign", data])
    return (data, signature)
  }

  /// Writes `text` to `name` and clear-signs it as `user`; returns the clear-signed file's text.
  public func clearSign(_ name: String, _ text: String, as user: String = OpenPGPKeys.test) throws -> String {
    let data = folder.write(name, text)
    try? FileManager.default.removeItem(atPath: data + ".asc")
    try run(["--local-user", user, "--output", data + ".asc", "--clearsign", data])
    return folder.read(name + ".asc") ?? ""
  }
}
