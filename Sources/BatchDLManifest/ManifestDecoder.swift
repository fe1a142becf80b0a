import BatchDLSupport
import Foundation

/// Turns a `YAMLNode` tree into a typed `Manifest`, collecting every problem on the way.
package struct ManifestDecoder {
  package enum Expansion {
    /// No `${VAR}` expansion.
    case none
    /// Expanded; the value is not a secret (paths).
    case plain
    /// Expanded; substituted values are masked wherever the manifest is echoed.
    case secret
  }

  package static let topKeys = ["version", "report_history", "defaults", "sessions"]
  package static let settingKeys = [
    "kind", "dest", "timeouts", "retry", "cache", "network", "headers", "on_finished", "insecure", "mirrors", "tls",
    "refresh", "preserve_mtime", "prune", "max_size", "partial_dir", "auth", "netrc", "proxy", "no_proxy", "aws_sigv4",
  ]
  package static let sessionKeys = settingKeys + ["identifier", "tasks"] + checksumKeys
  package static let timeoutKeys = ["request", "resource"]
  package static let retryKeys = ["attempts", "backoff", "max_backoff"]
  package static let cacheKeys = ["policy", "memory", "disk"]
  package static let networkKeys = [
    "allows_cellular", "allows_expensive", "allows_constrained", "waits_for_connectivity", "discretionary",
    "window", "max_connections_per_host", "max_concurrent", "rate_limit", "cellular_interfaces",
    "expensive_interfaces", "constrained_interfaces", "segments", "min_segment_size", "http_version",
  ]
  package static let tlsKeys = [
    "ca_file", "ca_path", "client_cert", "client_key", "key_password", "pinned_pubkey", "min_version",
  ]
  package static let taskKindKeys = ["data", "download", "upload", "list", "metalink", "index", "apt"]
  package static let taskKeys =
    taskKindKeys + [
      "id", "to", "method", "headers", "body", "body_file", "from", "form", "sha256", "size", "priority", "after",
      "become_download", "mirrors", "segments", "preserve_mtime", "sha512", "max_size", "auth", "aws_sigv4",
    ] + checksumKeys
  package static let listKeys =
    ["list", "kind", "to", "method", "headers", "priority", "after", "preserve_mtime", "max_size"] + checksumKeys
  package static let metalinkKeys = ["metalink", "to", "headers", "priority", "after", "preserve_mtime", "max_size"]
  /// Keys of a download task that a Metalink document answers for each of its files.
  package static let metalinkAnswers = [
    "kind": "a Metalink document lists downloads only",
    "method": "the files of a Metalink document are fetched with GET",
    "mirrors": "each file's <url> elements are its sources",
    "sha256": "each file's <hash> elements are checked",
    "sha512": "each file's <hash> elements are checked",
    "size": "each file's <size> is checked",
    "id": "each file's id is its destination",
  ]
  package static let becomeDownloadKeys = ["content_type", "larger_than"]

  package let file: String
  package let environment: [String: String]
  package var diagnostics = Diagnostics()
  package var secrets: [Secret] = []
  /// Names of the variables expanded in paths.
  package var pathVariables: Set<String> = []
  /// The manifest's folder, absolute: relative `tls:` paths are read from it.
  package var absoluteDirectory = ""

  package init(file: String, environment: [String: String]) {
    self.file = file
    self.environment = environment
  }

  // MARK: - Whole manifest

  package mutating func decode(_ root: YAMLNode, path: String, directory: String) -> Manifest? {
    absoluteDirectory = Manifest.absolute(directory: directory)
    guard let top = mapping(root, what: "the manifest") else { return nil }
    checkKeys(top, known: Self.topKeys, in: "the manifest")
    var version = 1
    if let node = root["version"] {
      if let value = integer(node, what: "version", tooLarge: "must be 1 (this batchdl reads version 1)") {
        if value != 1 {
          diagnostics.error(node.mark, "unsupported manifest version \(value): this batchdl reads version 1")
        }
        version = value
      }
    } else {
      diagnostics.error(root.mark, "missing 'version: 1' at the top of the manifest")
    }
    var reportHistory = Manifest.defaultReportHistory
    if let node = root["report_history"], let value = self.reportHistory(node) { reportHistory = value }
    var defaults = PartialSettings()
    if let node = root["defaults"], let map = mapping(node, what: "defaults") {
      checkKeys(
        map, known: Self.settingKeys, in: "defaults",
        extra: [
          "identifier": "identifier names one background session; set it in that session",
          "tasks": "tasks belong to a session",
        ])
      defaults = settings(map)
    }
    var sessions: [Session] = []
    if let node = root["sessions"] {
      if let entries = mapping(node, what: "sessions") {
        if entries.isEmpty { diagnostics.error(node.mark, "no sessions: add at least one under 'sessions:'") }
        var identifiers: [String: SourceMark] = [:]
        for (key, value) in entries {
          guard let name = key.scalar else { continue }
          if let session = session(name: name, key: key, node: value, defaults: defaults) {
            if let identifier = session.identifier, let valueNode = value["identifier"] {
              if let first = identifiers[identifier] {
                diagnostics.error(
                  valueNode.mark,
                  "identifier '\(identifier)' is already used by the session at line \(first.line); each background session needs its own"
                )
              } else {
                identifiers[identifier] = valueNode.mark
              }
            }
            sessions.append(session)
          }
        }
      }
    } else {
      diagnostics.error(root.mark, "missing 'sessions:': a manifest declares at least one session with its tasks")
    }
    // A variable also written in a path (`dest`, `to`, `from`, `body_file`, `list`) names files on
    // disk, which reports and the state folder show: it is not a secret.
    let kept = secrets.filter { !pathVariables.contains($0.name) }
    var manifest = Manifest(path: path, directory: directory, version: version, sessions: sessions, secrets: kept)
    manifest.reportHistory = reportHistory
    return manifest
  }

  /// `report_history`: how many run reports the state folder keeps, from 0 (none) to
  /// `Manifest.maxReportHistory`.
  private mutating func reportHistory(_ node: YAMLNode) -> Int? {
    let range = 0...Manifest.maxReportHistory
    let what = "report_history"
    let tooLarge = "must be a count of run reports from 0 to \(range.upperBound)"
    guard let value = integer(node, what: what, tooLarge: tooLarge) else { return nil }
    guard range.contains(value) else {
      diagnostics.error(node.mark, "\(what) \(tooLarge), found \(value)")
      return nil
    }
    return value
  }
}
