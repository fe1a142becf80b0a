import BatchDLSupport
import BatchDLTransfer
import Foundation

/// A session's `tls:`: each file named is checked to be there and readable.
extension ManifestDecoder {
  /// The keys of a `tls:` mapping; each file named is checked to be there.
  package mutating func tls(_ entries: [(key: YAMLNode, value: YAMLNode)]) -> TLSSettings {
    var result = TLSSettings()
    for (key, value) in entries {
      switch key.scalar {
      case "ca_file": result.caFile = tlsPath(value, what: "tls.ca_file")
      case "ca_path": result.caPath = tlsPath(value, what: "tls.ca_path", folder: true)
      case "client_cert": result.clientCert = tlsPath(value, what: "tls.client_cert")
      case "client_key": result.clientKey = tlsPath(value, what: "tls.client_key")
      case "key_password":
        guard let password = string(value, what: "tls.key_password", expand: .secret), !password.isEmpty else {
          continue
        }
        // Written in the manifest or taken from the environment, it is masked wherever it could show.
        let secret = Secret(name: "tls.key_password", value: password)
        if !secrets.contains(where: { $0.value == password }) { secrets.append(secret) }
        result.keyPassword = password
      case "pinned_pubkey": result.pinnedPublicKey = pin(value)
      case "min_version":
        guard let text = string(value, what: "tls.min_version") else { continue }
        result.minVersion = TLSSettings.Version(rawValue: text)
        if result.minVersion == nil {
          diagnostics.error(
            value.mark,
            "unknown tls.min_version '\(text)': expected 1.2 or 1.3 (older versions of TLS are not accepted)")
        }
      default: break
      }
    }
    return result
  }

  /// A path of a `tls:` key, absolute, when it names a readable file (or folder).
  package mutating func tlsPath(_ node: YAMLNode, what: String, folder: Bool = false) -> String? {
    guard let written = string(node, what: what, expand: .plain) else { return nil }
    guard !written.isEmpty else {
      diagnostics.error(node.mark, "\(what) must not be empty")
      return nil
    }
    let path = FileAccess.resolve(written, against: absoluteDirectory)
    var info = stat()
    guard stat(path, &info) == 0 else {
      let relative = written.hasPrefix("/") ? "" : " (a relative path is read from the manifest's folder)"
      let reason = errno == ENOENT ? "does not exist" : "cannot be read: \(String(cString: strerror(errno)))"
      diagnostics.error(node.mark, "\(what) '\(written)' \(reason)\(relative)")
      return nil
    }
    let isFolder = info.st_mode & S_IFMT == S_IFDIR
    if folder != isFolder {
      diagnostics.error(
        node.mark,
        folder
          ? "\(what) '\(written)' is not a folder: give a folder of CA certificates (or a file in tls.ca_file)"
          : "\(what) '\(written)' is a folder, not a file")
      return nil
    }
    // libcurl opens these at each handshake, on the thread that runs every transfer: a FIFO would
    // block the whole run, a device feed it endless bytes.
    if !folder, let kind = FileAccess.irregularKind(info.st_mode) {
      diagnostics.error(node.mark, "\(what) '\(written)' is \(kind), not a regular file")
      return nil
    }
    if folder, let entry = Self.irregularEntry(in: path) {
      diagnostics.error(
        node.mark, "\(what) '\(written)' holds '\(entry.name)', \(entry.kind): a CA folder holds regular files only")
      return nil
    }
    guard access(path, folder ? R_OK | X_OK : R_OK) == 0 else {
      diagnostics.error(node.mark, "\(what) '\(written)' cannot be read: \(String(cString: strerror(errno)))")
      return nil
    }
    return path
  }

  /// The first entry of a folder that is neither a regular file nor a folder (links followed),
  /// among its first 100,000.
  package static func irregularEntry(in folder: String) -> (name: String, kind: String)? {
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return nil }
    for name in names.sorted().prefix(100_000) {
      var info = stat()
      guard stat(folder + "/" + name, &info) == 0 else { continue }
      if info.st_mode & S_IFMT == S_IFDIR { continue }
      if let kind = FileAccess.irregularKind(info.st_mode) { return (name, kind) }
    }
    return nil
  }

  /// `tls.pinned_pubkey`: `sha256//BASE64` hashes separated by `;`, or a public key file.
  package mutating func pin(_ node: YAMLNode) -> String? {
    guard let written = string(node, what: "tls.pinned_pubkey", expand: .plain) else { return nil }
    let text = written.trimmingCharacters(in: .whitespaces)
    guard text.hasPrefix("sha256//") else { return tlsPath(node, what: "tls.pinned_pubkey") }
    var hashes: [String] = []
    for hash in text.split(separator: ";", omittingEmptySubsequences: false) {
      let value = hash.trimmingCharacters(in: .whitespaces)
      hashes.append(value)
      guard value.hasPrefix("sha256//"), let digest = Data(base64Encoded: String(value.dropFirst(8))),
        digest.count == 32
      else {
        diagnostics.error(
          node.mark,
          "bad tls.pinned_pubkey '\(text)': give sha256// and the Base64 of the SHA-256 of the server's public key (several separated by ';'), or a public key file (PEM or DER)"
        )
        return nil
      }
    }
    // libcurl compares the text as given: what was checked is what it gets, without spaces.
    return hashes.joined(separator: ";")
  }

  /// A client key belongs with its certificate, and a password with a key.
  package mutating func checkClient(_ tls: TLSSettings, at mark: SourceMark) {
    if tls.clientKey != nil && tls.clientCert == nil {
      diagnostics.error(mark, "tls.client_key without tls.client_cert: give the certificate the key belongs to")
    }
    if tls.keyPassword != nil && tls.clientKey == nil && tls.clientCert == nil {
      diagnostics.error(
        mark, "tls.key_password without tls.client_key or tls.client_cert: it is the password of the client key")
    }
  }
}
