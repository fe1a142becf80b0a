import BatchDLSupport
import BatchDLTransfer

/// A session: its settings merged over `defaults:`, and its tasks.
extension ManifestDecoder {
  /// Session settings as written, before defaults are applied; nil means "not given".
  package struct PartialSettings {
    package var kind: SessionKind?
    /// `kind:` was given but is not a kind (already reported).
    package var kindUnknown = false
    package var dest: String?
    /// `partial_dir:` as normalized (it may climb out of `dest` with `..`), and where it was.
    package var partialDir: (path: String, mark: SourceMark)?
    package var request: Interval?
    package var resource: Interval?
    package var attempts: Int?
    package var backoff: Interval?
    package var maxBackoff: Interval?
    package var cachePolicy: CachePolicy?
    package var cacheMemory: Int64?
    package var cacheDisk: Int64?
    package var flags: [String: Bool] = [:]
    package var window: TimeWindow?
    package var maxConnectionsPerHost: Int?
    package var maxConcurrent: Int?
    package var rateLimit: Int64?
    package var interfaces: [String: [String]] = [:]
    package var headers: [Header] = []
    package var onFinished: String?
    package var insecure: Bool?
    package var refresh: RefreshPolicy?
    package var preserveMtime: Bool?
    package var prune: PruneSettings?
    package var maxSize: Int64?
    package var segments: Int?
    package var minSegmentSize: Int64?
    package var mirrors: [MirrorRule]?
    package var httpVersion: HTTPVersion?
    /// `tls:` keys as given (each overrides the defaults' one), and where the mapping was.
    package var tls = TLSSettings()
    package var tlsMark: SourceMark?
    /// `auth`, `netrc`, `proxy`, `no_proxy`, `aws_sigv4` as given.
    package var access = AccessWritten()
  }

  package mutating func settings(_ map: [(key: YAMLNode, value: YAMLNode)]) -> PartialSettings {
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
      case "partial_dir":
        result.partialDir = partialDir(value)
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
      case "preserve_mtime":
        result.preserveMtime = boolean(value, what: "preserve_mtime")
      case "prune":
        result.prune = prune(value)
      case "max_size":
        result.maxSize = maxSize(value)
      case "insecure":
        result.insecure = boolean(value, what: "insecure")
        if result.insecure == true {
          diagnostics.warning(
            value.mark,
            "insecure: true turns off TLS certificate checks; anyone on the path can read and alter the transfers")
        }
      default:
        _ = accessSetting(key, value, into: &result.access)
      }
    }
    return result
  }

  package mutating func session(name: String, key: YAMLNode, node: YAMLNode, defaults: PartialSettings) -> Session? {
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
      maxConnectionsPerHost: own.maxConnectionsPerHost ?? defaults.maxConnectionsPerHost
        ?? TransferDefaults.connectionsPerHost,
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
          if let entry = task(item, kind: kind, limit: own.maxSize ?? defaults.maxSize) { tasks.append(entry) }
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

    var session = Session(
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
      refresh: own.refresh ?? defaults.refresh ?? .never,
      preserveMtime: own.preserveMtime ?? defaults.preserveMtime ?? true, checksums: checksumSpec(node),
      prune: sessionPrune(own: own.prune, defaults: defaults.prune, kind: kind, kindUnknown: kindUnknown))
    session.maxSize = own.maxSize ?? defaults.maxSize
    for case .apt(let spec) in tasks where session.prune == nil && spec.keepRemoved.milliseconds > 0 {
      diagnostics.error(
        spec.keepRemovedMark ?? spec.mark,
        "keep_removed says how long pool files upstream removed stay before prune deletes them, but session '\(name)' does not prune: add 'prune: {max_delete: \"10%\"}' to it, or remove keep_removed"
      )
    }
    session.access = accessSettings(own: own.access, defaults: defaults.access, at: key.mark)
    if let partial = own.partialDir ?? defaults.partialDir {
      session.partialDir = partial.path
      checkPartialDir(partial.path, dest: dest, at: partial.mark)
    }
    return session
  }

  /// A session's `prune:`: its own, else the defaults'. An ephemeral session keeps no record of what
  /// it wrote, so its own `prune:` is an error, and it does not inherit the defaults' one.
  private mutating func sessionPrune(
    own: PruneSettings?, defaults: PruneSettings?, kind: SessionKind, kindUnknown: Bool
  ) -> PruneSettings? {
    guard kind == .ephemeral else { return own ?? defaults }
    if let own, !kindUnknown {
      diagnostics.error(
        own.mark,
        "prune is not allowed in an ephemeral session: it keeps no record of the files it wrote, so nothing could be pruned safely; remove prune or use 'kind: default'"
      )
    }
    return nil
  }
}
