import BatchDLManifest
import BatchDLSupport

/// A `list:` entry: its file read line by line, each line a task (the usual line planned on its
/// bytes), and the columns a line may give after its URL.
extension PlanBuilder {
  package mutating func expand(_ spec: ListSpec, session: Session, sessionIndex: Int, entryIndex: Int) {
    let path = FileAccess.resolve(spec.file, against: manifest.directory)
    let display = path
    guard let folder = entryFolder(spec.to, at: spec.toMark ?? spec.fileMark) else { return }
    let lineCount: Int
    do {
      lineCount = try Self.countLines(path)
    } catch {
      diagnostics.error(spec.fileMark, "cannot read the list file \(display): \(error.reason)")
      return
    }
    tasks.reserveCapacity(tasks.count + lineCount)
    requests.reserveCapacity(requests.count + lineCount)
    lastSharing.reserveCapacity(requests.count + lineCount)
    requestIndex.reserve(requests.count + lineCount) { [requests] in requests[Int($0)].key.low }
    destinations.reserve(destinations.count + lineCount) { [text, tasks] in text.hash(tasks[Int($0)].to) }

    let context = context(
      session: session, sessionIndex: sessionIndex, entryIndex: entryIndex, kind: spec.kind, method: spec.method,
      headers: spec.headers, body: "", priority: spec.priority)
    var problems = 0
    var lineNumber = 0
    var mergedHere = 0
    let mergedBefore = merged
    listChecksums = spec.kind == .download ? spec.checksums ?? session.checksums : nil
    defer { listChecksums = nil }
    // Lines covered by checksum files take the general path: their match needs their destination.
    let namePrefix = listChecksums == nil ? namePrefix(session: session, folder: folder) : nil
    do {
      let reader = try LineReader(path: path)
      try reader.forEachLine { bytes in
        lineNumber += 1
        let before = diagnostics.items.count
        let problemsAllowed = problems < maxProblemsPerList
        expandLine(
          bytes, line: lineNumber, file: display, folder: folder, session: session, context: context,
          after: spec.after, report: problemsAllowed, namePrefix: namePrefix)
        if diagnostics.items.count > before || lineHadProblem { problems += 1 }
        lineHadProblem = false
      }
    } catch {
      diagnostics.error(spec.fileMark, "cannot read the list file \(display): \(error.reason)")
      return
    }
    if problems > maxProblemsPerList {
      diagnostics.error(
        SourceMark(file: display, line: lineNumber, column: 1),
        "\(problems - maxProblemsPerList) more lines of \(display) have problems (only the first \(maxProblemsPerList) are listed)"
      )
    }
    mergedHere = merged - mergedBefore
    if mergedHere > 0 {
      let what = mergedHere == 1 ? "1 line of \(display) repeats" : "\(mergedHere) lines of \(display) repeat"
      let merged = mergedHere == 1 ? "was" : "were"
      diagnostics.warning(spec.fileMark, "\(what) an earlier task (same URL, same destination) and \(merged) merged")
    }
  }

  package static func countLines(_ path: String) throws(FileProblem) -> Int {
    var count = 0
    let reader = try LineReader(path: path)
    try reader.forEachLine { _ in count += 1 }
    return count
  }

  /// What the destination of a list line without a second column starts with, before the URL's
  /// file name: `resolveDestination` joins the session's `dest`, the entry's folder and the name,
  /// and that join is the same for every line. Nil when the lines need the general rules: the
  /// folder is invalid, or a name could hold a secret.
  package func namePrefix(session: Session, folder: RelativeDestination) -> [UInt8]? {
    guard !redactor.hasSecrets else { return nil }
    // The folder as `resolveDestination` takes it for such a line (`to: FOLDER/`).
    var relative = RelativeDestination.folder
    if !folder.isFolder {
      guard case .success(let value) = RelativeDestination.parse(folder.path + "/") else { return nil }
      relative = value
    }
    let prefix = form.prefix(dest: session.dest, folder: relative)
    // A URL's user-info in a name is masked, and the name rejected: leave those to the general rules.
    if prefix.utf8.contains(UInt8(ascii: "@")) { return nil }
    return Array(prefix.utf8)
  }

  package mutating func expandLine(
    _ bytes: UnsafeBufferPointer<UInt8>, line: Int, file: String, folder: RelativeDestination, session: Session,
    context: EntryContext, after: [TaskReference], report: Bool, namePrefix: [UInt8]?
  ) {
    func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
    // A UTF-8 byte order mark (Windows editors write one) is not part of the first URL.
    let bom = line == 1 && bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF ? 3 : 0
    var start = bom
    while start < bytes.count, isSpace(bytes[start]) { start += 1 }
    if start == bytes.count || bytes[start] == 0x23 { return }  // blank or `#` comment
    var end = start
    while end < bytes.count, !isSpace(bytes[end]) { end += 1 }
    var second = end
    while second < bytes.count, isSpace(bytes[second]) { second += 1 }
    var secondEnd = bytes.count
    while secondEnd > second, isSpace(bytes[secondEnd - 1]) { secondEnd -= 1 }

    let urlBytes = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[start..<end]))
    let mark = SourceMark(file: file, line: line, column: start + 1 - bom)
    // The usual line: a URL already in normal form and nothing else. Planned on its bytes, without
    // a String for the URL, its host and its file name (what `resolveDestination` and the general
    // path below would give it, at a fraction of the cost).
    if second == secondEnd, let namePrefix, session.mirrors.isEmpty || context.kind != .download,
      let layout = URLNormalizer.normalLayout(UnsafeBufferPointer(rebasing: bytes[start..<end])),
      let nameRange = layout.fileName
    {
      let url = UnsafeBufferPointer(rebasing: bytes[start..<end])
      let name = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: url[nameRange]))
      // A normal path's last segment is never empty, `.`, `..`, nor holds `/` or NUL; `@` could be
      // user-info to mask: the general path decides.
      if !name.contains(UInt8(ascii: "@")), !reserved.mayName(name) {
        let toRef = namePrefix.withUnsafeBytes { text.append($0, name) }
        let task = add(
          context: context, url: urlBytes,
          authority: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: url[layout.authority])), urlRef: .none,
          toRef: toRef, idRef: toRef, line: Int32(line), mark: mark, explicitID: false, quiet: !report)
        if let task, !after.isEmpty { afterRefs.append((task, after)) }
        return
      }
    }
    let url = String(decoding: urlBytes, as: UTF8.self)
    let normalized: NormalizedURL
    switch normalizer.normalize(url) {
    case .success(let value): normalized = value
    case .failure(let problem):
      lineHadProblem = true
      if report { diagnostics.error(mark, problem.description) }
      return
    }
    var to: String?
    var expectation = TaskExpectation()
    if second < secondEnd {
      guard
        let columns = listColumns(
          UnsafeBufferPointer(rebasing: bytes[second..<secondEnd]), line: line, file: file, column: second + 1 - bom,
          report: report)
      else {
        lineHadProblem = true
        return
      }
      to = columns.to
      expectation = columns.expectation
      if let size = expectation.size, let limit = maxSize(of: context), size > limit {
        lineHadProblem = true
        if report {
          diagnostics.error(
            SourceMark(file: file, line: line, column: second + 1 - bom),
            "size:\(size) is larger than max_size (\(ByteSize.format(limit)), \(limit) bytes): the task could only fail with too-large"
          )
        }
        return
      }
    }
    let toMark = to == nil ? mark : SourceMark(file: file, line: line, column: second + 1 - bom)
    // An absolute second column stays absolute (and is rejected) rather than landing under `to:`;
    // a trailing `/` names a folder, as in the manifest.
    let relative =
      to.map { $0.hasPrefix("/") ? $0 : PathRules.join(folder.path, $0) } ?? (folder.isFolder ? nil : folder.path + "/")
    let isFolder = to.map { $0.hasSuffix("/") } ?? true
    guard
      let destination = resolveDestination(
        session: session, to: relative, isFolder: isFolder, url: normalized, mark: toMark, quiet: !report)
    else {
      lineHadProblem = true
      return
    }
    let urlRef = normalized.text == url ? TextRef.none : text.append(urlBytes)
    let toRef = text.append(destination)
    // The session's `mirrors:` map gives a line's download its mirrors (none when it has no map).
    var mirrors: [NormalizedURL] = []
    if !session.mirrors.isEmpty && context.kind == .download {
      for mirror in session.mirrorURLs(for: url) {
        switch normalizer.normalize(mirror) {
        case .success(let value): mirrors.append(value)
        case .failure(let problem):
          lineHadProblem = true
          if report { diagnostics.error(mark, "mirror: \(problem.description)") }
          return
        }
      }
    }
    var verdict = ChecksumVerdict.none
    var salted = context
    if listChecksums != nil {
      verdict = checksumVerdict(
        listChecksums, url: normalized, relative: lastRelative, session: session,
        sessionIndex: Int(context.session), entryIndex: Int(context.entry), ownDigest: expectation.digest != nil)
      if verdict == .skip { return }
      if let salt = identitySalt(of: verdict) { salted.prefix.update(data: Array(salt.utf8)) }
    }
    let sha256 = expectation.digest.flatMap { $0.algorithm == .sha256 ? $0.hex : nil } ?? content(of: verdict)
    let before = tasks.count
    let task = add(
      context: salted, normalized: normalized, urlRef: urlRef, toRef: toRef, idRef: toRef, line: Int32(line),
      mark: mark, explicitID: false, quiet: !report, mirrors: mirrors, content: sha256)
    if case .digest = verdict {
      apply(verdict, to: task, before: before, size: expectation.size)
    } else {
      apply(verdict, to: task, before: before)
      if let task, Int(task) == before, !expectation.isEmpty {
        tasks[Int(task)].expectation = Int32(expectations.count)
        expectations.append(expectation)
      }
    }
    if let task, !after.isEmpty { afterRefs.append((task, after)) }
  }

  /// The columns of a list line after its URL: the destination (quoted with `"` when it holds
  /// spaces), then `sha256:HEX`, `sha512:HEX` and `size:N` in any order (aria2's input files give
  /// per-line options the same way); a line may give the columns without a destination. Nil after
  /// reporting (at the column) what is wrong.
  package mutating func listColumns(
    _ bytes: UnsafeBufferPointer<UInt8>, line: Int, file: String, column: Int, report: Bool
  ) -> (to: String?, expectation: TaskExpectation)? {
    func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
    func problem(_ at: Int, _ message: String) -> (to: String?, expectation: TaskExpectation)? {
      if report { diagnostics.error(SourceMark(file: file, line: line, column: column + at), message) }
      return nil
    }
    var items: [(text: String, at: Int, quoted: Bool)] = []
    var index = 0
    while index < bytes.count {
      while index < bytes.count, isSpace(bytes[index]) { index += 1 }
      guard index < bytes.count else { break }
      let start = index
      if bytes[index] == UInt8(ascii: "\"") {
        guard let close = bytes[(index + 1)...].firstIndex(of: UInt8(ascii: "\"")) else {
          return problem(start, "the quoted destination has no closing '\"'")
        }
        items.append(
          (String(decoding: UnsafeBufferPointer(rebasing: bytes[(index + 1)..<close]), as: UTF8.self), start, true))
        index = close + 1
        if index < bytes.count, !isSpace(bytes[index]) {
          return problem(index, "a space must follow the quoted destination")
        }
      } else {
        while index < bytes.count, !isSpace(bytes[index]) { index += 1 }
        items.append(
          (String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self), start, false))
      }
    }
    var to: String?
    var expectation = TaskExpectation()
    for (position, item) in items.enumerated() {
      let lowered = item.text.lowercased()
      let option =
        !item.quoted && (lowered.hasPrefix("sha256:") || lowered.hasPrefix("sha512:") || lowered.hasPrefix("size:"))
      if !option {
        guard position == 0 else {
          return problem(
            item.at,
            "'\(ShownText.escaped(item.text, limit: 40))' is not a column batchdl reads: after the URL and the destination, a line may have sha256:HEX, sha512:HEX and size:N; quote a destination that has spaces (\"my file.iso\")"
          )
        }
        // "", "." or "./" would name the list's folder itself: the file would take its place.
        if case .success(let normalized) = RelativeDestination.parse(item.text.isEmpty ? "." : item.text),
          normalized.isFolder
        {
          return problem(
            item.at,
            "the destination '\(ShownText.escaped(item.text, limit: 40))' names the list's folder itself, not a file in it"
          )
        }
        to = item.text
        continue
      }
      let value = String(item.text[item.text.index(after: item.text.firstIndex(of: ":") ?? item.text.startIndex)...])
      if lowered.hasPrefix("size:") {
        guard expectation.size == nil else { return problem(item.at, "give one size: per line") }
        guard let size = Int64(value), size >= 0 else {
          return problem(
            item.at, "size: must be a whole number of bytes, found '\(ShownText.escaped(value, limit: 40))'")
        }
        guard size <= Limits.bytes else {
          return problem(item.at, "size: must be at most \(ByteSize.format(Limits.bytes)), found \(size)")
        }
        expectation.size = size
      } else {
        let algorithm: DigestAlgorithm = lowered.hasPrefix("sha256:") ? .sha256 : .sha512
        guard expectation.digest == nil else { return problem(item.at, "give one sha256: or sha512: per line") }
        switch ExpectedDigest.parse(value, algorithm: algorithm) {
        case .success(let digest):
          expectation.digest = digest
        case .failure(let why):
          return problem(item.at + lowered.prefix { $0 != ":" }.count + 1, why.message)
        }
      }
    }
    return (to, expectation)
  }
}

extension PlanBuilder {
  /// The `max_size` of the tasks of an entry: its own, else its session's.
  package func maxSize(of context: EntryContext) -> Int64? {
    let session = manifest.sessions[Int(context.session)]
    return session.tasks[Int(context.entry)].maxSize ?? session.maxSize
  }
}
