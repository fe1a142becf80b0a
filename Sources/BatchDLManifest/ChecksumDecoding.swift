import BatchDLSupport

/// `checksums:`, `signature:`, `keyring:` and `unlisted:` (on a session, a download task, a `list:` or an
/// `index:` entry), and the `index:` entry itself.
extension ManifestDecoder {
  package static let checksumKeys = ["checksums", "signature", "keyring", "unlisted"]
  package static let checksumItemKeys = ["file", "signature"]
  package static let indexKeys =
    ["index", "include", "exclude", "depth", "to", "headers", "priority", "after", "preserve_mtime", "max_size"]
    + checksumKeys
  /// The deepest `depth:` of an `index:` entry.
  package static let maxIndexDepth = 32

  /// The checksum files of one level, or nil when it gives none (problems reported).
  ///
  /// - `checksums:` is a path or URL, or a list of them; an item may be `{file: ..., signature: ...}`.
  /// - `signature:` beside `checksums:` signs the one checksum file given there.
  /// - `checksums: sidecar` (with `signature: sidecar`) checks each file against its own sidecars
  ///   (`sidecarSpec`); `unlisted:` says what a file no entry names gets.
  /// - `keyring:` is the OpenPGP keyring (a path) that must have made every signature; a checksum
  ///   file without `signature:` must then be clear-signed.
  package mutating func checksumSpec(_ node: YAMLNode) -> ChecksumSpec? {
    guard let list = node["checksums"] else {
      for key in ["signature", "keyring", "unlisted"] {
        if let value = node[key] {
          diagnostics.error(
            value.mark, "'\(key):' checks the checksum files that 'checksums:' names here, and none is given")
        }
      }
      return nil
    }
    if Self.isSidecar(list) { return sidecarSpec(node, checksums: list) }
    var files: [ChecksumSource] = []
    switch list.content {
    case .sequence(let items):
      if items.isEmpty { diagnostics.error(list.mark, "checksums needs at least one path or URL") }
      for item in items {
        if case .mapping(let entries) = item.content {
          checkKeys(entries, known: Self.checksumItemKeys, in: "a checksums item")
          guard let fileNode = item["file"] else {
            diagnostics.error(item.mark, "a checksums item that is a mapping needs 'file:' (a path or URL)")
            continue
          }
          guard var source = checksumLocation(fileNode, what: "checksums file") else { continue }
          if let signature = item["signature"] { sign(&source, with: signature) }
          files.append(source)
        } else if let source = checksumLocation(item, what: "checksums") {
          files.append(source)
        }
      }
    default:
      if let source = checksumLocation(list, what: "checksums") { files.append(source) }
    }
    if let signature = node["signature"], Self.isSidecar(signature) {
      diagnostics.error(
        signature.mark,
        "signature: sidecar checks each file's own NAME.asc or NAME.sig, and goes with checksums: sidecar; a checksum file's signature is its path or URL"
      )
    } else if let signature = node["signature"] {
      if files.count == 1 && files[0].signature == nil {
        sign(&files[0], with: signature)
      } else if files.count > 1 {
        diagnostics.error(
          signature.mark,
          "signature: signs one checksum file, and checksums names \(files.count); give each its own: checksums: [{file: URL, signature: URL}, ...]"
        )
      } else if files.count == 1 {
        diagnostics.error(signature.mark, "the checksum file already has a signature: in its checksums item")
      }
    }
    var spec = ChecksumSpec(files: files, mark: list.mark)
    if let unlisted = unlisted(node) { spec.unlisted = unlisted }
    if let keyring = node["keyring"] {
      decodeKeyring(keyring, into: &spec)
    } else if let signed = files.first(where: { $0.signature != nil }), let mark = signed.signatureMark {
      diagnostics.error(
        mark,
        "a signature is checked against a keyring: add 'keyring:' (an OpenPGP public keyring, e.g. one made with 'gpg --export KEY > release.gpg')"
      )
    }
    return files.isEmpty ? nil : spec
  }

  /// Reads `keyring:` (the path of an OpenPGP public keyring) into `spec`.
  package mutating func decodeKeyring(_ keyring: YAMLNode, into spec: inout ChecksumSpec) {
    guard let path = string(keyring, what: "keyring", expand: .plain) else { return }
    if path.isEmpty || path.contains("://") {
      diagnostics.error(keyring.mark, "keyring is the path of an OpenPGP public keyring (a file), not '\(path)'")
    } else {
      spec.keyring = path
      spec.keyringMark = keyring.mark
    }
  }

  private mutating func sign(_ source: inout ChecksumSource, with node: YAMLNode) {
    guard let signature = checksumLocation(node, what: "signature") else { return }
    source.signature = signature.location
    source.signatureIsURL = signature.isURL
    source.signatureMark = signature.mark
  }

  /// A path or http(s) URL of a checksum file or a signature.
  private mutating func checksumLocation(_ node: YAMLNode, what: String) -> ChecksumSource? {
    let written = node.scalar?.lowercased() ?? ""
    let byURL = written.hasPrefix("http://") || written.hasPrefix("https://") || written.hasPrefix("${")
    guard let location = string(node, what: what, expand: byURL ? .secret : .plain) else { return nil }
    let lowered = location.lowercased()
    let isURL = lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    if location.isEmpty {
      diagnostics.error(node.mark, "\(what) needs a path or an http or https URL")
      return nil
    }
    if isURL {
      if case .failure(let problem) = Metalink.normalizer.withLock({ $0.normalize(location) }) {
        diagnostics.error(node.mark, "\(what): \(problem.description)")
        return nil
      }
    } else if let scheme = lowered.range(of: "://").map({ lowered[..<$0.lowerBound] }) {
      diagnostics.error(
        node.mark,
        "\(what) takes a file path or an http or https URL, not \(scheme): (batchdl speaks http and https only)")
      return nil
    }
    return ChecksumSource(location: location, isURL: isURL, mark: node.mark)
  }

  package mutating func index(
    _ node: YAMLNode, entries: [(key: YAMLNode, value: YAMLNode)], kindEntry: (key: YAMLNode, value: YAMLNode)
  ) -> TaskEntry? {
    checkKeys(entries, known: Self.indexKeys, in: "an index entry", extra: Self.indexAnswers)
    // nginx, Apache and lighttpd redirect `/pub/release` to `/pub/release/`.
    let url = folderURL(
      kindEntry.value, what: "index",
      takes: "the http or https URL of a folder whose listing the server shows (https://host/pub/release/)",
      briefly: "a folder's URL")
    var spec = IndexSpec(mark: node.mark, url: url, urlMark: kindEntry.value.mark)
    for (key, value) in entries {
      switch key.scalar {
      case "include":
        spec.include = globs(value, what: "include")
      case "exclude":
        spec.exclude = globs(value, what: "exclude")
      case "depth":
        let range = "must be from 1 (the folder only) to \(Self.maxIndexDepth)"
        if let depth = integer(value, what: "depth", tooLarge: range) {
          if (1...Self.maxIndexDepth).contains(depth) {
            spec.depth = depth
          } else {
            diagnostics.error(value.mark, "depth \(range), found \(depth)")
          }
        }
      case "max_size":
        spec.maxSize = maxSize(value)
      default:
        _ = folderEntryKey(key.scalar, value, into: &spec)
      }
    }
    spec.checksums = checksumSpec(node)
    return .index(spec)
  }

  /// The http or https URL of the folder an entry reads (`index:`, `apt:`), ending with `/`: a
  /// `${VAR}` in it is a secret, and a URL that is not http(s), does not normalize, or has a query
  /// or fragment is an error at its place. `takes` and `briefly` say what the key takes.
  package mutating func folderURL(_ node: YAMLNode, what: String, takes: String, briefly: String) -> String {
    let written = node.scalar?.lowercased() ?? ""
    let byURL = written.hasPrefix("http://") || written.hasPrefix("https://") || written.hasPrefix("${")
    var url = string(node, what: what, expand: byURL ? .secret : .plain) ?? ""
    let lowered = url.lowercased()
    if !(lowered.hasPrefix("http://") || lowered.hasPrefix("https://")) {
      diagnostics.error(node.mark, "\(what) takes \(takes), found '\(ShownText.escaped(url, limit: 200))'")
    } else if case .failure(let problem) = Metalink.normalizer.withLock({ $0.normalize(url) }) {
      diagnostics.error(node.mark, "\(what): \(problem.description)")
    } else if url.contains("?") || url.contains("#") {
      diagnostics.error(node.mark, "\(what) takes \(briefly), without a query or fragment")
    } else if !url.hasSuffix("/") {
      url += "/"
    }
    return url
  }

  /// Keys of a download task that a listing answers for each of its files.
  package static let indexAnswers = [
    "kind": "an index lists downloads only",
    "method": "the files of an index are fetched with GET",
    "sha256": "use checksums: to check the files of an index",
    "sha512": "use checksums: to check the files of an index",
    "size": "each file's size is checked against the server's length",
    "id": "each file's id is its destination",
    "mirrors": "an index's files come from the server that lists them",
  ]

  private mutating func globs(_ node: YAMLNode, what: String) -> [String] {
    var patterns: [String] = []
    let items: [YAMLNode]
    if case .sequence(let list) = node.content { items = list } else { items = [node] }
    for item in items {
      guard let pattern = string(item, what: what) else { continue }
      if let problem = DirectoryIndex.Filter.patternProblem(pattern) {
        diagnostics.error(item.mark, "\(what) pattern '\(ShownText.escaped(pattern, limit: 200))' \(problem)")
      } else {
        patterns.append(pattern)
      }
    }
    return patterns
  }
}
