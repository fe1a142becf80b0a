import BatchDLSupport

/// An `apt:` entry: an APT repository mirrored from its signed root (MANIFEST.md, "Package
/// repositories"). Its documents are fetched before planning (`AptRepositoryFormat`); the files
/// they name become downloads at `dest/to/PATH`, PATH as the repository publishes it.
public struct AptSpec: Sendable {
  public var mark: SourceMark
  /// The repository's root (`dists/` and `pool/` are below it), ending with `/`.
  public var url: String
  public var urlMark: SourceMark
  public var suites: [String] = []
  public var components: [String] = []
  public var architectures: [String] = []
  /// Whether the `Sources` indexes and the source packages they name are mirrored too.
  public var sources = false
  /// The OpenPGP public keyring the Release must be signed by (relative to the manifest's folder).
  public var keyring = ""
  public var keyringMark: SourceMark?
  /// How long a pool file no index names any more stays (then the session's prune deletes it).
  public var keepRemoved = Interval(milliseconds: 0)
  public var keepRemovedMark: SourceMark?
  public var to: String?
  public var toMark: SourceMark?
  public var headers: [Header] = []
  public var priority = Priority.normal
  public var after: [TaskReference] = []
  public var preserveMtime: Bool? = nil
  /// `max_size:` of the repository's files; nil: the session's.
  public var maxSize: Int64? = nil

  public init(mark: SourceMark, url: String, urlMark: SourceMark) {
    self.mark = mark
    self.url = url
    self.urlMark = urlMark
  }

  /// The repository format that reads this entry's documents.
  public var format: AptRepositoryFormat {
    AptRepositoryFormat(
      suites: suites.map {
        AptFormat(suite: $0, components: components, architectures: architectures, sources: sources)
      })
  }

  /// The URL of `path` (relative to the root, bytes): each byte outside the characters a URL path
  /// may hold as they are percent-encoded.
  public func url(of path: [UInt8]) -> String {
    url + Self.encoded(path)
  }

  static let plainBytes = Set(
    Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/+:@!$&'()*,;=".utf8))

  static func encoded(_ path: [UInt8]) -> String {
    // Most paths need no escape: one String, no append per byte.
    if path.allSatisfy({ plainBytes.contains($0) }) { return String(decoding: path, as: UTF8.self) }
    var text = ""
    text.reserveCapacity(path.count)
    for byte in path {
      if plainBytes.contains(byte) {
        text.unicodeScalars.append(Unicode.Scalar(byte))
      } else {
        let hex = String(byte, radix: 16, uppercase: true)
        text += "%" + (hex.count == 1 ? "0" + hex : hex)
      }
    }
    return text
  }
}

extension AptSpec: FolderEntrySpec {}

extension ManifestDecoder {
  package static let aptKeys = [
    "apt", "suites", "components", "architectures", "sources", "keyring", "keep_removed", "to", "headers", "priority",
    "after", "preserve_mtime", "max_size",
  ]
  /// Keys of a download task that the repository's documents answer for each of its files.
  package static let aptAnswers = [
    "kind": "a repository's files are downloads",
    "method": "a repository's files are fetched with GET",
    "sha256": "each file is checked against the digest its signed index gives",
    "sha512": "each file is checked against the digest its signed index gives",
    "checksums": "the signed Release and its indexes give every file's digest",
    "signature": "the Release is signed: InRelease, or Release with Release.gpg, checked against keyring:",
    "size": "each file is checked against the size its signed index gives",
    "id": "each file's id is its destination",
    "mirrors": "a repository's files come from its root",
    "include": "choose with suites:, components: and architectures:",
    "exclude": "choose with suites:, components: and architectures:",
  ]

  /// An `apt:` entry.
  package mutating func apt(
    _ node: YAMLNode, entries: [(key: YAMLNode, value: YAMLNode)], kindEntry: (key: YAMLNode, value: YAMLNode)
  ) -> TaskEntry? {
    checkKeys(entries, known: Self.aptKeys, in: "an apt entry", extra: Self.aptAnswers)
    let url = folderURL(
      kindEntry.value, what: "apt",
      takes:
        "the http or https URL of a repository's root, the folder that holds dists/ and pool/ (https://deb.example.org/debian/)",
      briefly: "a repository's root URL")
    var spec = AptSpec(mark: node.mark, url: url, urlMark: kindEntry.value.mark)
    for (key, value) in entries {
      switch key.scalar {
      case "suites": spec.suites = aptNames(value, what: "suites")
      case "components": spec.components = aptNames(value, what: "components")
      case "architectures": spec.architectures = aptNames(value, what: "architectures")
      case "sources": spec.sources = boolean(value, what: "sources") ?? false
      case "keyring":
        if let path = string(value, what: "keyring", expand: .plain) {
          if path.isEmpty || path.contains("://") {
            diagnostics.error(value.mark, "keyring is the path of an OpenPGP public keyring (a file), not '\(path)'")
          } else {
            spec.keyring = path
            spec.keyringMark = value.mark
          }
        }
      case "keep_removed":
        spec.keepRemoved = interval(value, what: "keep_removed", positive: false) ?? spec.keepRemoved
        spec.keepRemovedMark = value.mark
      case "max_size": spec.maxSize = maxSize(value)
      default: _ = folderEntryKey(key.scalar, value, into: &spec)
      }
    }
    for (name, list) in [("suites", spec.suites), ("components", spec.components)] where list.isEmpty {
      if node[name] == nil {
        diagnostics.error(
          node.mark,
          "an apt entry needs \(name): (e.g. \(name == "suites" ? "[stable, stable-updates]" : "[main, contrib]"))")
      }
    }
    if spec.architectures.isEmpty && node["architectures"] == nil {
      diagnostics.error(node.mark, "an apt entry needs architectures: (e.g. [amd64, all])")
    }
    if node["keyring"] == nil {
      diagnostics.error(
        node.mark,
        "an apt entry needs keyring: the OpenPGP public keyring its Release must be signed by (e.g. /usr/share/keyrings/debian-archive-keyring.gpg); nothing unsigned is mirrored"
      )
    }
    return .apt(spec)
  }

  /// A list of suite, component or architecture names: each one path segment or more of plain
  /// characters (a suite may be `stable/updates`), none twice.
  private mutating func aptNames(_ node: YAMLNode, what: String) -> [String] {
    guard case .sequence(let items) = node.content else {
      diagnostics.error(node.mark, "\(what) must be a list, e.g. [\(what == "suites" ? "stable" : "main")]")
      return []
    }
    if items.isEmpty { diagnostics.error(node.mark, "\(what) must name one at least") }
    var names: [String] = []
    for item in items {
      guard let name = string(item, what: what) else { continue }
      if let problem = AptPath.problem(Array(name.utf8)) {
        diagnostics.error(item.mark, "\(what): '\(ShownText.escaped(name, limit: 80))': \(problem)")
      } else if name.utf8.contains(where: { !AptSpec.plainBytes.contains($0) }) {
        diagnostics.error(
          item.mark,
          "\(what): '\(ShownText.escaped(name, limit: 80))' holds a character no suite, component or architecture has (letters, digits and -._~+ only)"
        )
      } else if names.contains(name) {
        diagnostics.error(item.mark, "\(what): '\(name)' is given twice")
      } else {
        names.append(name)
      }
    }
    return names
  }
}
