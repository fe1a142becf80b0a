import Foundation

/// Turns a `YAMLNode` tree into a typed `Manifest`, collecting every problem on the way.
struct ManifestDecoder {
  enum Expansion {
    /// No `${VAR}` expansion.
    case none
    /// Expanded; the value is not a secret (paths).
    case plain
    /// Expanded; substituted values are masked wherever the manifest is echoed.
    case secret
  }

  static let topKeys = ["version", "defaults", "sessions"]
  static let settingKeys = [
    "kind", "dest", "timeouts", "retry", "cache", "network", "headers", "on_finished", "insecure", "mirrors", "tls",
    "refresh",
  ]
  static let sessionKeys = settingKeys + ["identifier", "tasks"]
  static let timeoutKeys = ["request", "resource"]
  static let retryKeys = ["attempts", "backoff", "max_backoff"]
  static let cacheKeys = ["policy", "memory", "disk"]
  static let networkKeys = [
    "allows_cellular", "allows_expensive", "allows_constrained", "waits_for_connectivity", "discretionary",
    "window", "max_connections_per_host", "max_concurrent", "rate_limit", "cellular_interfaces",
    "expensive_interfaces", "constrained_interfaces", "segments", "min_segment_size", "http_version",
  ]
  static let tlsKeys = [
    "ca_file", "ca_path", "client_cert", "client_key", "key_password", "pinned_pubkey", "min_version",
  ]
  static let taskKindKeys = ["data", "download", "upload", "list", "metalink"]
  static let taskKeys =
    taskKindKeys + [
      "id", "to", "method", "headers", "body", "body_file", "from", "form", "sha256", "size", "priority", "after",
      "become_download", "mirrors", "segments",
    ]
  static let listKeys = ["list", "kind", "to", "method", "headers", "priority", "after"]
  static let metalinkKeys = ["metalink", "to", "headers", "priority", "after"]
  /// Keys of a download task that a Metalink document answers for each of its files.
  static let metalinkAnswers = [
    "kind": "a Metalink document lists downloads only",
    "method": "the files of a Metalink document are fetched with GET",
    "mirrors": "each file's <url> elements are its sources",
    "sha256": "each file's <hash> elements are checked",
    "size": "each file's <size> is checked",
    "id": "each file's id is its destination",
  ]
  static let becomeDownloadKeys = ["content_type", "larger_than"]

  let file: String
  let environment: [String: String]
  var diagnostics = Diagnostics()
  var secrets: [Secret] = []
  /// Names of the variables expanded in paths.
  var pathVariables: Set<String> = []
  /// The manifest's folder, absolute: relative `tls:` paths are read from it.
  var absoluteDirectory = ""

  init(file: String, environment: [String: String]) {
    self.file = file
    self.environment = environment
  }

  // MARK: - Whole manifest

  mutating func decode(_ root: YAMLNode, path: String, directory: String) -> Manifest? {
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
    return Manifest(path: path, directory: directory, version: version, sessions: sessions, secrets: kept)
  }

  // MARK: - Sessions

  /// Session settings as written, before defaults are applied; nil means "not given".
  struct PartialSettings {
    var kind: SessionKind?
    /// `kind:` was given but is not a kind (already reported).
    var kindUnknown = false
    var dest: String?
    var request: Interval?
    var resource: Interval?
    var attempts: Int?
    var backoff: Interval?
    var maxBackoff: Interval?
    var cachePolicy: CachePolicy?
    var cacheMemory: Int64?
    var cacheDisk: Int64?
    var flags: [String: Bool] = [:]
    var window: TimeWindow?
    var maxConnectionsPerHost: Int?
    var maxConcurrent: Int?
    var rateLimit: Int64?
    var interfaces: [String: [String]] = [:]
    var headers: [Header] = []
    var onFinished: String?
    var insecure: Bool?
    var refresh: RefreshPolicy?
    var segments: Int?
    var minSegmentSize: Int64?
    var mirrors: [MirrorRule]?
    var httpVersion: HTTPVersion?
    /// `tls:` keys as given (each overrides the defaults' one), and where the mapping was.
    var tls = TLSSettings()
    var tlsMark: SourceMark?
  }

  mutating func settings(_ map: [(key: YAMLNode, value: YAMLNode)]) -> PartialSettings {
    var result = PartialSettings()
    for (key, value) in map {
      switch key.scalar {
      case "kind":
        result.kind = choice(value, what: "kind", SessionKind.self)
        result.kindUnknown = result.kind == nil
      case "dest":
        guard let written = string(value, what: "dest", expand: .plain) else { continue }
        switch PathRules.normalize(written, allowAbsolute: true) {
        case .success(let path): result.dest = path
        case .failure(let problem) where problem.climbsOut:
          diagnostics.error(
            value.mark,
            "dest '\(written)' climbs out of the manifest's folder with '..'; write an absolute path to put outputs elsewhere"
          )
        case .failure(let problem): diagnostics.error(value.mark, "dest '\(written)' \(problem.message)")
        }
      case "timeouts":
        guard let entries = mapping(value, what: "timeouts") else { continue }
        checkKeys(entries, known: Self.timeoutKeys, in: "timeouts")
        result.request = value["request"].flatMap { interval($0, what: "timeouts.request", positive: true) }
        result.resource = value["resource"].flatMap { interval($0, what: "timeouts.resource", positive: true) }
      case "retry":
        guard let entries = mapping(value, what: "retry") else { continue }
        checkKeys(entries, known: Self.retryKeys, in: "retry")
        if let node = value["attempts"],
          let attempts = integer(node, what: "retry.attempts", tooLarge: "must be from 1 to \(Limits.count)")
        {
          if attempts < 1 {
            diagnostics.error(node.mark, "retry.attempts counts every try and must be at least 1 (1 means no retry)")
          } else if attempts > Limits.count {
            diagnostics.error(node.mark, "retry.attempts must be from 1 to \(Limits.count), found \(attempts)")
          } else {
            result.attempts = attempts
          }
        }
        result.backoff = value["backoff"].flatMap { interval($0, what: "retry.backoff", positive: false) }
        result.maxBackoff = value["max_backoff"].flatMap { interval($0, what: "retry.max_backoff", positive: false) }
      case "cache":
        guard let entries = mapping(value, what: "cache") else { continue }
        checkKeys(entries, known: Self.cacheKeys, in: "cache")
        result.cachePolicy = value["policy"].flatMap { choice($0, what: "cache.policy", CachePolicy.self) }
        result.cacheMemory = value["memory"].flatMap { size($0, what: "cache.memory") }
        result.cacheDisk = value["disk"].flatMap { size($0, what: "cache.disk") }
      case "network":
        guard let entries = mapping(value, what: "network") else { continue }
        checkKeys(entries, known: Self.networkKeys, in: "network")
        for (flagKey, flagValue) in entries {
          guard let name = flagKey.scalar else { continue }
          switch name {
          case "allows_cellular", "allows_expensive", "allows_constrained", "waits_for_connectivity", "discretionary":
            result.flags[name] = boolean(flagValue, what: "network.\(name)")
          case "window":
            if let text = string(flagValue, what: "network.window") {
              if let window = TimeWindow.parse(text) {
                result.window = window
              } else {
                diagnostics.error(
                  flagValue.mark, "bad network.window '\(text)': write local times as HH:MM-HH:MM, e.g. \"01:00-05:00\""
                )
              }
            }
          case "max_connections_per_host", "max_concurrent":
            if let count = integer(flagValue, what: "network.\(name)", tooLarge: "must be from 1 to \(Limits.count)") {
              if count < 1 {
                diagnostics.error(flagValue.mark, "network.\(name) must be at least 1")
              } else if count > Limits.count {
                diagnostics.error(
                  flagValue.mark, "network.\(name) must be from 1 to \(Limits.count), found \(count)")
              } else if name == "max_concurrent" {
                result.maxConcurrent = count
              } else {
                result.maxConnectionsPerHost = count
              }
            }
          case "rate_limit":
            result.rateLimit = rate(flagValue)
          case "segments":
            result.segments = segments(flagValue, what: "network.segments")
          case "min_segment_size":
            if let size = size(flagValue, what: "network.min_segment_size") {
              if size < Limits.minSegmentSize {
                diagnostics.error(
                  flagValue.mark,
                  "network.min_segment_size must be from 1KB to \(ByteSize.format(Limits.bytes)), found \(describe(flagValue))"
                )
              } else {
                result.minSegmentSize = size
              }
            }
          case "cellular_interfaces", "expensive_interfaces", "constrained_interfaces":
            result.interfaces[name] = stringList(flagValue, what: "network.\(name)")
          case "http_version":
            result.httpVersion = choice(flagValue, what: "network.http_version", HTTPVersion.self)
          default:
            break
          }
        }
      case "headers":
        result.headers = headers(value)
      case "mirrors":
        result.mirrors = mirrorRules(value)
      case "on_finished":
        result.onFinished = string(value, what: "on_finished", expand: .none)
      case "tls":
        guard let entries = mapping(value, what: "tls") else { continue }
        checkKeys(entries, known: Self.tlsKeys, in: "tls")
        result.tlsMark = value.mark
        result.tls = tls(entries)
      case "refresh":
        if let word = value.scalar, word == "never" || word == "always" {
          result.refresh = word == "never" ? .never : .always
        } else if value.scalar?.first?.isNumber == true {
          result.refresh = interval(value, what: "refresh", positive: true).map { .after($0) }
        } else {
          diagnostics.error(
            value.mark,
            "refresh must be never, always or a duration (1d, 12h), found \(value.scalar.map { "'\($0)'" } ?? value.kindName)"
          )
        }
      case "insecure":
        result.insecure = boolean(value, what: "insecure")
        if result.insecure == true {
          diagnostics.warning(
            value.mark,
            "insecure: true turns off TLS certificate checks; anyone on the path can read and alter the transfers")
        }
      default:
        break
      }
    }
    return result
  }

  mutating func session(name: String, key: YAMLNode, node: YAMLNode, defaults: PartialSettings) -> Session? {
    if name.isEmpty
      || !name.unicodeScalars.allSatisfy({
        ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
      })
    {
      diagnostics.error(key.mark, "session name '\(name)' may use only a-z, 0-9, '_' and '-'")
    }
    guard let map = mapping(node, what: "session '\(name)'") else { return nil }
    checkKeys(map, known: Self.sessionKeys, in: "session '\(name)'")
    let own = settings(map)
    let kind = own.kind ?? defaults.kind ?? .default
    // A misspelled kind is reported once; what depends on the kind is not judged against a guess.
    let kindUnknown = own.kind == nil && (own.kindUnknown || defaults.kind == nil && defaults.kindUnknown)

    var identifier: String?
    if let idNode = node["identifier"] {
      identifier = string(idNode, what: "identifier")
      if identifier?.isEmpty == true {
        diagnostics.error(
          idNode.mark, "identifier must not be empty: it names the session's detached worker and its state")
        identifier = nil
      }
      if kind != .background && !kindUnknown {
        diagnostics.error(
          idNode.mark, "identifier is only for background sessions; remove it or set 'kind: background'")
      }
    } else if kind == .background {
      diagnostics.error(
        key.mark,
        "background session '\(name)' needs an 'identifier:' (unique across manifests sharing a state folder), as URLSessionConfiguration.background(withIdentifier:) does"
      )
    }

    let dest = own.dest ?? defaults.dest ?? ""

    let headers = defaults.headers.merged(with: own.headers)

    let flags = defaults.flags.merging(own.flags) { $1 }
    let interfaces = defaults.interfaces.merging(own.interfaces) { $1 }
    var network = NetworkSettings(
      allowsCellular: flags["allows_cellular"] ?? true,
      allowsExpensive: flags["allows_expensive"] ?? true,
      allowsConstrained: flags["allows_constrained"] ?? true,
      waitsForConnectivity: flags["waits_for_connectivity"] ?? false,
      discretionary: flags["discretionary"] ?? false,
      window: own.window ?? defaults.window,
      maxConnectionsPerHost: own.maxConnectionsPerHost ?? defaults.maxConnectionsPerHost ?? 6,
      maxConcurrent: own.maxConcurrent ?? defaults.maxConcurrent ?? 16,
      rateLimit: own.rateLimit ?? defaults.rateLimit,
      cellularInterfaces: interfaces["cellular_interfaces"] ?? ["wwan*", "ppp*", "rmnet*", "wwp*"],
      expensiveInterfaces: interfaces["expensive_interfaces"] ?? [],
      constrainedInterfaces: interfaces["constrained_interfaces"] ?? [])
    network.segments = own.segments ?? defaults.segments ?? 1
    network.minSegmentSize = own.minSegmentSize ?? defaults.minSegmentSize ?? 16 << 20
    network.httpVersion = own.httpVersion ?? defaults.httpVersion ?? .auto
    let tls = TLSSettings.merged(defaults.tls, own.tls)
    checkClient(tls, at: own.tlsMark ?? defaults.tlsMark ?? key.mark)
    if network.discretionary, network.window == nil, let flagNode = node["network"]?["discretionary"] ?? node["network"]
    {
      diagnostics.warning(
        flagNode.mark,
        "discretionary without network.window: tasks run at any time, only while no disallowed interface would carry them"
      )
    }

    var tasks: [TaskEntry] = []
    if let tasksNode = node["tasks"] {
      if case .sequence(let items) = tasksNode.content {
        for item in items {
          if let entry = task(item, kind: kind) { tasks.append(entry) }
        }
        if items.isEmpty { diagnostics.warning(tasksNode.mark, "session '\(name)' has no tasks") }
      } else if tasksNode.isNull {
        diagnostics.warning(tasksNode.mark, "session '\(name)' has no tasks")
      } else {
        diagnostics.error(
          tasksNode.mark, "tasks must be a list (each item starting with '- '), found \(tasksNode.kindName)")
      }
    } else {
      diagnostics.error(key.mark, "session '\(name)' has no 'tasks:' list")
    }

    return Session(
      name: name, mark: key.mark, kind: kind, identifier: identifier, dest: dest,
      timeouts: Timeouts(
        request: own.request ?? defaults.request ?? .seconds(60),
        resource: own.resource ?? defaults.resource ?? (kind == .background ? .seconds(7 * 86_400) : nil)),
      retry: RetryPolicy(
        attempts: own.attempts ?? defaults.attempts ?? 3,
        backoff: own.backoff ?? defaults.backoff ?? .seconds(1),
        maxBackoff: own.maxBackoff ?? defaults.maxBackoff ?? .seconds(120)),
      cache: CacheSettings(
        policy: own.cachePolicy ?? defaults.cachePolicy ?? .protocol,
        memory: own.cacheMemory ?? defaults.cacheMemory ?? 20 << 20,
        disk: kind == .ephemeral ? 0 : (own.cacheDisk ?? defaults.cacheDisk ?? 100 << 20)),
      network: network, headers: headers, onFinished: own.onFinished ?? defaults.onFinished, tasks: tasks,
      insecure: own.insecure ?? defaults.insecure ?? false, mirrors: own.mirrors ?? defaults.mirrors ?? [], tls: tls,
      refresh: own.refresh ?? defaults.refresh ?? .never)
  }

  // MARK: - TLS

  /// The keys of a `tls:` mapping; each file named is checked to be there.
  mutating func tls(_ entries: [(key: YAMLNode, value: YAMLNode)]) -> TLSSettings {
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
  mutating func tlsPath(_ node: YAMLNode, what: String, folder: Bool = false) -> String? {
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
  static func irregularEntry(in folder: String) -> (name: String, kind: String)? {
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
  mutating func pin(_ node: YAMLNode) -> String? {
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
  mutating func checkClient(_ tls: TLSSettings, at mark: SourceMark) {
    if tls.clientKey != nil && tls.clientCert == nil {
      diagnostics.error(mark, "tls.client_key without tls.client_cert: give the certificate the key belongs to")
    }
    if tls.keyPassword != nil && tls.clientKey == nil && tls.clientCert == nil {
      diagnostics.error(
        mark, "tls.key_password without tls.client_key or tls.client_cert: it is the password of the client key")
    }
  }

  // MARK: - Tasks

  /// The task, or nil when it has errors: those are reported here, and a task left out cannot draw
  /// follow-on reports from the planner (an empty URL, the same bad `to:` again).
  mutating func task(_ node: YAMLNode, kind sessionKind: SessionKind) -> TaskEntry? {
    let errorsBefore = diagnostics.errorCount
    guard let entries = mapping(node, what: "a task") else { return nil }
    let kindKeys = entries.filter { Self.taskKindKeys.contains($0.key.scalar ?? "") }
    guard let kindEntry = kindKeys.first, let kindName = kindEntry.key.scalar else {
      // An unknown first key is where the kind belongs: this message is its only report.
      var others = entries
      var found = ""
      if let first = entries.first?.key.scalar, !Self.taskKeys.contains(first) {
        others.removeFirst()
        found = ", not '\(first):'" + Suggestions.hint(for: first, in: Self.taskKindKeys)
      }
      diagnostics.error(
        node.mark,
        "a task starts with one of data:, download:, upload: or list: followed by its URL (or list file)\(found)")
      checkKeys(others, known: Self.taskKeys, in: "a task")
      return nil
    }
    for extra in kindKeys.dropFirst() {
      diagnostics.error(
        extra.key.mark,
        "a task has one kind: '\(kindName):' is already given, so '\(extra.key.scalar ?? ""):' cannot be")
    }
    if kindName == "list" {
      let entry = list(node, entries: entries, kindEntry: kindEntry, sessionKind: sessionKind)
      return diagnostics.errorCount > errorsBefore ? nil : entry
    }
    if kindName == "metalink" {
      let entry = metalink(node, entries: entries, kindEntry: kindEntry)
      return diagnostics.errorCount > errorsBefore ? nil : entry
    }
    checkKeys(entries, known: Self.taskKeys, in: "a \(kindName) task")
    let kind = TaskKind(rawValue: kindName) ?? .download
    let url = string(kindEntry.value, what: "the URL", expand: .secret) ?? ""
    if kind == .data && sessionKind == .background {
      diagnostics.error(
        kindEntry.key.mark,
        "data tasks are not supported in background sessions: a background transfer must write to a file, so that it can go on after batchdl exits; use 'download:' instead"
      )
    }

    var spec = TaskSpec(
      kind: kind, mark: node.mark, url: url, urlMark: kindEntry.value.mark, id: nil, idMark: nil, to: nil,
      toMark: nil, method: "GET", headers: [], body: nil, bodyFile: nil, from: nil, form: [], sha256: nil, size: nil,
      priority: .normal, after: [], becomeDownload: nil)
    var method: String?
    for (key, value) in entries {
      switch key.scalar {
      case "id":
        spec.id = string(value, what: "id")
        spec.idMark = value.mark
        if spec.id?.isEmpty == true { diagnostics.error(value.mark, "id must not be empty") }
      case "to":
        spec.to = string(value, what: "to", expand: .plain)
        spec.toMark = value.mark
        checkDestination(spec.to, at: value.mark)
      case "method":
        method = self.method(value)
      case "headers":
        spec.headers = headers(value)
      case "body":
        spec.body = string(value, what: "body", expand: .secret)
      case "body_file":
        spec.bodyFile = string(value, what: "body_file", expand: .plain)
      case "from":
        spec.from = string(value, what: "from", expand: .plain)
      case "form":
        spec.form = form(value)
      case "sha256":
        if let text = string(value, what: "sha256") {
          let lowered = text.lowercased()
          if lowered.count == 64,
            lowered.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || ("a"..."f").contains($0) })
          {
            spec.sha256 = lowered
          } else if let bad = lowered.first(where: { !$0.isHexDigit }) {
            diagnostics.error(value.mark, "sha256 must be 64 hexadecimal digits (0-9, a-f), found '\(bad)'")
          } else {
            diagnostics.error(value.mark, "sha256 must be 64 hexadecimal digits, found \(text.count) characters")
          }
        }
      case "size":
        spec.size = size(value, what: "size")
      case "priority":
        spec.priority = choice(value, what: "priority", Priority.self) ?? .normal
      case "after":
        spec.after = references(value)
      case "become_download":
        spec.becomeDownload = becomeDownload(value)
        if kind != .data {
          diagnostics.error(
            key.mark, "become_download applies to data tasks only; this task is already a \(kind.rawValue)")
        }
      case "mirrors":
        if kind == .download {
          spec.mirrors = mirrors(value, taskURL: url)
        } else {
          diagnostics.error(
            key.mark, "mirrors apply to download tasks only; a \(kind.rawValue) task is sent to its URL alone")
        }
      case "segments":
        if kind == .download {
          spec.segments = segments(value, what: "segments")
        } else {
          diagnostics.error(
            key.mark, "segments apply to download tasks only; a \(kind.rawValue) task uses one connection")
        }
      default:
        break
      }
    }

    switch kind {
    case .upload:
      // Counted by key, so that a source whose value has a problem is not also reported missing.
      let sources = ["from", "form", "body", "body_file"].map { node[$0] != nil }
      if sources.filter({ $0 }).isEmpty {
        diagnostics.error(
          kindEntry.key.mark,
          "an upload needs what to send: 'from:' (a file), 'form:' (multipart fields), 'body:' or 'body_file:'")
      } else if sources.filter({ $0 }).count > 1 {
        diagnostics.error(
          kindEntry.key.mark, "an upload sends one of 'from:', 'form:', 'body:' or 'body_file:', not several")
      }
      if sessionKind == .background && node["from"] == nil && sources.contains(true) {
        diagnostics.error(
          kindEntry.key.mark,
          "background sessions upload files only ('from:'), as URLSession does: a detached worker must be able to reread the body"
        )
      }
      spec.method = method ?? (spec.from != nil ? "PUT" : "POST")
      if spec.sha256 != nil || spec.size != nil, let mark = node["sha256"]?.mark ?? node["size"]?.mark {
        diagnostics.error(
          mark, "sha256 and size check a downloaded file; an upload writes none (use them on a download task)")
      }
    case .data, .download:
      for key in ["from", "form"] {
        if let value = node[key] {
          diagnostics.error(
            value.mark, "'\(key):' is an upload source; a \(kind.rawValue) task sends 'body:' or 'body_file:' instead")
        }
      }
      if spec.body != nil && spec.bodyFile != nil, let mark = node["body_file"]?.mark {
        diagnostics.error(mark, "give 'body:' or 'body_file:', not both")
      }
      spec.method = method ?? (spec.body != nil || spec.bodyFile != nil ? "POST" : "GET")
    }
    return diagnostics.errorCount > errorsBefore ? nil : .task(spec)
  }

  mutating func list(
    _ node: YAMLNode, entries: [(key: YAMLNode, value: YAMLNode)], kindEntry: (key: YAMLNode, value: YAMLNode),
    sessionKind: SessionKind
  ) -> TaskEntry? {
    checkKeys(entries, known: Self.listKeys, in: "a list entry")
    let file = string(kindEntry.value, what: "list", expand: .plain) ?? ""
    var spec = ListSpec(
      mark: node.mark, file: file, fileMark: kindEntry.value.mark, kind: .download, to: nil, toMark: nil,
      method: "GET", headers: [], priority: .normal, after: [])
    for (key, value) in entries {
      switch key.scalar {
      case "kind":
        if let kind = choice(value, what: "kind", TaskKind.self) {
          if kind == .upload {
            diagnostics.error(
              value.mark,
              "a list expands to data or download tasks; uploads need a source each, so declare them one by one")
          } else if kind == .data && sessionKind == .background {
            diagnostics.error(
              value.mark,
              "data tasks are not supported in background sessions: a background transfer must write to a file, so that it can go on after batchdl exits; use 'kind: download'"
            )
          } else {
            spec.kind = kind
          }
        }
      case "method":
        spec.method = method(value) ?? "GET"
      default:
        _ = folderEntryKey(key.scalar, value, into: &spec)
      }
    }
    return .list(spec)
  }

  /// Decodes a key that `list:` and `metalink:` entries share (`to`, a folder; `headers`,
  /// `priority`, `after`); false for any other key.
  mutating func folderEntryKey<Spec: FolderEntrySpec>(_ key: String?, _ value: YAMLNode, into spec: inout Spec) -> Bool
  {
    switch key {
    case "to":
      spec.to = string(value, what: "to", expand: .plain)
      spec.toMark = value.mark
      checkDestination(spec.to, at: value.mark)
    case "headers":
      spec.headers = headers(value)
    case "priority":
      spec.priority = choice(value, what: "priority", Priority.self) ?? .normal
    case "after":
      spec.after = references(value)
    default:
      return false
    }
    return true
  }

  mutating func metalink(
    _ node: YAMLNode, entries: [(key: YAMLNode, value: YAMLNode)], kindEntry: (key: YAMLNode, value: YAMLNode)
  ) -> TaskEntry? {
    checkKeys(entries, known: Self.metalinkKeys, in: "a metalink entry", extra: Self.metalinkAnswers)
    // A URL's `${VAR}` values are secrets (a token in the query), as in a download's URL; a path's are not.
    let written = kindEntry.value.scalar?.lowercased() ?? ""
    let byURL = written.hasPrefix("http://") || written.hasPrefix("https://") || written.hasPrefix("${")
    let document = string(kindEntry.value, what: "metalink", expand: byURL ? .secret : .plain) ?? ""
    let lowered = document.lowercased()
    let isURL = lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    if isURL {
      if case .failure(let problem) = Metalink.normalizer.withLock({ $0.normalize(document) }) {
        diagnostics.error(kindEntry.value.mark, "metalink: \(problem.description)")
      }
    } else if let scheme = lowered.range(of: "://").map({ lowered[..<$0.lowerBound] }),
      scheme.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." })
    {
      diagnostics.error(
        kindEntry.value.mark,
        "metalink takes a file path or an http or https URL, not \(scheme): (batchdl speaks http and https only)")
    } else if case .scalar = kindEntry.value.content, document.isEmpty, !kindEntry.value.isNull {
      diagnostics.error(kindEntry.value.mark, "metalink needs the path or URL of a Metalink document")
    }
    var spec = MetalinkSpec(
      mark: node.mark, document: document, documentMark: kindEntry.value.mark, isURL: isURL, to: nil, toMark: nil,
      headers: [], priority: .normal, after: [])
    for (key, value) in entries { _ = folderEntryKey(key.scalar, value, into: &spec) }
    return .metalink(spec)
  }

  /// `segments` (`network.segments` or a task's): from 1 to `Limits.segments`.
  mutating func segments(_ node: YAMLNode, what: String) -> Int? {
    let range = "must be from 1 to \(Limits.segments)"
    guard let count = integer(node, what: what, tooLarge: range) else { return nil }
    guard (1...Limits.segments).contains(count) else {
      diagnostics.error(node.mark, "\(what) \(range), found \(count)")
      return nil
    }
    return count
  }

  /// The URLs of a URL list (`mirrors:`), or of one URL written alone.
  func urlItems(_ node: YAMLNode) -> [YAMLNode] {
    if case .sequence(let items) = node.content { return items }
    return [node]
  }

  /// An http or https URL (after `${VAR}` expansion, its values secrets) and its normalized form,
  /// or nil after reporting why not.
  mutating func checkedURL(_ node: YAMLNode, what: String) -> (url: String, normalized: String)? {
    guard let url = string(node, what: what, expand: .secret) else { return nil }
    switch Metalink.normalizer.withLock({ $0.normalize(url) }) {
    case .success(let normalized): return (url, normalized.text)
    case .failure(let problem):
      diagnostics.error(node.mark, "\(what): \(problem.description)")
      return nil
    }
  }

  /// A download's `mirrors:`. A mirror that repeats the task's URL or an earlier mirror is left out
  /// with a warning.
  mutating func mirrors(_ node: YAMLNode, taskURL: String) -> [MirrorURL] {
    if case .mapping = node.content {
      diagnostics.error(node.mark, "mirrors must be a list of URLs, found a mapping")
      return []
    }
    var seen: [String: SourceMark] = [:]
    let own = Metalink.normalizer.withLock { $0.normalize(taskURL) }
    if case .success(let normalized) = own { seen[normalized.text] = SourceMark(file: file, line: 0, column: 0) }
    var result: [MirrorURL] = []
    for entry in urlItems(node) {
      // A mirror is a URL, or `{url: URL, headers: {...}}` with headers of its own.
      var item = entry
      var own: [Header] = []
      if case .mapping(let entries) = entry.content {
        checkKeys(entries, known: ["url", "headers"], in: "a mirror")
        guard let urlNode = entries.first(where: { $0.key.scalar == "url" })?.value else {
          diagnostics.error(entry.mark, "a mirror given as a mapping needs 'url:'")
          continue
        }
        item = urlNode
        if let headersNode = entries.first(where: { $0.key.scalar == "headers" })?.value {
          own = headers(headersNode)
        }
      }
      guard let (url, normalized) = checkedURL(item, what: "mirror") else { continue }
      if let first = seen[normalized] {
        let shown = Redactor.stripUserInfo(url)
        diagnostics.warning(
          item.mark,
          first.line == 0
            ? "mirror '\(shown)' is the task's own URL; it is left out"
            : "mirror '\(shown)' repeats the mirror at line \(first.line); it is left out")
        continue
      }
      seen[normalized] = item.mark
      result.append(MirrorURL(url: url, mark: item.mark, headers: own))
    }
    return result
  }

  /// A URL prefix of `mirrors:` (a key or a listed mirror): http or https, ending in `/`, without
  /// query or fragment.
  mutating func mirrorPrefix(_ node: YAMLNode) -> (url: String, normalized: String)? {
    guard let (url, normalized) = checkedURL(node, what: "mirror prefix") else { return nil }
    let shown = Redactor.stripUserInfo(url)
    guard url.hasSuffix("/"), !url.contains("?"), !url.contains("#") else {
      diagnostics.error(
        node.mark,
        "mirror prefix '\(shown)' must end in '/' (a folder URL, without ?query or #fragment), e.g. https://mirror.example.net/pub/"
      )
      return nil
    }
    return (url, normalized)
  }

  /// A session's `mirrors:` map of URL prefix to mirror prefixes.
  mutating func mirrorRules(_ node: YAMLNode) -> [MirrorRule] {
    guard let entries = mapping(node, what: "mirrors") else { return [] }
    var rules: [MirrorRule] = []
    for (key, value) in entries {
      guard let (prefix, normalizedPrefix) = mirrorPrefix(key) else { continue }
      if case .mapping = value.content {
        diagnostics.error(
          value.mark, "the mirrors of '\(Redactor.stripUserInfo(prefix))' must be a list of URL prefixes")
        continue
      }
      var seen: [String: SourceMark] = [normalizedPrefix: key.mark]
      var mirrors: [String] = []
      let items = value.isNull ? [] : urlItems(value)
      for item in items {
        guard let (url, normalized) = mirrorPrefix(item) else { continue }
        if let first = seen[normalized] {
          let shown = Redactor.stripUserInfo(url)
          diagnostics.warning(
            item.mark,
            first == key.mark
              ? "mirror prefix '\(shown)' is the prefix it mirrors; it is left out"
              : "mirror prefix '\(shown)' repeats the one at line \(first.line); it is left out")
          continue
        }
        seen[normalized] = item.mark
        mirrors.append(url)
      }
      if items.isEmpty {
        diagnostics.warning(value.mark, "'\(Redactor.stripUserInfo(prefix))' lists no mirrors")
      }
      rules.append(MirrorRule(prefix: prefix, mirrors: mirrors, mark: key.mark))
    }
    return rules
  }

  /// Reports a `to:` that is absolute or climbs out of the session's dest.
  mutating func checkDestination(_ to: String?, at mark: SourceMark) {
    guard let to, case .failure(let problem) = PathRules.normalize(to, allowAbsolute: false) else { return }
    diagnostics.error(mark, "to '\(ShownText.escaped(to, limit: 200))' \(problem.message)")
  }

  mutating func method(_ node: YAMLNode) -> String? {
    guard let text = string(node, what: "method") else { return nil }
    guard !text.isEmpty, text.unicodeScalars.allSatisfy(HeaderRules.isTokenCharacter) else {
      diagnostics.error(node.mark, "method '\(text)' is not an HTTP method name (e.g. GET, POST, PUT)")
      return nil
    }
    return text
  }

  mutating func headers(_ node: YAMLNode) -> [Header] {
    guard let entries = mapping(node, what: "headers") else { return [] }
    var result: [Header] = []
    for (key, value) in entries {
      guard let name = key.scalar else { continue }
      if name.isEmpty || !name.unicodeScalars.allSatisfy(HeaderRules.isTokenCharacter) {
        diagnostics.error(key.mark, "'\(name)' is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)")
        continue
      }
      if let duplicate = result.first(where: { $0.name.lowercased() == name.lowercased() }) {
        // The same spelling twice is a duplicate key, which the parser reports.
        if duplicate.name != name {
          diagnostics.error(
            key.mark, "header '\(name)' is given twice (also at line \(duplicate.mark.line)); header names ignore case")
        }
        continue
      }
      guard let text = string(value, what: "header '\(name)'", expand: .secret) else { continue }
      if text.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
        diagnostics.error(
          value.mark, "header '\(name)' contains a line break, which would split the request; remove it")
        continue
      }
      result.append(Header(name: name, value: text, mark: value.mark))
    }
    return result
  }

  mutating func form(_ node: YAMLNode) -> [FormField] {
    guard let entries = mapping(node, what: "form") else { return [] }
    var fields: [FormField] = []
    for (key, value) in entries {
      guard let name = key.scalar, let text = string(value, what: "form field '\(name)'", expand: .secret) else {
        continue
      }
      if text.hasPrefix("@") {
        let path = String(text.dropFirst())
        if path.isEmpty { diagnostics.error(value.mark, "form field '\(name)': '@' must be followed by a file path") }
        fields.append(FormField(name: name, value: text, file: path))
      } else {
        fields.append(FormField(name: name, value: text, file: nil))
      }
    }
    return fields
  }

  mutating func references(_ node: YAMLNode) -> [TaskReference] {
    switch node.content {
    case .sequence(let items):
      return items.compactMap { item in string(item, what: "after").map { TaskReference(id: $0, mark: item.mark) } }
    default:
      return string(node, what: "after").map { [TaskReference(id: $0, mark: node.mark)] } ?? []
    }
  }

  mutating func becomeDownload(_ node: YAMLNode) -> BecomeDownload? {
    guard let entries = mapping(node, what: "become_download") else { return nil }
    checkKeys(entries, known: Self.becomeDownloadKeys, in: "become_download")
    var result = BecomeDownload(contentTypes: [], largerThan: nil)
    if let types = node["content_type"] {
      result.contentTypes = stringList(types, what: "become_download.content_type")
    }
    if let larger = node["larger_than"] { result.largerThan = size(larger, what: "become_download.larger_than") }
    if node["content_type"] == nil && node["larger_than"] == nil {
      diagnostics.error(
        node.mark,
        "become_download needs 'content_type:' or 'larger_than:' to say when the data task becomes a download")
    }
    return result
  }

  // MARK: - Scalars and shapes

  mutating func checkKeys(
    _ entries: [(key: YAMLNode, value: YAMLNode)], known: [String], in place: String, extra: [String: String] = [:]
  ) {
    for (key, _) in entries {
      guard let name = key.scalar, !known.contains(name) else { continue }
      if let why = extra[name] {
        diagnostics.error(key.mark, "'\(name)' is not allowed in \(place): \(why)")
      } else {
        diagnostics.error(key.mark, "unknown key '\(name)' in \(place)\(Suggestions.hint(for: name, in: known))")
      }
    }
  }

  mutating func mapping(_ node: YAMLNode, what: String) -> [(key: YAMLNode, value: YAMLNode)]? {
    if case .mapping(let entries) = node.content { return entries }
    diagnostics.error(node.mark, "\(what) must be a mapping (key: value lines), found \(node.kindName)")
    return nil
  }

  mutating func string(_ node: YAMLNode, what: String, expand: Expansion = .none) -> String? {
    guard case .scalar(let text, _) = node.content, !node.isNull else {
      diagnostics.error(node.mark, "\(what) must be a string, found \(node.kindName)")
      return nil
    }
    guard expand != .none else { return text }
    switch EnvironmentExpansion.expand(text, environment: environment) {
    case .success(let result):
      if expand == .secret {
        for secret in result.substituted where !secrets.contains(secret) { secrets.append(secret) }
      } else {
        for variable in result.substituted { pathVariables.insert(variable.name) }
      }
      return result.text
    case .failure(let problem):
      diagnostics.error(node.mark.advanced(by: node.sourceColumns(to: problem.offset)), problem.message)
      return nil
    }
  }

  mutating func stringList(_ node: YAMLNode, what: String) -> [String] {
    if case .sequence(let items) = node.content {
      return items.compactMap { string($0, what: what) }
    }
    return string(node, what: what).map { [$0] } ?? []
  }

  /// A whole number; one too large for 64 bits is reported as out of range (`tooLarge`, e.g.
  /// "must be from 1 to 1000000").
  mutating func integer(_ node: YAMLNode, what: String, tooLarge: String? = nil) -> Int? {
    guard case .scalar(let text, true) = node.content, let value = Int(text) else {
      if case .scalar(let text, true) = node.content, let tooLarge,
        isDigits(text) || text.hasPrefix("-") && isDigits(String(text.dropFirst()))
      {
        diagnostics.error(node.mark, "\(what) \(tooLarge), found \(text)")
      } else {
        diagnostics.error(node.mark, "\(what) must be a whole number, found \(describe(node))")
      }
      return nil
    }
    return value
  }

  mutating func boolean(_ node: YAMLNode, what: String) -> Bool? {
    if case .scalar(let text, true) = node.content {
      switch text {
      case "true", "True", "TRUE": return true
      case "false", "False", "FALSE": return false
      case "yes", "Yes", "YES", "on", "On", "ON", "no", "No", "NO", "off", "Off", "OFF":
        diagnostics.error(node.mark, "\(what) must be true or false; '\(text)' is not a boolean here (YAML 1.2)")
        return nil
      default: break
      }
    }
    diagnostics.error(node.mark, "\(what) must be true or false, found \(describe(node))")
    return nil
  }

  mutating func size(_ node: YAMLNode, what: String) -> Int64? {
    guard let text = string(node, what: what) else { return nil }
    switch ByteSize.parsed(text) {
    case .value(let value) where value <= Limits.bytes:
      return value
    case .value, .tooLarge:
      diagnostics.error(
        node.mark, "\(what) '\(text)' is too large: sizes may be at most \(ByteSize.format(Limits.bytes))")
    case .invalid:
      diagnostics.error(
        node.mark,
        "bad size '\(text)' for \(what): write a number of bytes or use KB, MB, GB, TB (powers of 1024), e.g. 20MB")
    }
    return nil
  }

  mutating func rate(_ node: YAMLNode) -> Int64? {
    guard let text = string(node, what: "network.rate_limit") else { return nil }
    let trimmed = text.trimmingSpaces
    let parsed = trimmed.hasSuffix("/s") ? ByteSize.parsed(String(trimmed.dropLast(2))) : .invalid
    switch parsed {
    case .value(let value) where value > 0 && value <= Limits.bytes:
      return value
    case .value(let value) where value > 0:
      diagnostics.error(
        node.mark,
        "network.rate_limit '\(text)' is too large: rates may be at most \(ByteSize.format(Limits.bytes))/s")
    case .tooLarge:
      diagnostics.error(
        node.mark,
        "network.rate_limit '\(text)' is too large: rates may be at most \(ByteSize.format(Limits.bytes))/s")
    case .value, .invalid:
      diagnostics.error(node.mark, "bad rate '\(text)' for network.rate_limit: write a size per second, e.g. 50MB/s")
    }
    return nil
  }

  mutating func interval(_ node: YAMLNode, what: String, positive: Bool) -> Interval? {
    guard let text = string(node, what: what) else { return nil }
    switch Interval.parsed(text) {
    case .value(let value) where value > Limits.interval:
      diagnostics.error(
        node.mark, "\(what) '\(text)' is too long: durations may be at most \(Limits.interval) (about ten years)")
    case .value(let value) where positive && value.milliseconds == 0:
      diagnostics.error(node.mark, "\(what) must be longer than zero")
    case .value(let value):
      return value
    case .tooLarge:
      diagnostics.error(
        node.mark, "\(what) '\(text)' is too long: durations may be at most \(Limits.interval) (about ten years)")
    case .invalid:
      diagnostics.error(node.mark, "bad duration '\(text)' for \(what): use ms, s, m, h or d, e.g. 30s, 5m, 2h, 7d")
    }
    return nil
  }

  mutating func choice<T: RawRepresentable & CaseIterable>(_ node: YAMLNode, what: String, _ type: T.Type) -> T?
  where T.RawValue == String {
    let names = T.allCases.map(\.rawValue)
    guard let text = string(node, what: what) else { return nil }
    guard let value = T(rawValue: text) else {
      diagnostics.error(
        node.mark,
        "unknown \(what) '\(text)': expected one of \(names.joined(separator: ", "))\(Suggestions.hint(for: text, in: names))"
      )
      return nil
    }
    return value
  }

  func describe(_ node: YAMLNode) -> String {
    if case .scalar(let text, _) = node.content, !node.isNull { return "'\(text)'" }
    return node.kindName
  }
}

/// Rules for HTTP header names and values (RFC 9110 tokens).
enum HeaderRules {
  static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
    guard scalar.isASCII else { return false }
    if ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) { return true }
    return "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
  }
}
