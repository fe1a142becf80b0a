import Crypto

/// Expands `list:` files, normalizes URLs, deduplicates identical requests and orders them.
///
/// It checks everything that needs the whole task list: destinations written by two different
/// requests, ids, `after:` references and cycles. It never touches the network.
public struct Planner {
  /// Problems reported per `list:` file before the rest are only counted.
  public var maxProblemsPerList = 50

  public init() {}

  /// Plans `manifest`; `warnings` (the loader's diagnostics) are carried into the plan or the error
  /// alongside the planner's own. When they hold errors, the manifest is partial (tasks with
  /// problems were left out), so references to unknown ids are not reported again.
  ///
  /// `descriptors` holds the documents that `metalink:` entries name by URL (fetched or stored by
  /// the command); without one, such an entry lists no tasks, with a warning.
  ///
  /// `stateFolder`: the state folder the command uses (absolute), which no destination may name;
  /// the default one beside the manifest is never a destination either.
  public func plan(
    _ manifest: Manifest, warnings: [Diagnostic] = [], descriptors: DescriptorSet? = nil, stateFolder: String? = nil
  ) throws(ManifestError) -> Plan {
    var clashes: [DocumentFile: String] = [:]
    var builder: PlanBuilder
    // A document's file whose destination clashes with another task's is left out, and the plan
    // made again without it (taking files out makes no new clash: twice at most).
    repeat {
      builder = PlanBuilder(manifest: manifest, maxProblemsPerList: maxProblemsPerList)
      builder.reserved = ReservedPaths(manifest: manifest, stateFolder: stateFolder)
      builder.manifestFolderPrefix = PathRules.folderPrefix(FileAccess.normalize(manifest.absoluteDirectory))
      builder.descriptorSet = descriptors
      builder.partial = warnings.contains { $0.severity == .error }
      builder.clashingFiles = clashes
      builder.expandAll()
      builder.checkIDs()
      builder.checkFolders()
      let found = builder.newClashes.filter { clashes[$0.key] == nil }
      if found.isEmpty { break }
      clashes.merge(found) { first, _ in first }
    } while true
    builder.resolveAfter()
    let order = builder.diagnostics.hasErrors ? [] : builder.schedule()
    builder.assignShardKeys()
    var all = Diagnostics()
    all.append(contentsOf: warnings)
    // The planner's messages quote ids, URLs and list lines: mask user-info and secrets in them
    // (the loader's are masked already).
    all.append(contentsOf: builder.diagnostics.items.map(builder.redactor.diagnostic))
    if all.hasErrors { throw ManifestError(diagnostics: all.sorted) }
    return Plan(
      manifest: manifest, text: builder.text, tasks: builder.tasks, requests: builder.requests, order: order,
      hosts: builder.hosts, mergedDuplicates: builder.merged, warnings: all.sorted, expectations: builder.expectations,
      descriptors: builder.descriptors, refusedFiles: builder.refusedFiles, unresolvedAfter: builder.unresolvedAfter)
  }
}

private struct PlanBuilder {
  let manifest: Manifest
  let maxProblemsPerList: Int
  let normalizer = URLNormalizer()
  let redactor: Redactor
  var diagnostics = Diagnostics()
  var text = TextArena()
  var tasks: [PlannedTask] = []
  var requests: [PlannedRequest] = []
  var lastSharing: [Int32] = []
  /// The last `to` normalized, and what it became: every line of a list shares its entry's folder.
  var lastTo: (text: String, normalized: String)?
  /// Requests by key.
  var requestIndex = IndexTable()
  /// The request of each expected content (downloads with `sha256:`).
  var contentRequests: [ContentName: Int32] = [:]
  /// Tasks by destination.
  var destinations = IndexTable()
  /// The mirrors of each request with more than `unindexedMirrors` of them, by their bytes.
  var mirrorIndex: [Int32: IndexTable] = [:]
  /// Explicit ids and the URL ids of data tasks without `to:`.
  var namedIDs: [String: Int32] = [:]
  var explicitIDs: [(task: Int32, mark: SourceMark)] = []
  var hosts: [String] = []
  var hostIndex: [String: Int32] = [:]
  /// The host of the last request added (-1 before the first).
  var lastHost: Int32 = -1
  var afterRefs: [(task: Int32, refs: [TaskReference])] = []
  /// See `Plan.unresolvedAfter`.
  var unresolvedAfter: [Int32: (id: String, document: String)] = [:]
  /// Documents' files left out of this plan because they clashed in an earlier one, and why.
  var clashingFiles: [DocumentFile: String] = [:]
  /// Documents' files found clashing in this plan, and why: the plan is made again without them.
  var newClashes: [DocumentFile: String] = [:]
  /// The document's file each task comes from, for tasks listed by a document.
  var documentFileOfTask: [Int32: DocumentFile] = [:]
  /// See `Plan.refusedFiles`.
  var refusedFiles: [RefusedFile] = []
  /// Each session's absolute `dest` with a final `/` (nil for a relative one), made when first asked.
  var destPrefixes: [[UInt8]?]?
  var refusedIDs = Set<String>()
  var resolvedAfter: [Int32: [(task: Int32, ref: TaskReference)]] = [:]
  var merged = 0
  /// The manifest had errors already: some tasks are missing, so unknown ids are expected.
  var partial = false
  /// Documents fetched before planning (`metalink:` by URL).
  var descriptorSet: DescriptorSet?
  /// The files batchdl reads or keeps, which no destination may name.
  var reserved = ReservedPaths()
  /// Sizes and digests from documents, and the documents given by URL.
  var expectations: [TaskExpectation] = []
  var descriptors: [PlannedDescriptor] = []

  init(manifest: Manifest, maxProblemsPerList: Int) {
    self.manifest = manifest
    self.maxProblemsPerList = maxProblemsPerList
    self.redactor = Redactor(secrets: manifest.secrets)
  }

  // MARK: - Expansion

  /// What every task of one entry shares: the hash of everything but the URL, and where it lives.
  struct EntryContext {
    var session: Int32
    var entry: Int32
    var kind: TaskKind
    var method: String
    var priority: Priority
    var prefix: SHA256
    /// The digest of everything but the URL (session kind, method, headers, body): requests with
    /// the same expected content are one only when this is the same too.
    var identity: RequestKey
  }

  /// What makes two downloads the same content: their expected SHA-256, in one session, with the
  /// same method, headers and body.
  struct ContentName: Hashable {
    var sha256: String
    var session: Int32
    var identity: RequestKey
  }

  mutating func expandAll() {
    for (sessionIndex, session) in manifest.sessions.enumerated() {
      for (entryIndex, entry) in session.tasks.enumerated() {
        switch entry {
        case .task(let spec):
          expand(spec, session: session, sessionIndex: sessionIndex, entryIndex: entryIndex)
        case .list(let spec):
          expand(spec, session: session, sessionIndex: sessionIndex, entryIndex: entryIndex)
        case .metalink(let spec):
          expand(spec, session: session, sessionIndex: sessionIndex, entryIndex: entryIndex)
        }
      }
    }
  }

  func context(
    session: Session, sessionIndex: Int, entryIndex: Int, kind: TaskKind, method: String, headers: [Header],
    body: String, priority: Priority
  ) -> EntryContext {
    let effective = session.headers.merged(with: headers)
    var hasher = SHA256()
    hasher.update(data: Array("batchdl-request/1\n\(session.kind.rawValue)\n\(method)\n".utf8))
    // Sessions that trust, present or speak other things never share a request (nor one that
    // trusts nothing with one that checks); without any, the identity is as it always was.
    if let trust = session.connectionIdentity(relativeTo: manifest.absoluteDirectory) {
      hasher.update(data: Array("tls:\(trust)\n".utf8))
    }
    for header in effective.sorted(by: { $0.name.lowercased() < $1.name.lowercased() }) {
      hasher.update(data: Array("\(header.name.lowercased()):\(header.value)\n".utf8))
    }
    hasher.update(data: Array("\nbody:\(body)\nurl:".utf8))
    let identity = hasher.finalize().withUnsafeBytes { raw in
      RequestKey(
        high: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
        low: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
    }
    return EntryContext(
      session: Int32(sessionIndex), entry: Int32(entryIndex), kind: kind, method: method, priority: priority,
      prefix: hasher, identity: identity)
  }

  /// The body's part of the request identity: a digest of inline text, the resolved path of a file.
  func bodyIdentity(_ spec: TaskSpec) -> String {
    if let body = spec.body { return "text:" + SHA256.hash(data: Array(body.utf8)).hexString }
    if let file = spec.bodyFile ?? spec.from { return "file:" + FileAccess.resolve(file, against: manifest.directory) }
    if !spec.form.isEmpty {
      var hasher = SHA256()
      for field in spec.form {
        let value = field.file.map { "@" + FileAccess.resolve($0, against: manifest.directory) } ?? field.value
        hasher.update(data: Array("\(field.name)=\(value.utf8.count):\(value)\n".utf8))
      }
      return "form:" + hasher.finalize().hexString
    }
    return ""
  }

  mutating func expand(_ spec: TaskSpec, session: Session, sessionIndex: Int, entryIndex: Int) {
    let context = context(
      session: session, sessionIndex: sessionIndex, entryIndex: entryIndex, kind: spec.kind, method: spec.method,
      headers: spec.headers, body: bodyIdentity(spec), priority: spec.priority)
    let normalized: NormalizedURL
    switch normalizer.normalize(spec.url) {
    case .success(let value): normalized = value
    case .failure(let problem):
      diagnostics.error(spec.urlMark, problem.description)
      return
    }
    // Where the file goes: `to:` (a trailing `/` names a folder), else the URL's last segment.
    var destination: String?
    let needsFile = spec.kind == .download || spec.to != nil || spec.becomeDownload != nil
    if needsFile {
      let mark = spec.toMark ?? spec.urlMark
      destination = resolveDestination(
        session: session, to: spec.to, isFolder: spec.to?.hasSuffix("/") ?? false, url: normalized, mark: mark)
      if destination == nil { return }
    }
    let urlRef = text.append(spec.url)
    let toRef = destination.map { text.append($0) } ?? .none
    var idRef = toRef
    if let id = spec.id {
      idRef = text.append(id)
    } else if destination == nil {
      idRef = text.append(redactor.url(spec.url))
    }
    var mirrors: [NormalizedURL] = []
    if spec.kind == .download {
      let written =
        spec.mirrors.map { ($0.url, $0.mark) } + session.mirrorURLs(for: spec.url).map { ($0, spec.urlMark) }
      for (url, mark) in written {
        switch normalizer.normalize(url) {
        case .success(let value): mirrors.append(value)
        case .failure(let problem): diagnostics.error(mark, "mirror: \(problem.description)")
        }
      }
    }
    let task = add(
      context: context, normalized: normalized, urlRef: urlRef, toRef: toRef, idRef: idRef, line: 0,
      mark: spec.mark, explicitID: spec.id != nil, mirrors: mirrors,
      content: spec.kind == .download && spec.method == "GET" ? spec.sha256?.lowercased() : nil)
    if let task {
      if spec.id != nil, let mark = spec.idMark { explicitIDs.append((task, mark)) }
      if !spec.after.isEmpty { afterRefs.append((task, spec.after)) }
    }
  }

  mutating func expand(_ spec: ListSpec, session: Session, sessionIndex: Int, entryIndex: Int) {
    let path = FileAccess.resolve(spec.file, against: manifest.directory)
    let display = path
    var folder = ""
    if let to = spec.to {
      switch PathRules.normalize(to, allowAbsolute: false) {
      case .success(let value): folder = value
      case .failure(let problem):
        diagnostics.error(spec.toMark ?? spec.fileMark, "to '\(ShownText.escaped(to, limit: 200))' \(problem.message)")
        return
      }
    }
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
    let namePrefix = namePrefix(session: session, folder: folder)
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

  /// A `metalink:` entry: each `<file>` of its document that passed the reader's checks is a
  /// download at `dest/to/NAME`, its first source the task's URL and the others its mirrors, its
  /// `<size>` and strongest `<hash>` its expectation. Problems inside the document leave only the
  /// file concerned out and are warnings here (the manifest itself is valid); a local document that
  /// cannot be read as Metalink at all is an error. A document given by URL comes from
  /// `descriptors`: when it failed, the entry stands as one task that fails with `descriptor`.
  mutating func expand(_ spec: MetalinkSpec, session: Session, sessionIndex: Int, entryIndex: Int) {
    let document: MetalinkDocument
    if spec.isURL {
      let masked = redactor.url(spec.document)
      let fetched =
        descriptorSet?.documents[DescriptorSet.key(of: spec.document, for: session, in: manifest)]
        ?? FetchedDocument(outcome: .missing)
      var record = PlannedDescriptor(
        session: Int32(sessionIndex), entry: Int32(entryIndex), url: masked, outcome: fetched.outcome,
        sha256: fetched.body.map { SHA256.hash(data: $0).hexString })
      if let problem = fetched.problem, fetched.outcome != .failed {
        diagnostics.warning(spec.documentMark, "the Metalink document \(masked): \(problem)")
      }
      guard let body = fetched.body else {
        partial = true
        if fetched.outcome == .missing {
          diagnostics.warning(
            spec.documentMark,
            "no stored copy of the Metalink document \(masked): its files are not listed; 'batchdl plan' (without --offline) or 'batchdl run' fetches it"
          )
        } else {
          failDescriptor(&record, spec: spec, because: fetched.problem ?? "cannot fetch it")
        }
        descriptors.append(record)
        return
      }
      document = Metalink.parse(body, file: masked)
      if document.version == nil {
        partial = true
        let reason = document.diagnostics.first.map { "\($0.mark): \($0.message)" } ?? "not a Metalink document"
        failDescriptor(&record, spec: spec, because: "cannot read it: \(reason)")
        descriptors.append(record)
        return
      }
      descriptors.append(record)
    } else {
      let path = FileAccess.resolve(spec.document, against: manifest.directory)
      document = Metalink.read(path: path, named: spec.documentMark)
      if document.version == nil {
        // The user's own file, like a `list:` file: the manifest is invalid.
        diagnostics.append(contentsOf: document.diagnostics)
        return
      }
    }
    // Problems inside a usable document leave their file out: warnings, the rest runs.
    for diagnostic in document.diagnostics {
      diagnostics.warning(
        diagnostic.mark,
        diagnostic.severity == .error && !diagnostic.message.hasSuffix("left out")
          ? diagnostic.message + "; this file is left out" : diagnostic.message)
    }
    // Each file the document lists but that is left out fails in the run as an entry of its own.
    for file in document.leftOut {
      refuse(
        file.name, of: spec, session: sessionIndex, entry: entryIndex, at: file.mark,
        code: file.unsafeName ? .unsafePath : .descriptor, file.message)
    }
    var folder = ""
    if let to = spec.to {
      switch PathRules.normalize(to, allowAbsolute: false) {
      case .success(let value): folder = value
      case .failure(let problem):
        diagnostics.error(
          spec.toMark ?? spec.documentMark, "to '\(ShownText.escaped(to, limit: 200))' \(problem.message)")
        return
      }
    }
    let context = context(
      session: session, sessionIndex: sessionIndex, entryIndex: entryIndex, kind: .download, method: "GET",
      headers: spec.headers, body: "", priority: spec.priority)
    for file in document.files {
      var sources: [(written: String, normalized: NormalizedURL)] = []
      for source in file.sources {
        switch normalizer.normalize(source.url) {
        case .success(let value): sources.append((source.url, value))
        case .failure(let problem):
          diagnostics.warning(source.mark, "<url> is ignored: \(problem.description)")
        }
      }
      guard let first = sources.first else {
        diagnostics.warning(
          file.mark, "file '\(ShownText.escaped(file.name, limit: 200))' has no usable <url>; this file is left out")
        refuse(
          file.name, of: spec, session: sessionIndex, entry: entryIndex, at: file.mark, code: .descriptor,
          "file has no usable <url>")
        continue
      }
      let documentFile = DocumentFile(
        session: Int32(sessionIndex), entry: Int32(entryIndex), name: Array(file.name.utf8))
      if let clash = clashingFiles[documentFile] {
        let message = "file '\(ShownText.escaped(file.name, limit: 200))' is left out: \(clash)"
        diagnostics.warning(file.mark, message)
        refuse(file.name, of: spec, session: sessionIndex, entry: entryIndex, at: file.mark, code: .conflict, message)
        continue
      }
      let warned = diagnostics.items.count
      guard
        let destination = resolveDestination(
          session: session, to: PathRules.join(folder, file.name), isFolder: false, url: first.normalized,
          mark: file.mark, fromDocument: true)
      else {
        let why = diagnostics.items.dropFirst(warned).first?.message ?? "its destination is refused"
        refuse(file.name, of: spec, session: sessionIndex, entry: entryIndex, at: file.mark, code: .unsafePath, why)
        continue
      }
      let urlRef = text.append(first.written)
      let toRef = text.append(destination)
      var mirrors = sources.dropFirst().map(\.normalized)
      for url in session.mirrorURLs(for: first.written) {
        if case .success(let value) = normalizer.normalize(url) { mirrors.append(value) }
      }
      let sha256 = file.hashes.first { $0.algorithm == .sha256 }?.hex
      let before = tasks.count
      guard
        let task = add(
          context: context, normalized: first.normalized, urlRef: urlRef, toRef: toRef, idRef: toRef, line: 0,
          mark: file.mark,
          explicitID: false, mirrors: mirrors, content: sha256, document: documentFile)
      else { continue }
      documentFileOfTask[task] = documentFile
      if Int(task) == before {
        let expectation = TaskExpectation(size: file.size, digest: file.digest, pieces: file.pieces)
        if !expectation.isEmpty {
          tasks[Int(task)].expectation = Int32(expectations.count)
          expectations.append(expectation)
        }
      }
      if !spec.after.isEmpty { afterRefs.append((task, spec.after)) }
    }
  }

  /// Records a file of `spec`'s document that is left out: in the run it fails with `code` as an
  /// entry of its own, its id the document and the name (`DOCUMENT#NAME`, the element's line
  /// added when that id is taken), its message naming the element.
  mutating func refuse(
    _ name: String?, of spec: MetalinkSpec, session: Int, entry: Int, at mark: SourceMark, code: FailureCode,
    _ message: String
  ) {
    let document = spec.isURL ? redactor.url(spec.document) : spec.document
    var id = document + "#" + (name.map { ShownText.escaped($0, limit: 200) } ?? "<file> at line \(mark.line)")
    if refusedIDs.contains(id) { id += " (line \(mark.line))" }
    refusedIDs.insert(id)
    refusedFiles.append(
      RefusedFile(
        task: PlannedTask(
          session: Int32(session), entry: Int32(entry), line: 0, kind: .download, request: -1, nextSharing: -1,
          id: text.append(id), url: text.append(spec.document), to: .none),
        code: code, message: redactor.text("\(message) (the <file> at \(mark))")))
  }

  /// Makes the entry of a document that failed one task that fails with `descriptor` in the run.
  mutating func failDescriptor(_ record: inout PlannedDescriptor, spec: MetalinkSpec, because problem: String) {
    let message = redactor.text("the Metalink document \(record.url): \(problem)")
    diagnostics.warning(spec.documentMark, message + "; the entry's files fail with 'descriptor'")
    record.outcome = .failed
    record.failure = message
    let urlRef = text.append(spec.document)
    record.task = PlannedTask(
      session: record.session, entry: record.entry, line: 0, kind: .download, request: -1, nextSharing: -1,
      id: text.append(record.url), url: urlRef, to: .none)
  }

  /// Set by `expandLine` (and `add`) when the line being read has a problem, reported or not: the
  /// list's count of problem lines goes on past the ones it lists.
  var lineHadProblem = false

  static func countLines(_ path: String) throws(FileProblem) -> Int {
    var count = 0
    let reader = try LineReader(path: path)
    try reader.forEachLine { _ in count += 1 }
    return count
  }

  /// What the destination of a list line without a second column starts with, before the URL's
  /// file name: `resolveDestination` joins the session's `dest`, the entry's folder and the name,
  /// and that join is the same for every line. Nil when the lines need the general rules: the
  /// folder is invalid, or a name could hold a secret.
  func namePrefix(session: Session, folder: String) -> [UInt8]? {
    guard !redactor.hasSecrets else { return nil }
    var relative = ""
    if !folder.isEmpty {
      guard case .success(let value) = PathRules.normalize(folder + "/", allowAbsolute: false) else { return nil }
      relative = value
    }
    // `join(dest, join(relative, name))` for a name that is not empty.
    let prefix = canonical(PathRules.folderPrefix(session.dest) + PathRules.folderPrefix(relative))
    // A URL's user-info in a name is masked, and the name rejected: leave those to the general rules.
    if prefix.utf8.contains(UInt8(ascii: "@")) { return nil }
    return Array(prefix.utf8)
  }

  mutating func expandLine(
    _ bytes: UnsafeBufferPointer<UInt8>, line: Int, file: String, folder: String, session: Session,
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
    }
    let toMark = to == nil ? mark : SourceMark(file: file, line: line, column: second + 1 - bom)
    // An absolute second column stays absolute (and is rejected) rather than landing under `to:`;
    // a trailing `/` names a folder, as in the manifest.
    let relative =
      to.map { $0.hasPrefix("/") ? $0 : PathRules.join(folder, $0) } ?? (folder.isEmpty ? nil : folder + "/")
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
    let sha256 = expectation.digest.flatMap { $0.algorithm == .sha256 ? $0.hex : nil }
    let before = tasks.count
    let task = add(
      context: context, normalized: normalized, urlRef: urlRef, toRef: toRef, idRef: toRef, line: Int32(line),
      mark: mark, explicitID: false, quiet: !report, mirrors: mirrors, content: sha256)
    if let task, Int(task) == before, !expectation.isEmpty {
      tasks[Int(task)].expectation = Int32(expectations.count)
      expectations.append(expectation)
    }
    if let task, !after.isEmpty { afterRefs.append((task, after)) }
  }

  /// The columns of a list line after its URL: the destination (quoted with `"` when it holds
  /// spaces), then `sha256:HEX`, `sha512:HEX` and `size:N` in any order (aria2's input files give
  /// per-line options the same way); a line may give the columns without a destination. Nil after
  /// reporting (at the column) what is wrong.
  mutating func listColumns(
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
        if case .success(let normalized) = PathRules.normalize(item.text.isEmpty ? "." : item.text, allowAbsolute: true),
          normalized.isEmpty
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

  /// Adds mirrors to a request's sources: in order, after those it has, leaving out its own URL and
  /// any it has already (tasks sharing a request bring the union of their mirrors).
  mutating func addMirrors(_ mirrors: [NormalizedURL], to request: Int32) {
    for mirror in mirrors {
      var url = mirror.text
      url.withUTF8 { addMirror(UnsafeRawBufferPointer($0), to: request) }
    }
  }

  /// Adds one mirror (a normalized URL's bytes), unless the request has it already: O(1), a request
  /// with more than a few mirrors has them indexed by their bytes (40,000 `mirrors:` compared each
  /// with all before it took minutes).
  mutating func addMirror(_ url: UnsafeRawBufferPointer, to request: Int32) {
    let hash = TextArena.hash(url)
    if hasMirror(url, hash: hash, request: request) { return }
    // No copy of the request or its mirrors is alive here: the append does not copy them.
    requests[Int(request)].mirrors.append(text.append(url))
    let count = requests[Int(request)].mirrors.count
    if count > Self.unindexedMirrors {
      indexMirror(Int32(count - 1), hash: hash, of: request)
    }
  }

  /// Mirrors a request holds before they are indexed: a short list is searched.
  static let unindexedMirrors = 8

  /// Whether `url` is the request's URL or one of its mirrors.
  func hasMirror(_ url: UnsafeRawBufferPointer, hash: UInt64, request: Int32) -> Bool {
    let existing = requests[Int(request)]
    if text.equals(existing.url, url) { return true }
    if let index = mirrorIndex[request] {
      return index.find(hash: hash) { [text] in text.equals(existing.mirrors[Int($0)], url) } != nil
    }
    return existing.mirrors.contains { text.equals($0, url) }
  }

  /// Indexes mirror `position` of a request, and the ones before it when it is the first indexed.
  mutating func indexMirror(_ position: Int32, hash: UInt64, of request: Int32) {
    let mirrors = requests[Int(request)].mirrors
    let rehash = { [text] (index: Int32) in text.hash(mirrors[Int(index)]) }
    var table = mirrorIndex.removeValue(forKey: request) ?? IndexTable()
    if table.count == 0 {
      for index in 0..<position { table.insert(index, hash: rehash(index), rehash: rehash) }
    }
    table.insert(position, hash: hash, rehash: rehash)
    mirrorIndex[request] = table
  }

  /// The destination relative to the manifest's folder, or nil after reporting why there is none.
  /// `fromDocument`: the name came from a document (Metalink), so that a name it may not have leaves
  /// that file out, with a warning, instead of making the manifest invalid.
  mutating func resolveDestination(
    session: Session, to: String?, isFolder: Bool, url: NormalizedURL, mark: SourceMark, quiet: Bool = false,
    fromDocument: Bool = false
  ) -> String? {
    var relative = ""
    // Compared by bytes: a String compares NFC and NFD spellings as equal, two names on Linux.
    if let to, let lastTo, lastTo.text.utf8.elementsEqual(to.utf8) {
      relative = lastTo.normalized
    } else if let to {
      switch PathRules.normalize(to, allowAbsolute: false) {
      case .success(let value):
        relative = value
        lastTo = (to, value)
      case .failure(let problem):
        if !quiet { diagnostics.error(mark, "to '\(ShownText.escaped(to, limit: 200))' \(problem.message)") }
        return nil
      }
    }
    if to == nil || isFolder {
      guard let name = url.fileName, name != ".", name != "..", !name.utf8.contains(0x2F), !name.utf8.contains(0) else {
        if !quiet {
          diagnostics.error(
            mark, "cannot name the file after the URL (it has no usable last path segment); add 'to:' with a file name")
        }
        return nil
      }
      relative = PathRules.join(relative, name)
    }
    if relative.isEmpty {
      if !quiet {
        diagnostics.error(
          mark,
          "to '\(ShownText.escaped(to ?? "", limit: 200))' names the session's dest folder itself, not a file inside it"
        )
      }
      return nil
    }
    let destination = canonical(PathRules.join(session.dest, relative))
    if let why = reserved.problem(with: destination, in: manifest.absoluteDirectory) {
      if !quiet {
        // A name from a document is shown escaped (no control character reaches the output).
        let message = "the destination '\(ShownText.escaped(redactor.text(destination), limit: .max))' \(why)"
        if fromDocument {
          diagnostics.warning(mark, message + "; this file is left out")
        } else {
          diagnostics.error(mark, message)
        }
      }
      return nil
    }
    // File names appear in reports and the state folder, and on disk: none may hold a secret.
    let masked = redactor.text(destination)
    if masked != destination {
      if !quiet {
        let secret = "holds the value of a secret ${VAR} (one used in the URL, a header, a body or a form field)"
        let stored = "file names are kept in the state folder and reports, which never hold a secret"
        diagnostics.error(
          mark,
          to == nil || isFolder
            ? "the file would be named after the URL, as '\(masked)', which \(secret): \(stored); add 'to:' with a file name"
            : "the destination '\(masked)' \(secret): \(stored); choose a name without it (a variable also written in 'to:' or 'dest' is a path, not a secret)"
        )
      }
      return nil
    }
    return destination
  }

  /// Adds a task, creating or sharing its request. Returns the new task, or the earlier task an exact
  /// repeat merged into (so that the repeat's `after:` and priority still apply), or nil when it
  /// conflicts with an earlier task (reported unless `quiet`).
  mutating func add(
    context: EntryContext, normalized: NormalizedURL, urlRef: TextRef, toRef: TextRef, idRef: TextRef, line: Int32,
    mark: SourceMark, explicitID: Bool, quiet: Bool = false, mirrors: [NormalizedURL] = [], content: String? = nil,
    document: DocumentFile? = nil
  ) -> Int32? {
    var url = normalized.text
    var authority = normalized.authority
    return url.withUTF8 { url in
      authority.withUTF8 { authority in
        add(
          context: context, url: UnsafeRawBufferPointer(url), authority: UnsafeRawBufferPointer(authority),
          urlRef: urlRef, toRef: toRef, idRef: idRef, line: line, mark: mark, explicitID: explicitID, quiet: quiet,
          mirrors: mirrors, content: content, document: document)
      }
    }
  }

  /// `add` with the normalized URL and its authority (host and port) as UTF-8 bytes.
  mutating func add(
    context: EntryContext, url: UnsafeRawBufferPointer, authority: UnsafeRawBufferPointer, urlRef: TextRef,
    toRef: TextRef, idRef: TextRef, line: Int32, mark: SourceMark, explicitID: Bool, quiet: Bool = false,
    mirrors: [NormalizedURL] = [], content: String? = nil, document: DocumentFile? = nil
  ) -> Int32? {
    var hasher = context.prefix
    hasher.update(bufferPointer: url)
    let key = hasher.finalize().withUnsafeBytes { raw in
      RequestKey(
        high: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
        low: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
    }
    let taskIndex = Int32(tasks.count)
    var existingRequest = requestIndex.find(hash: key.low) { [requests] in requests[Int($0)].key == key }
    // Content identity: a download expecting the same SHA-256 as an earlier one is that request,
    // with this URL as one more source.
    let contentName = content.map { ContentName(sha256: $0, session: context.session, identity: context.identity) }
    var sameContent = false
    if existingRequest == nil, let contentName, let other = contentRequests[contentName] {
      existingRequest = other
      sameContent = true
    }

    // A destination (or, for data tasks without one, a URL id) names one task.
    if !toRef.isNone || !explicitID {
      let nameRef = toRef.isNone ? idRef : toRef
      // Hashed once for the lookup and the insertion.
      let nameHash = toRef.isNone ? 0 : text.hash(toRef)
      if let other = lookupDestination(nameRef, isDestination: !toRef.isNone, hash: nameHash) {
        let previous = tasks[Int(other)]
        let sameRequest = existingRequest != nil && previous.request == existingRequest
        // Both with default ids: a destination, or the URL of a data task without `to:` (only those are
        // in `namedIDs` before `checkIDs`).
        // (A default id under an absolute `dest` is the destination relative to it: `portableID`.)
        let previousDefault =
          previous.id == previous.to || (!previous.to.isNone && namedIDs[text.string(previous.id)] == other)
        let defaultIDs = !explicitID && (toRef.isNone || previousDefault)
        if sameRequest && defaultIDs && previous.kind == context.kind {
          merged += 1
          if context.priority < requests[Int(previous.request)].priority {
            requests[Int(previous.request)].priority = context.priority
          }
          if line == 0 {
            diagnostics.warning(
              mark,
              "this task repeats the task at \(self.mark(of: previous)) (same request, same destination); it runs once")
          }
          return other
        }
        // A document's file never makes the manifest invalid: it is left out (this one, else the
        // earlier one when that came from a document).
        if let document {
          newClashes[document] =
            "'\(text.string(nameRef))' is also the destination of the task at \(self.mark(of: previous))"
          return nil
        }
        if let earlier = documentFileOfTask[other] {
          newClashes[earlier] = "'\(text.string(nameRef))' is also the destination of the task at \(mark)"
          return nil
        }
        lineHadProblem = true
        if !quiet {
          let name = text.string(nameRef)
          if toRef.isNone {
            diagnostics.error(
              mark, "two tasks have the id '\(name)' (also at \(self.mark(of: previous))); give one of them an 'id:'")
          } else if sameRequest {
            diagnostics.error(
              mark,
              "'\(name)' is already written by the task at \(self.mark(of: previous)); one request writes each destination once"
            )
          } else {
            diagnostics.error(
              mark,
              "two different requests write '\(name)': this task and the one at \(self.mark(of: previous)); give one of them another 'to:'"
            )
          }
        }
        return nil
      }
      insertDestination(nameRef, task: taskIndex, isDestination: !toRef.isNone, hash: nameHash)
    }

    let requestNumber: Int32
    if let existingRequest {
      requestNumber = existingRequest
      let last = lastSharing[Int(existingRequest)]
      tasks[Int(last)].nextSharing = taskIndex
      lastSharing[Int(existingRequest)] = taskIndex
      requests[Int(existingRequest)].taskCount += 1
      if context.priority < requests[Int(existingRequest)].priority {
        requests[Int(existingRequest)].priority = context.priority
      }
      if sameContent { addMirror(url, to: existingRequest) }
      addMirrors(mirrors, to: existingRequest)
    } else {
      requestNumber = Int32(requests.count)
      requestIndex.insert(requestNumber, hash: key.low) { [requests] in requests[Int($0)].key.low }
      let host = internHost(authority)
      let requestURL = text.equals(urlRef, url) ? urlRef : text.append(url)
      requests.append(
        PlannedRequest(
          key: key, method: context.method, url: requestURL, host: host, session: context.session,
          priority: context.priority, firstTask: taskIndex, taskCount: 1, dependencies: [], shardKey: key))
      lastSharing.append(taskIndex)
      addMirrors(mirrors, to: requestNumber)
      if let contentName { contentRequests[contentName] = requestNumber }
    }
    let finalURL = urlRef.isNone ? requests[Int(requestNumber)].url : urlRef
    // A default id that an earlier task under an absolute `dest` took as its relative id: that task
    // keeps its destination as its id instead, so that no two tasks share one.
    if !explicitID, idRef == toRef, !toRef.isNone, !namedIDs.isEmpty {
      let id = text.string(toRef)
      if let other = namedIDs[id], tasks[Int(other)].id != tasks[Int(other)].to {
        tasks[Int(other)].id = tasks[Int(other)].to
        namedIDs[id] = nil
      }
    }
    tasks.append(
      PlannedTask(
        session: context.session, entry: context.entry, line: line, kind: context.kind, request: requestNumber,
        nextSharing: -1, id: explicitID || idRef != toRef ? idRef : portableID(toRef, session: context.session),
        url: finalURL, to: toRef))
    return taskIndex
  }

  /// The default id of a task whose destination is `toRef`: the destination itself when it is
  /// relative to the manifest's folder, and relative to the session's `dest` when that is absolute,
  /// so that the same manifest has the same ids on every machine (another `dest`, a CI workspace).
  /// The destination stays the id when another task has the relative one already (two sessions
  /// with absolute `dest`s and a file of one name).
  mutating func portableID(_ toRef: TextRef, session: Int32) -> TextRef {
    guard !toRef.isNone, let prefix = absoluteDestPrefix(session: session) else { return toRef }
    guard text.withBytes(toRef, { $0.count > prefix.count && $0.starts(with: prefix) }) else { return toRef }
    let bytes = text.withBytes(toRef) { Array($0.dropFirst(prefix.count)) }
    let id = String(decoding: bytes, as: UTF8.self)
    guard namedIDs[id] == nil, task(withDestination: id) == nil else { return toRef }
    let relative = bytes.withUnsafeBytes { text.append($0) }
    namedIDs[id] = Int32(tasks.count)
    return relative
  }

  /// A session's absolute `dest` with a final `/`, as bytes, in the form its destinations take
  /// (`canonical`: relative inside the manifest's folder); nil when the `dest` is written relative.
  mutating func absoluteDestPrefix(session: Int32) -> [UInt8]? {
    if destPrefixes == nil {
      destPrefixes = manifest.sessions.map { [self] session in
        session.dest.hasPrefix("/") ? Array(canonical(PathRules.folderPrefix(session.dest)).utf8) : nil
      }
    }
    return destPrefixes?[Int(session)] ?? nil
  }

  /// The manifest's folder with a final `/`, normalized (set when the plan starts).
  var manifestFolderPrefix = ""

  /// A destination in one form whatever way it was written: an absolute path inside the manifest's
  /// folder becomes relative to it, so that `dest: /srv/m/x` and `dest: x/` in a manifest in `/srv/m`
  /// are seen to name one file (two sessions wrote it, each with exit 0).
  func canonical(_ destination: String) -> String {
    guard destination.hasPrefix("/") else { return destination }
    let prefix = manifestFolderPrefix
    guard destination.hasPrefix(prefix) else { return destination }
    return String(destination.dropFirst(prefix.count))
  }

  mutating func internHost(_ authority: UnsafeRawBufferPointer) -> Int32 {
    // Consecutive requests mostly share their host: compare with the last one before making a
    // String to look up.
    if lastHost >= 0 {
      var last = hosts[Int(lastHost)]
      if last.withUTF8({ bytesEqual(UnsafeRawBufferPointer($0), authority) }) { return lastHost }
    }
    let name = String(decoding: authority, as: UTF8.self)
    if let index = hostIndex[name] {
      lastHost = index
      return index
    }
    let index = Int32(hosts.count)
    hosts.append(name)
    hostIndex[name] = index
    lastHost = index
    return index
  }

  /// `hash` is `text.hash(ref)` for a destination (unused for an id).
  func lookupDestination(_ ref: TextRef, isDestination: Bool, hash: UInt64) -> Int32? {
    if !isDestination { return namedIDs[text.string(ref)] }
    return destinations.find(hash: hash) { [text, tasks] in text.equals(tasks[Int($0)].to, ref) }
  }

  mutating func insertDestination(_ ref: TextRef, task: Int32, isDestination: Bool, hash: UInt64) {
    if !isDestination {
      namedIDs[text.string(ref)] = task
      return
    }
    destinations.insert(task, hash: hash) { [text, tasks] in text.hash(tasks[Int($0)].to) }
  }

  /// The task whose destination is `path`.
  /// `task(withDestination:)` of a destination's bytes, without a String.
  func task(withDestinationBytes path: UnsafeRawBufferPointer) -> Int32? {
    destinations.find(hash: TextArena.hash(path)) { [text, tasks] in text.equals(tasks[Int($0)].to, path) }
  }

  func task(withDestination path: String) -> Int32? {
    var path = path
    let hash = path.withUTF8 { TextArena.hash(UnsafeRawBufferPointer($0)) }
    return destinations.find(hash: hash) { [text, tasks] in text.equals(tasks[Int($0)].to, path) }
  }

  func mark(of task: PlannedTask) -> SourceMark {
    let entry = manifest.sessions[Int(task.session)].tasks[Int(task.entry)]
    switch entry {
    case .task(let spec): return spec.mark
    case .list(let spec):
      return SourceMark(
        file: FileAccess.resolve(spec.file, against: manifest.directory), line: Int(task.line), column: 1)
    case .metalink(let spec):
      return spec.mark
    }
  }

  // MARK: - Ids and after

  /// The task an id names: an explicit or URL id, else a destination used as a default id.
  func task(withID id: String) -> Int32? {
    if let task = namedIDs[id] { return task }
    if let task = task(withDestination: id), text.equals(tasks[Int(task)].id, id) { return task }
    // An absolute destination names its task still, as the id it was before ids under an absolute
    // `dest` became relative to it.
    if id.hasPrefix("/"), let task = task(withDestination: id) { return task }
    return nil
  }

  mutating func checkIDs() {
    for (task, mark) in explicitIDs {
      let id = text.string(tasks[Int(task)].id)
      if let other = self.task(withID: id), other != task {
        if let documentFile = documentFileOfTask[other] {
          newClashes[documentFile] = "'\(id)' is also the id of the task at \(mark)"
          namedIDs[id] = task
          continue
        }
        diagnostics.error(
          mark,
          "two tasks have the id '\(id)' (also at \(self.mark(of: tasks[Int(other)]))); ids must be unique"
        )
        continue
      }
      namedIDs[id] = task
    }
  }

  mutating func resolveAfter() {
    let smallPlan = tasks.count <= 10_000
    // A `list:` entry's `after:` belongs to every line: report (and look for a suggestion) once.
    var reported = Set<SourceMark>()
    var candidates: [String]?
    for (task, refs) in afterRefs {
      var resolved: [(task: Int32, ref: TaskReference)] = []
      for ref in refs {
        // A data task's URL id has its user-info masked: a reference may quote the URL as written.
        guard let target = self.task(withID: ref.id) ?? self.task(withID: redactor.url(ref.id)) else {
          // A document that failed may have listed the id: the task must not run as if it had
          // been listed and completed.
          if let failed = descriptors.first(where: { $0.outcome == .failed }) {
            let request = tasks[Int(task)].request
            if unresolvedAfter[request] == nil { unresolvedAfter[request] = (ref.id, failed.url) }
            continue
          }
          if partial || !reported.insert(ref.mark).inserted { continue }
          var hint = ""
          if smallPlan {
            let ids = candidates ?? tasks.map { text.string($0.id) }
            candidates = ids
            hint = Suggestions.hint(for: ref.id, in: ids)
          }
          diagnostics.error(ref.mark, "after: no task has the id '\(ref.id)'\(hint)")
          continue
        }
        if target == task {
          diagnostics.error(ref.mark, "a task cannot wait for itself")
          continue
        }
        resolved.append((target, ref))
      }
      resolvedAfter[task, default: []].append(contentsOf: resolved)
    }
    reportCycles()
    for (task, targets) in resolvedAfter {
      let request = tasks[Int(task)].request
      for target in targets {
        let dependency = tasks[Int(target.task)].request
        if dependency != request && !requests[Int(request)].dependencies.contains(dependency) {
          requests[Int(request)].dependencies.append(dependency)
        }
      }
    }
  }

  /// Reports each cycle of `after:` once, naming the ids around it.
  mutating func reportCycles() {
    enum Color { case visiting, done }
    var color: [Int32: Color] = [:]
    for start in resolvedAfter.keys.sorted() where color[start] == nil {
      var stack: [(task: Int32, next: Int)] = [(start, 0)]
      color[start] = .visiting
      while let top = stack.last {
        let edges = resolvedAfter[top.task] ?? []
        if top.next >= edges.count {
          color[top.task] = .done
          stack.removeLast()
          continue
        }
        stack[stack.count - 1].next += 1
        let edge = edges[top.next]
        switch color[edge.task] {
        case .visiting:
          guard let begin = stack.firstIndex(where: { $0.task == edge.task }) else { continue }
          let cycle = stack[begin...].map { text.string(tasks[Int($0.task)].id) }
          let path = (cycle + [cycle[0]]).joined(separator: " → ")
          diagnostics.error(edge.ref.mark, "cycle in after: \(path); remove one of these references")
        case .done:
          continue
        case nil:
          color[edge.task] = .visiting
          stack.append((edge.task, 0))
        }
      }
    }
  }

  /// A destination that is also a folder of another destination cannot be written.
  mutating func checkFolders() {
    // Each folder above a destination is looked up once, by its bytes (the NFC and NFD spellings of
    // a folder are two folders), and only its hash is kept: a list of deep paths kept every folder
    // of every path as a String (hundreds of MB for a few hundred lines).
    var seen = Set<Int>()
    var folders: [(folder: String, task: Int32)] = []
    var previousParent: [UInt8] = []
    for (index, task) in tasks.enumerated() where !task.to.isNone {
      text.withBytes(task.to) { bytes in
        guard var end = bytes.lastIndex(of: 0x2F) else { return }
        // Consecutive tasks usually share a folder: skip the set when this one repeats the last.
        if bytes.count > 0, end == previousParent.count,
          previousParent.withUnsafeBytes({ bytesEqual(UnsafeRawBufferPointer(rebasing: bytes.prefix(end)), $0) })
        {
          return
        }
        previousParent = Array(bytes.prefix(end))
        while end > 0 {
          let folder = UnsafeRawBufferPointer(rebasing: bytes.prefix(end))
          var hasher = Hasher()
          hasher.combine(bytes: folder)
          if !seen.insert(hasher.finalize()).inserted { break }
          if self.task(withDestinationBytes: folder) != nil {
            folders.append((String(decoding: folder, as: UTF8.self), Int32(index)))
          }
          guard let next = bytes.prefix(end).lastIndex(of: 0x2F) else { break }
          end = next
        }
      }
    }
    for (folder, child) in folders {
      if let owner = task(withDestination: folder) {
        // A document's file is left out instead (the later one when both come from documents).
        let documentFile = documentFileOfTask[max(owner, child)] ?? documentFileOfTask[min(owner, child)]
        if let documentFile {
          let other = documentFileOfTask[owner] == documentFile ? child : owner
          newClashes[documentFile] =
            documentFileOfTask[owner] == documentFile
            ? "'\(folder)' is a folder for the task at \(mark(of: tasks[Int(other)]))"
            : "'\(folder)' is a file of the task at \(mark(of: tasks[Int(other)])), not a folder"
          continue
        }
        diagnostics.error(
          mark(of: tasks[Int(owner)]),
          "'\(folder)' is a file here but a folder for the task at \(mark(of: tasks[Int(child)])); rename one of them")
      }
    }
  }

  // MARK: - Scheduling

  /// Kahn's algorithm over `after:`; among ready requests, higher priority first, then round-robin
  /// across hosts so that one host's thousand files do not starve another's ten.
  mutating func schedule() -> [Int32] {
    let count = requests.count
    var indegree = [Int32](repeating: 0, count: count)
    var dependents: [Int32: [Int32]] = [:]
    // By index rather than by element: each element would be a copy of the request.
    for index in requests.indices where !requests[index].dependencies.isEmpty {
      indegree[index] = Int32(requests[index].dependencies.count)
      for dependency in requests[index].dependencies { dependents[dependency, default: []].append(Int32(index)) }
    }
    var queues = [HostRoundRobin](repeating: HostRoundRobin(hostCount: hosts.count), count: 3)
    for index in requests.indices where indegree[index] == 0 {
      queues[requests[index].priority.rank].push(Int32(index), host: requests[index].host)
    }
    var order: [Int32] = []
    order.reserveCapacity(count)
    while true {
      guard let rank = queues.firstIndex(where: { !$0.isEmpty }), let next = queues[rank].pop() else { break }
      order.append(next)
      if dependents.isEmpty { continue }
      for dependent in dependents[next] ?? [] {
        indegree[Int(dependent)] -= 1
        if indegree[Int(dependent)] == 0 {
          let request = requests[Int(dependent)]
          queues[request.priority.rank].push(dependent, host: request.host)
        }
      }
    }
    if order.count < count, let stuck = indegree.firstIndex(where: { $0 > 0 }) {
      let task = tasks[Int(requests[stuck].firstTask)]
      diagnostics.error(
        mark(of: task),
        "after: requests wait for each other through tasks that share them (task '\(text.string(task.id))'); remove one of the references"
      )
    }
    return order
  }

  /// Requests joined by `after:` share a shard: the smallest key among those of them that wait for
  /// nothing decides it, so that adding a task `after:` existing ones never moves them.
  mutating func assignShardKeys() {
    guard requests.contains(where: { !$0.dependencies.isEmpty }) else { return }
    var parent = Array(0..<Int32(requests.count))
    func find(_ x: Int32) -> Int32 {
      var root = x
      while parent[Int(root)] != root { root = parent[Int(root)] }
      var node = x
      while parent[Int(node)] != root {
        let next = parent[Int(node)]
        parent[Int(node)] = root
        node = next
      }
      return root
    }
    for (index, request) in requests.enumerated() {
      for dependency in request.dependencies {
        let a = find(Int32(index))
        let b = find(dependency)
        if a != b { parent[Int(a)] = b }
      }
    }
    // Every group without a cycle has a request that waits for nothing; a cycle is an error anyway.
    var smallest: [Int32: (key: RequestKey, waits: Bool)] = [:]
    for index in requests.indices {
      let root = find(Int32(index))
      let candidate = (key: requests[index].key, waits: !requests[index].dependencies.isEmpty)
      if let current = smallest[root], current.waits == candidate.waits ? current.key <= candidate.key : !current.waits
      {
        continue
      }
      smallest[root] = candidate
    }
    for index in requests.indices {
      if let key = smallest[find(Int32(index))]?.key { requests[index].shardKey = key }
    }
  }
}

/// Ready requests of one priority: one FIFO per host, hosts served in turn.
private struct HostRoundRobin {
  /// Indexed by host (hosts are numbered densely from 0): no hashing per request.
  var perHost: [[Int32]]
  var heads: [Int]
  var rotation: [Int32] = []
  var rotationHead = 0

  init(hostCount: Int) {
    perHost = Array(repeating: [], count: hostCount)
    heads = Array(repeating: 0, count: hostCount)
  }

  var isEmpty: Bool { rotationHead >= rotation.count }

  mutating func push(_ request: Int32, host: Int32) {
    let queued = perHost[Int(host)].count - heads[Int(host)]
    perHost[Int(host)].append(request)
    if queued == 0 { rotation.append(host) }
  }

  mutating func pop() -> Int32? {
    guard rotationHead < rotation.count else { return nil }
    let host = Int(rotation[rotationHead])
    rotationHead += 1
    let head = heads[host]
    guard head < perHost[host].count else { return nil }
    let next = perHost[host][head]
    heads[host] = head + 1
    if head + 1 < perHost[host].count {
      rotation.append(Int32(host))
    } else {
      perHost[host] = []
      heads[host] = 0
    }
    if rotationHead > 4096 && rotationHead * 2 > rotation.count {
      rotation.removeFirst(rotationHead)
      rotationHead = 0
    }
    return next
  }
}

extension Session {
  /// What a session's connections trust, present and speak, when that is not the default: `tls:`
  /// (paths under `folder` relative to it, the key's password as an HMAC keyed with the key file's
  /// bytes, so that the state folder never holds a value to guess it from), `insecure:` and
  /// `network.http_version`. Requests and descriptors of sessions whose identities differ are
  /// never shared.
  func connectionIdentity(relativeTo folder: String) -> String? {
    guard insecure || !tls.isEmpty || network.httpVersion != .auto else { return nil }
    var parts = [insecure ? "insecure" : "", network.httpVersion.rawValue, tls.identity(relativeTo: folder)]
    if let password = tls.keyPassword, let keyFile = tls.clientKey ?? tls.clientCert,
      let key = try? FileAccess.readAll(keyFile)
    {
      let code = HMAC<SHA256>.authenticationCode(for: Array(password.utf8), using: SymmetricKey(data: key))
      parts.append("password:" + code.withUnsafeBytes { Array($0.prefix(16)) }.hexString)
    }
    return parts.joined(separator: "\u{1F}")
  }
}

/// A file of a `metalink:` entry's document: the entry and the name as the document gives it (by
/// its bytes: NFC and NFD spellings are two files).
struct DocumentFile: Hashable {
  var session: Int32
  var entry: Int32
  var name: [UInt8]
}
