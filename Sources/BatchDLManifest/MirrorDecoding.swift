import BatchDLSupport

/// URLs and mirrors: a task's `mirrors:` and a session's map of URL prefixes to mirrors.
extension ManifestDecoder {
  /// The URLs of a URL list (`mirrors:`), or of one URL written alone.
  package func urlItems(_ node: YAMLNode) -> [YAMLNode] {
    if case .sequence(let items) = node.content { return items }
    return [node]
  }

  /// An http or https URL (after `${VAR}` expansion, its values secrets) and its normalized form,
  /// or nil after reporting why not.
  package mutating func checkedURL(_ node: YAMLNode, what: String) -> (url: String, normalized: String)? {
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
  package mutating func mirrors(_ node: YAMLNode, taskURL: String) -> [MirrorURL] {
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
  package mutating func mirrorPrefix(_ node: YAMLNode) -> (url: String, normalized: String)? {
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
  package mutating func mirrorRules(_ node: YAMLNode) -> [MirrorRule] {
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
}
