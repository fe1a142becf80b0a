import BatchDLManifest
import BatchDLTransfer

/// Publication is manifest-wide: a download that mirrors a document the plan read (a checksum
/// file, its signature, an index page), in whatever session, is placed after every file the
/// document covers, in whatever session, and only with the bytes the plan read.
extension PlanBuilder {
  /// Notes what a download of the document at `url` (normalized) must be. The first reading
  /// stands: every session that reads the same URL reads the same copy, as one fetch serves them.
  package mutating func pinPublished(_ url: String, _ pin: ChecksumVerdict) {
    if documentPins[url] == nil { documentPins[url] = pin }
  }

  /// Notes that the checksum files (and signatures) of `spec` cover files the plan lacks (a listing
  /// page failed, a listed file was left out): a download of one of them is not published this
  /// run, since it would name files the mirror does not hold; the copy in place stays.
  package mutating func blockPublication(of spec: ChecksumSpec?, because why: String) {
    guard let spec else { return }
    for source in spec.files {
      if source.isURL, blockedDocuments[documentKey(source.location)] == nil {
        blockedDocuments[documentKey(source.location)] = why
      }
      if let signature = source.signature, source.signatureIsURL, blockedDocuments[documentKey(signature)] == nil {
        blockedDocuments[documentKey(signature)] = why
      }
    }
  }

  /// Publish order: a download whose URL is a document that covers other downloads (of any
  /// session) waits for all of them, so that it is placed last; it must also be the very bytes the
  /// plan read (the descriptor's SHA-256), and fails as the files it covers do when the document
  /// failed (a bad signature publishes no checksum file).
  package mutating func orderPublishing() {
    guard !coveredByDocument.isEmpty || !documentPins.isEmpty || !blockedDocuments.isEmpty else { return }
    for index in tasks.indices where tasks[index].kind == .download {
      let request = tasks[index].request
      var url = text.string(requests[Int(request)].url)
      // A download of the URL a document was served from after a redirect is that document's.
      if documentPins[url] == nil, coveredByDocument[url] == nil, let written = documentAliases[url] { url = written }
      if let pin = documentPins[url] { pinDocument(index, pin) }
      if let why = blockedDocuments[url], refusedRequests[request] == nil {
        refusedRequests[request] = DocumentFailure(
          code: .dependency,
          message: "not published: it covers files this run could not include (\(why)); the copy in place stays")
      }
      guard let waited = coveredByDocument[url] else { continue }
      var dependencies = Set(requests[Int(request)].dependencies)
      for other in waited where other != request && Int(other) < requests.count {
        if dependencies.insert(other).inserted {
          requests[Int(request)].dependencies.append(other)
          publishWaits[request, default: []].insert(other)
        }
      }
    }
  }

  /// Applies a document's pin to the download of it at `index`, unless the task gives a digest
  /// of its own (`sha256:`, `sha512:`, a list line's column).
  private mutating func pinDocument(_ index: Int, _ pin: ChecksumVerdict) {
    let task = tasks[index]
    guard task.expectation < 0 else { return }
    var size: Int64?
    let entries = manifest.sessions[Int(task.session)].tasks
    if entries.indices.contains(Int(task.entry)), case .task(let spec) = entries[Int(task.entry)] {
      if spec.sha256 != nil || spec.sha512 != nil { return }
      size = spec.size
    }
    switch pin {
    case .none, .unverified, .skip:
      break
    case .digest(let digest, _, _):
      tasks[index].expectation = Int32(expectations.count)
      expectations.append(TaskExpectation(size: size, digest: digest))
    case .fail(let failure):
      if refusedRequests[task.request] == nil { refusedRequests[task.request] = failure }
    }
  }
}

/// A task `after:` the mirrored document that covers it: the two would wait for each other.
extension PlanBuilder {
  /// Reports, at the `after:` reference, a covered download that waits for the download of its
  /// own checksum file (or signature, or the index page that lists it): publish order places that
  /// one only after the files it covers. Decided from the manifest alone, so that `validate`
  /// (with or without stored copies), `plan` and `run` all say so, in the same words.
  package mutating func checkPublishCycles() {
    for task in resolvedAfter.keys.sorted() {
      let dependent = tasks[Int(task)]
      guard dependent.kind == .download else { continue }
      let session = manifest.sessions[Int(dependent.session)]
      guard session.tasks.indices.contains(Int(dependent.entry)) else { continue }
      let entry = session.tasks[Int(dependent.entry)]
      var documents: [String: String] = [:]
      var ownDigest = false
      if case .task(let spec) = entry { ownDigest = spec.sha256 != nil || spec.sha512 != nil }
      if !ownDigest, let spec = entry.checksums ?? session.checksums {
        for source in spec.files {
          if source.isURL { documents[documentKey(source.location)] = "its checksum file" }
          if let signature = source.signature, source.signatureIsURL {
            documents[documentKey(signature)] = "the signature of its checksum file"
          }
        }
      }
      if case .index(let spec) = entry { documents[documentKey(spec.url)] = "the index page that lists it" }
      guard !documents.isEmpty else { continue }
      for target in resolvedAfter[task] ?? [] {
        let other = tasks[Int(target.task)]
        guard other.kind == .download, let what = documents[text.string(requests[Int(other.request)].url)],
          other.request != dependent.request
        else { continue }
        diagnostics.error(
          target.ref.mark,
          "after: '\(target.ref.id)' is the download of \(what), which publish order places only after the files it covers, this task among them: the two would wait for each other; remove this after:, or leave the file out of checksums:"
        )
      }
    }
  }
}
