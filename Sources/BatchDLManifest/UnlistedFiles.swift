/// `unlisted:` beside `checksums:`: what a download the checksum files cover, but that no entry
/// names (or whose sidecar is missing), gets.
public enum UnlistedFiles: String, Sendable, Hashable, CaseIterable {
  /// It fails before it is sent with `checksum-missing` (the default).
  case fail
  /// It is fetched without an upstream digest; the report marks it `"verified": false`.
  case fetch
  /// It is left out of the plan: no task, no failure (and prune treats it as named by no task).
  case skip
}

extension ManifestDecoder {
  /// The value `checksums:` takes for sidecar checksum files.
  package static let sidecarWord = "sidecar"

  /// `unlisted:` of `node`, when given and valid.
  package mutating func unlisted(_ node: YAMLNode) -> UnlistedFiles? {
    guard let value = node["unlisted"] else { return nil }
    return choice(value, what: "unlisted", UnlistedFiles.self)
  }

  /// Whether `node` is the word `sidecar` (a plain scalar).
  package static func isSidecar(_ node: YAMLNode) -> Bool {
    if case .scalar(let text, true) = node.content { return text == sidecarWord }
    return false
  }

  /// `checksums: sidecar`, with `signature: sidecar` and `keyring:` beside it, or an error for
  /// each key that does not fit.
  package mutating func sidecarSpec(_ node: YAMLNode, checksums: YAMLNode) -> ChecksumSpec {
    var spec = ChecksumSpec(files: [], mark: checksums.mark)
    spec.sidecar = true
    if let signature = node["signature"] {
      if Self.isSidecar(signature) {
        spec.signatureSidecar = true
      } else {
        diagnostics.error(
          signature.mark,
          "with checksums: sidecar, signature: is 'sidecar' (each file's own NAME.asc or NAME.sig beside it), not a path or URL"
        )
      }
    }
    if let keyring = node["keyring"] {
      decodeKeyring(keyring, into: &spec)
      if !spec.signatureSidecar && node["signature"] == nil {
        diagnostics.error(
          keyring.mark,
          "a sidecar checksum file is not signed itself: add 'signature: sidecar' to check each file's own NAME.asc or NAME.sig with this keyring, or drop keyring:"
        )
      }
    } else if spec.signatureSidecar, let signature = node["signature"] {
      diagnostics.error(
        signature.mark,
        "a signature is checked against a keyring: add 'keyring:' (an OpenPGP public keyring, e.g. one made with 'gpg --export KEY > release.gpg')"
      )
    }
    if let unlisted = unlisted(node) { spec.unlisted = unlisted }
    return spec
  }
}
