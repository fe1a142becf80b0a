import BatchDLManifest
import BatchDLSupport
import BatchDLTransfer
import Crypto

/// A `metalink:` entry: each usable `<file>` of its document a download, the others left out as
/// failures of their own.
extension PlanBuilder {
  /// A `metalink:` entry: each `<file>` of its document that passed the reader's checks is a
  /// download at `dest/to/NAME`, its first source the task's URL and the others its mirrors, its
  /// `<size>` and strongest `<hash>` its expectation. Problems inside the document leave only the
  /// file concerned out and are warnings here (the manifest itself is valid); a local document that
  /// cannot be read as Metalink at all is an error. A document given by URL comes from
  /// `descriptorSet`: when it failed, the entry stands as one task that fails with `descriptor`.
  package mutating func expand(_ spec: MetalinkSpec, session: Session, sessionIndex: Int, entryIndex: Int) {
    let document: MetalinkDocument
    if spec.isURL {
      let masked = redactor.url(spec.document)
      let fetched =
        descriptorSet?.documents[DescriptorSet.key(of: spec.document, for: session, in: manifest)]
        ?? FetchedDocument(outcome: .missing)
      var record = PlannedDescriptor(
        session: Int32(sessionIndex), entry: Int32(entryIndex), url: masked, outcome: fetched.outcome,
        sha256: fetched.sha256 ?? fetched.body.map { SHA256.hash(data: $0).hexString })
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
      if fetched.outcome == .failed {
        // Upstream did not give it: the stored copy plans the files, and the run fails.
        let message = redactor.text("the Metalink document \(masked): \(fetched.problem ?? "cannot fetch it")")
        diagnostics.warning(spec.documentMark, message)
        failAsOneTask(&record, message, url: spec.document)
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
    guard let folder = entryFolder(spec.to, at: spec.toMark ?? spec.documentMark) else { return }
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
      if let size = file.size, let limit = spec.maxSize ?? session.maxSize, size > limit {
        // Nothing is fetched of a file whose document says it is too large.
        let message =
          "file '\(ShownText.escaped(file.name, limit: 200))' is left out: its <size> \(size) is larger than max_size (\(ByteSize.format(limit)), \(limit) bytes)"
        diagnostics.warning(file.mark, message)
        refuse(file.name, of: spec, session: sessionIndex, entry: entryIndex, at: file.mark, code: .tooLarge, message)
        continue
      }
      let warned = diagnostics.items.count
      guard
        let destination = resolveDestination(
          session: session, to: folder.appending(file.name).path, isFolder: false, url: first.normalized,
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
  package mutating func refuse(
    _ name: String?, of spec: MetalinkSpec, session: Int, entry: Int, at mark: SourceMark, code: FailureCode,
    _ message: String
  ) {
    let document = spec.isURL ? redactor.url(spec.document) : spec.document
    var id = document + "#" + (name.map { ShownText.escaped($0, limit: 200) } ?? "<file> at line \(mark.line)")
    if refusedIDs.contains(redactor.text(id)) { id += " (line \(mark.line))" }
    refuseListed(
      id: id, url: spec.document, session: session, entry: entry, code: code,
      message: "\(message) (the <file> at \(mark))")
  }

  /// Makes the entry of a document that failed one task that fails with `descriptor` in the run.
  package mutating func failDescriptor(_ record: inout PlannedDescriptor, spec: MetalinkSpec, because problem: String) {
    let message = redactor.text("the Metalink document \(record.url): \(problem)")
    diagnostics.warning(spec.documentMark, message + "; the entry's files fail with 'descriptor'")
    failAsOneTask(&record, message, url: spec.document)
  }
}

/// A file of a `metalink:` entry's document: the entry and the name as the document gives it (by
/// its bytes: NFC and NFD spellings are two files).
package struct DocumentFile: Hashable {
  package var session: Int32
  package var entry: Int32
  package var name: [UInt8]
}
