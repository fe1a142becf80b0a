import BatchDLSupport

/// A session's entries: tasks, `list:` and `metalink:` entries, and the fields only they have.
extension ManifestDecoder {
  /// The task, or nil when it has errors: those are reported here, and a task left out cannot draw
  /// follow-on reports from the planner (an empty URL, the same bad `to:` again).
  /// `limit`: the session's `max_size`, which a task's `size:` may not pass.
  package mutating func task(_ node: YAMLNode, kind sessionKind: SessionKind, limit: Int64? = nil) -> TaskEntry? {
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
        "a task starts with one of data:, download:, upload:, list:, metalink:, index: or apt: followed by its URL (or file)\(found)"
      )
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
    if kindName == "index" {
      let entry = index(node, entries: entries, kindEntry: kindEntry)
      return diagnostics.errorCount > errorsBefore ? nil : entry
    }
    if kindName == "apt" {
      let entry = apt(node, entries: entries, kindEntry: kindEntry)
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
      case "auth", "aws_sigv4":
        var written = AccessWritten()
        _ = accessSetting(key, value, into: &written)
        if let auth = written.auth { spec.auth = auth }
        if let signature = written.awsSigV4 { spec.awsSigV4 = signature }
        if spec.auth != nil && spec.awsSigV4 != nil {
          diagnostics.error(
            key.mark, "auth and aws_sigv4 both sign the Authorization header: give the task one of them")
        }
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
      case "sha512":
        spec.sha512 = sha512(value)
      case "max_size":
        spec.maxSize = maxSize(value)
      case "size":
        spec.size = size(value, what: "size")
      case "priority":
        spec.priority = choice(value, what: "priority", Priority.self) ?? .normal
      case "after":
        spec.after = references(value)
      case "preserve_mtime":
        spec.preserveMtime = boolean(value, what: "preserve_mtime")
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
    if node["checksums"] != nil || node["signature"] != nil || node["keyring"] != nil {
      if kind == .download {
        spec.checksums = checksumSpec(node)
      } else if let mark = node["checksums"]?.mark ?? node["signature"]?.mark ?? node["keyring"]?.mark {
        diagnostics.error(
          mark, "checksums apply to download tasks only; a \(kind.rawValue) task writes no file to check")
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
      for key in ["sha512", "max_size"] {
        if let value = node[key] {
          diagnostics.error(
            value.mark, "\(key) applies to the response of a data or download task; an upload writes no file")
        }
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
      checkExpectations(spec, node, sessionMaxSize: limit)
    }
    return diagnostics.errorCount > errorsBefore ? nil : .task(spec)
  }

  package mutating func list(
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
      case "max_size":
        spec.maxSize = maxSize(value)
      default:
        _ = folderEntryKey(key.scalar, value, into: &spec)
      }
    }
    spec.checksums = checksumSpec(node)
    if spec.checksums != nil && spec.kind != .download, let mark = node["checksums"]?.mark {
      diagnostics.error(mark, "checksums apply to downloads only; this list's lines are data tasks")
    }
    return .list(spec)
  }

  /// Decodes a key that `list:` and `metalink:` entries share (`to`, a folder; `headers`,
  /// `priority`, `after`); false for any other key.
  package mutating func folderEntryKey<Spec: FolderEntrySpec>(
    _ key: String?, _ value: YAMLNode, into spec: inout Spec
  ) -> Bool {
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
    case "preserve_mtime":
      spec.preserveMtime = boolean(value, what: "preserve_mtime")
    default:
      return false
    }
    return true
  }

  package mutating func metalink(
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
    for (key, value) in entries {
      if key.scalar == "max_size" {
        spec.maxSize = maxSize(value)
      } else {
        _ = folderEntryKey(key.scalar, value, into: &spec)
      }
    }
    return .metalink(spec)
  }

  /// `max_size`: a size of at least one byte.
  package mutating func maxSize(_ node: YAMLNode) -> Int64? {
    guard let limit = size(node, what: "max_size") else { return nil }
    guard limit > 0 else {
      diagnostics.error(node.mark, "max_size must be at least 1 byte (it fails every response longer than it)")
      return nil
    }
    return limit
  }

  /// `sha512`: 128 hexadecimal digits, lower-cased.
  package mutating func sha512(_ node: YAMLNode) -> String? {
    guard let text = string(node, what: "sha512") else { return nil }
    switch ExpectedDigest.parse(text, algorithm: .sha512) {
    case .success(let digest): return digest.hex
    case .failure:
      if let bad = text.first(where: { !$0.isHexDigit }) {
        diagnostics.error(node.mark, "sha512 must be 128 hexadecimal digits (0-9, a-f), found '\(bad)'")
      } else {
        diagnostics.error(node.mark, "sha512 must be 128 hexadecimal digits, found \(text.count) characters")
      }
      return nil
    }
  }

  /// A data or download task's expectations agree with each other: one digest at most, and a
  /// `size:` within the `max_size` that applies (the task's, else its session's).
  private mutating func checkExpectations(_ spec: TaskSpec, _ node: YAMLNode, sessionMaxSize: Int64?) {
    if spec.sha256 != nil, spec.sha512 != nil, let mark = node["sha512"]?.mark {
      diagnostics.error(mark, "give sha256: or sha512:, not both (either one checks the whole file)")
    }
    if let size = spec.size, let limit = spec.maxSize ?? sessionMaxSize, size > limit, let mark = node["size"]?.mark {
      let whose = spec.maxSize != nil ? "the task's" : "the session's"
      diagnostics.error(
        mark,
        "size \(size) is larger than \(whose) max_size (\(ByteSize.format(limit)), \(limit) bytes): the task could only fail with too-large"
      )
    }
  }

  /// `segments` (`network.segments` or a task's): from 1 to `Limits.segments`.
  package mutating func segments(_ node: YAMLNode, what: String) -> Int? {
    let range = "must be from 1 to \(Limits.segments)"
    guard let count = integer(node, what: what, tooLarge: range) else { return nil }
    guard (1...Limits.segments).contains(count) else {
      diagnostics.error(node.mark, "\(what) \(range), found \(count)")
      return nil
    }
    return count
  }

  /// Reports a `to:` that is absolute or climbs out of the session's dest.
  package mutating func checkDestination(_ to: String?, at mark: SourceMark) {
    guard let to, case .failure(let problem) = RelativeDestination.parse(to) else { return }
    diagnostics.error(mark, problem.message)
  }

  package mutating func references(_ node: YAMLNode) -> [TaskReference] {
    switch node.content {
    case .sequence(let items):
      return items.compactMap { item in string(item, what: "after").map { TaskReference(id: $0, mark: item.mark) } }
    default:
      return string(node, what: "after").map { [TaskReference(id: $0, mark: node.mark)] } ?? []
    }
  }

  package mutating func becomeDownload(_ node: YAMLNode) -> BecomeDownload? {
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
}
