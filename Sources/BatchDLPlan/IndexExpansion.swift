import BatchDLManifest
import BatchDLSupport
import BatchDLTransfer

/// An `index:` entry: each file its listing shows (and its filter selects) a download at
/// `dest/to/PATH`, PATH relative to the index URL.
extension PlanBuilder {
  /// Expands an `index:` entry from its crawl (`descriptorSet`). A page that could not be fetched or
  /// read stands in the run as one task that fails with `descriptor` (the listing is incomplete,
  /// which also keeps the session from pruning); the files the other pages list are planned all the
  /// same. A file's listed size and date are part of its request's identity: when they change, the
  /// file is fetched again.
  package mutating func expand(_ spec: IndexSpec, session: Session, sessionIndex: Int, entryIndex: Int) {
    let key = DescriptorSet.key(of: spec, for: session, in: manifest)
    let masked = redactor.url(spec.url)
    guard let crawl = descriptorSet?.listings[key], let first = crawl.pages.first, first.outcome != .missing else {
      partial = true
      diagnostics.warning(
        spec.urlMark,
        "no stored copy of the listing \(masked): its files are not listed; 'batchdl plan' (without --offline) or 'batchdl run' fetches it"
      )
      return
    }
    // Why the plan lacks files this entry's listing would give (a page that failed or was cut
    // short, a file left out): its checksum files are then not published (`blockedDocuments`).
    var lacking: String?
    for (page, folder) in zip(crawl.pages, crawl.folders) {
      // A mirrored page is the page that was crawled: its download is pinned to these bytes.
      if folder.listing != nil, let sha256 = page.sha256 {
        pinPublished(
          documentKey(folder.url),
          .digest(ExpectedDigest(algorithm: .sha256, hex: sha256), others: [], byFileName: false))
      }
      var record = PlannedDescriptor(
        session: Int32(sessionIndex), entry: Int32(entryIndex), url: page.url, outcome: page.outcome,
        sha256: page.sha256)
      if folder.listing == nil {
        let message = redactor.text("the listing \(page.url): \(page.failure ?? "cannot fetch it")")
        diagnostics.warning(spec.urlMark, message + "; the files under it fail with 'descriptor'")
        failAsOneTask(&record, message)
        lacking = lacking ?? "the listing \(page.url) failed"
      } else if let listing = folder.listing, !listing.isComplete {
        // A page a limit cut short (its entries, its links): the files it lists run, but those
        // past the cut are missing from the plan, not gone upstream. The page fails as one task,
        // as one that cannot be read does, which also keeps the session from pruning them.
        let cut = listing.diagnostics.last { $0.severity == .error }.map { "\($0.mark): \($0.message)" }
        let message = redactor.text("the listing \(page.url) is incomplete: \(cut ?? "a limit cut it short")")
        diagnostics.warning(spec.urlMark, message + "; the files it lists run, and it fails with 'descriptor'")
        failAsOneTask(&record, message)
        lacking = lacking ?? "the listing \(page.url) is incomplete"
      } else if page.outcome == .failed {
        // Upstream did not give the page: its stored copy plans the files it lists, which stay as
        // they were; the page fails as one task (the run fails, the session does not prune).
        let message = redactor.text("the listing \(page.url): \(page.failure ?? "cannot fetch it")")
        diagnostics.warning(spec.urlMark, message)
        failAsOneTask(&record, message)
        lacking = lacking ?? "the listing \(page.url) failed"
      } else if let problem = page.failure {
        diagnostics.warning(spec.urlMark, redactor.text("the listing \(page.url): \(problem)"))
      }
      descriptors.append(record)
    }
    if let problem = crawl.limitProblem {
      let message = redactor.text("the listing \(masked): \(problem)")
      diagnostics.warning(spec.urlMark, message)
      var record = PlannedDescriptor(
        session: Int32(sessionIndex), entry: Int32(entryIndex), url: masked, outcome: .failed, sha256: nil)
      failAsOneTask(&record, message, id: masked + "#limit")
      descriptors.append(record)
      lacking = lacking ?? "the listing \(masked) is incomplete"
    }
    // Names a page lists that cannot be names: left out, each failing as a task of its own.
    for folder in crawl.folders {
      guard let listing = folder.listing else { continue }
      for item in listing.leftOut {
        refuseListed(
          id: redactor.url(folder.url) + "#" + ShownText.escaped(item.name, limit: 200), url: folder.url,
          session: sessionIndex, entry: entryIndex, code: .unsafePath, message: "\(item.message) (at \(item.mark))")
      }
    }
    let refusedBefore = refusedFiles.count
    defer {
      if refusedFiles.count > refusedBefore {
        lacking = lacking ?? "the listed file \(text.string(refusedFiles[refusedBefore].task.id)) was left out"
      }
      if let lacking { blockPublication(of: spec.checksums ?? session.checksums, because: lacking) }
    }
    guard let folder = entryFolder(spec.to, at: spec.toMark ?? spec.urlMark) else { return }
    let context = context(
      session: session, sessionIndex: sessionIndex, entryIndex: entryIndex, kind: .download, method: "GET",
      headers: spec.headers, body: "", priority: spec.priority)
    let indexKey = documentKey(spec.url)
    let files = DirectoryIndex.selectedFiles(
      crawl.folders, filter: DirectoryIndex.Filter(include: spec.include, exclude: spec.exclude))
    for file in files {
      let normalized: NormalizedURL
      switch normalizer.normalize(file.entry.url) {
      case .success(let value): normalized = value
      case .failure(let problem):
        diagnostics.warning(file.entry.mark, "the listed file is left out: \(problem.description)")
        continue
      }
      // A name that clashed with another task's destination (or folder) in an earlier pass of
      // the plan is left out: a listing never makes the manifest invalid.
      let documentFile = DocumentFile(
        session: Int32(sessionIndex), entry: Int32(entryIndex), name: Array(file.path.utf8))
      if let clash = clashingFiles[documentFile] {
        let message = "the listed file '\(ShownText.escaped(file.path, limit: 200))' is left out: \(clash)"
        diagnostics.warning(file.entry.mark, message)
        refuseListed(
          id: masked + "#" + ShownText.escaped(file.path, limit: 200), url: file.entry.url, session: sessionIndex,
          entry: entryIndex, code: .conflict, message: message)
        continue
      }
      if let listed = file.entry.size, listed.isExact, let limit = spec.maxSize ?? session.maxSize, listed.bytes > limit
      {
        // Nothing is fetched of a file the listing shows, to the byte, to be too large.
        let message =
          "the listed file '\(ShownText.escaped(file.path, limit: 200))' is left out: its size \(listed.bytes) is larger than max_size (\(ByteSize.format(limit)), \(limit) bytes)"
        diagnostics.warning(file.entry.mark, message)
        refuseListed(
          id: masked + "#" + ShownText.escaped(file.path, limit: 200), url: file.entry.url, session: sessionIndex,
          entry: entryIndex, code: .tooLarge, message: message)
        continue
      }
      let warned = diagnostics.items.count
      guard
        let destination = resolveDestination(
          session: session, to: folder.appending(file.path).path, isFolder: false, url: normalized,
          mark: file.entry.mark, fromDocument: true)
      else {
        let why = diagnostics.items.dropFirst(warned).first?.message ?? "its destination is refused"
        refuseListed(
          id: masked + "#" + ShownText.escaped(file.path, limit: 200), url: file.entry.url, session: sessionIndex,
          entry: entryIndex, code: .unsafePath, message: why)
        continue
      }
      let verdict = checksumVerdict(
        spec.checksums ?? session.checksums, url: normalized, relative: lastRelative, session: session,
        sessionIndex: sessionIndex, entryIndex: entryIndex)
      if verdict == .skip { continue }
      var salted = context
      let fingerprint = file.entry.fingerprint
      if !fingerprint.isEmpty { salted.prefix.update(data: Array("listed:\(fingerprint)\n".utf8)) }
      if let salt = identitySalt(of: verdict) { salted.prefix.update(data: Array(salt.utf8)) }
      let toRef = text.append(destination)
      let before = tasks.count
      let task = add(
        context: salted, normalized: normalized, urlRef: text.append(file.entry.url), toRef: toRef, idRef: toRef,
        line: 0, mark: file.entry.mark, explicitID: false, content: content(of: verdict), document: documentFile)
      apply(verdict, to: task, before: before)
      guard let task else { continue }
      if let listed = file.entry.size, listedSizes[tasks[Int(task)].request] == nil {
        listedSizes[tasks[Int(task)].request] = ListedFileSize(bytes: listed.bytes, isExact: listed.isExact)
      }
      documentFileOfTask[task] = documentFile
      coveredByDocument[indexKey, default: []].append(tasks[Int(task)].request)
      if !spec.after.isEmpty { afterRefs.append((task, spec.after)) }
    }
    if files.isEmpty && crawl.folders.allSatisfy({ $0.listing != nil }) {
      diagnostics.warning(spec.urlMark, "the listing \(masked) shows no file that include:/exclude: select")
    }
  }

  /// Makes a document's record (a listing page, a Metalink document) fail in the run as one task
  /// with `descriptor` and `message` (masked); its id and URL are the record's unless given.
  package mutating func failAsOneTask(
    _ record: inout PlannedDescriptor, _ message: String, id: String? = nil, url: String? = nil
  ) {
    record.outcome = .failed
    record.failure = message
    record.task = PlannedTask(
      session: record.session, entry: record.entry, line: 0, kind: .download, request: -1, nextSharing: -1,
      id: text.append(id ?? record.url), url: text.append(url ?? record.url), to: .none)
  }

  /// Records a file a document names that the plan leaves out: it fails in the run with `code`, as a
  /// task of its own with id `id` (the line's mark added when that id is taken).
  package mutating func refuseListed(
    id: String, url: String, session: Int, entry: Int, code: FailureCode, message: String
  ) {
    // The id is a document's name: it may hold a secret's value (reports never do).
    var id = redactor.text(id)
    var number = 2
    while refusedIDs.contains(id) {
      id = id + " (\(number))"
      number += 1
    }
    refusedIDs.insert(id)
    refusedFiles.append(
      RefusedFile(
        task: PlannedTask(
          session: Int32(session), entry: Int32(entry), line: 0, kind: .download, request: -1, nextSharing: -1,
          id: text.append(id), url: text.append(redactor.url(url)), to: .none),
        code: code, message: redactor.text(message)))
  }
}
