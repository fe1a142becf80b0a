import BatchDLManifest
import BatchDLSupport
import BatchDLTransfer

/// `checksums:`: which entry of which checksum file a download is checked with, or why it fails
/// before it is sent; and the order in which a mirrored checksum file is placed.
extension PlanBuilder {
  /// What the checksum files covering a download say about it.
  package enum ChecksumVerdict: Equatable {
    /// Not covered (no `checksums:`, a digest of its own, a checksum file or signature itself, or
    /// no copy of the file to read yet).
    case none
    /// Checked with this digest (the one preferred of those the files give) and with each of
    /// `others` (the other algorithms' entries). `byFileName`: the entry was a bare name matched
    /// by the file's name, not its path: it checks the file, but it may describe another file
    /// upstream, so it never makes the file the same content as another request (whose bytes
    /// would then be placed here).
    case digest(ExpectedDigest, others: [ExpectedDigest], byFileName: Bool)
    /// Fails before it is sent: `checksum-missing`, `signature` or `descriptor`.
    case fail(DocumentFailure)
    /// No entry names it and `unlisted: fetch`: fetched without an upstream digest.
    case unverified
    /// No entry names it and `unlisted: skip`: left out of the plan.
    case skip
  }

  /// The verdict for a download of `url` at `relative` (its destination relative to the session's
  /// `dest`) that `spec` covers (the entry's `checksums:`, else the session's). `ownDigest`: the
  /// task gives `sha256:` or `sha512:` itself, which the checksum files then do not replace.
  package mutating func checksumVerdict(
    _ spec: ChecksumSpec?, url: NormalizedURL, relative: String, session: Session, sessionIndex: Int,
    entryIndex: Int, ownDigest: Bool = false
  ) -> ChecksumVerdict {
    lastCoverage = []
    lastSignature = nil
    guard let spec else { return .none }
    if spec.sidecar {
      return sidecarVerdict(
        spec, url: url, session: session, sessionIndex: sessionIndex, entryIndex: entryIndex, ownDigest: ownDigest)
    }
    for source in spec.files {
      if let signature = source.signature, source.signatureIsURL {
        lastCoverage.append(documentKey(signature))
        noteFinalURL(of: signature, session: session)
      }
      if source.isURL { noteFinalURL(of: source.location, session: session) }
    }
    let documents = spec.files.map { source in
      let key = checksumKey(source, keyring: spec.keyring, session: session, sessionIndex: sessionIndex)
      return (key, descriptorSet?.checksums[key])
    }
    for ((key, document), source) in zip(documents, spec.files) {
      if let document { record(document, key: key, source: source, session: sessionIndex, entry: entryIndex) }
    }
    // The checksum files and their signatures are not themselves checked against an entry (a
    // download of one is pinned to the bytes the plan read: `orderPublishing`); a file with a
    // digest of its own is not matched either, but it is one of the files covered by its name.
    let matched = !ownDigest && !isDocument(url, of: spec)
    var matches: [ChecksumMatch] = []
    for (key, document) in documents {
      guard let document else { continue }
      if let failure = document.failure {
        if matched { return .fail(failure) }
        continue
      }
      guard let file = document.file else { continue }
      let covered = coveredFile(url: url, relative: relative, document: document, session: sessionIndex)
      if matched {
        matches.append(
          checksumMatchers[key, default: ChecksumMatcher(file: file, several: knownSeveral[key] ?? [])].match(covered))
        if let url = document.url { lastCoverage.append(documentKey(url)) }
      } else {
        checksumMatchers[key, default: ChecksumMatcher(file: file, several: knownSeveral[key] ?? [])].cover(covered)
      }
    }
    guard let combined = ChecksumMatch.combine(matches) else { return .none }
    if let digest = combined.digest {
      if !digest.algorithm.isStrong, let entry = combined.entries.first,
        weakWarned.insert(entry.mark.file).inserted
      {
        diagnostics.warning(
          entry.mark,
          "'\(ShownText.escaped(entry.name, limit: 200))' is checked with \(digest.algorithm.rawValue), which is weak (collisions can be made): ask upstream for SHA-256 or SHA-512 sums; this warning is given once per checksum file"
        )
      }
      return .digest(
        digest, others: combined.entries.dropFirst().map(\.digest), byFileName: combined.rule == .fileName)
    }
    let covering = documents.compactMap(\.1?.display).joined(separator: ", ")
    let unnamed: Bool
    switch combined {
    case .none, .ambiguous: unnamed = true
    default: unnamed = false
    }
    let hint =
      unnamed
      ? unlistedHint(spec, sessionIndex: sessionIndex, entryIndex: entryIndex) : ownDigestHint(sessionIndex, entryIndex)
    let failure = DocumentFailure(
      code: .checksumMissing,
      message: redactor.text(
        "no usable entry in the checksum file\(documents.count == 1 ? "" : "s") \(covering): \(combined.message); \(hint)"
      ))
    return unnamed ? unlisted(spec, failure) : .fail(failure)
  }

  /// A download of `url` at `relative` as the checksum file `document` covers it: its path
  /// relative to the file's folder (see `ChecksumMatchRule.path`), its file name, and what makes it
  /// one file (its URL; for a local checksum file, its session and destination).
  private mutating func coveredFile(
    url: NormalizedURL, relative: String, document: ChecksumDocument, session: Int
  ) -> CoveredFile {
    let path: String?
    if let checksumURL = document.url {
      path = folderPrefix(of: checksumURL).flatMap { ChecksumFile.relativePath(ofNormalized: url, folderPrefix: $0) }
    } else {
      path = relative
    }
    let name: String
    if let path, let last = path.utf8.split(separator: 0x2F).last {
      name = String(decoding: Array(last), as: UTF8.self)
    } else {
      name = String(decoding: Hex.percentDecoded(Array((url.fileName ?? "").utf8)), as: UTF8.self)
    }
    let identity = document.url == nil ? "\(session)\n\(relative)" : url.text
    return CoveredFile(path: path, fileName: name, identity: identity)
  }

  /// The bare names of each checksum file (by key) that the plan matched by file name while one
  /// covered file had them, and that several have now: the plan must be made again, knowing them.
  package var staleChecksumNames: [String: Set<Int32>] {
    var stale: [String: Set<Int32>] = [:]
    for (key, matcher) in checksumMatchers where !matcher.staleNames.isEmpty {
      stale[key] = matcher.namesCoveredSeveralTimes
    }
    return stale
  }

  /// Applies `verdict` to the task just added (`task`, new when its index is `before`): the digest
  /// becomes its expectation (with `size`), a failure its request's.
  package mutating func apply(_ verdict: ChecksumVerdict, to task: Int32?, before: Int, size: Int64? = nil) {
    guard let task else { return }
    if verdict != .none {
      for document in lastCoverage { coveredByDocument[document, default: []].append(tasks[Int(task)].request) }
    }
    switch verdict {
    case .none, .skip:
      break
    case .unverified:
      unverifiedRequests.insert(tasks[Int(task)].request)
      if let signature = lastSignature, Int(task) == before {
        var expectation = TaskExpectation(size: size)
        expectation.signature = signature
        tasks[Int(task)].expectation = Int32(expectations.count)
        expectations.append(expectation)
      }
    case .digest(let digest, let others, _):
      guard Int(task) == before else { return }
      tasks[Int(task)].expectation = Int32(expectations.count)
      var expectation = TaskExpectation(size: size, digest: digest)
      expectation.otherDigests = others
      expectation.signature = lastSignature
      expectations.append(expectation)
    case .fail(let failure):
      let request = tasks[Int(task)].request
      if refusedRequests[request] == nil { refusedRequests[request] = failure }
    }
  }

  /// The digest of a verdict that joins a download to others of the same content (SHA-256 only).
  package func content(of verdict: ChecksumVerdict) -> String? {
    if case .digest(let digest, _, false) = verdict, digest.algorithm == .sha256 { return digest.hex }
    return nil
  }

  /// What a verdict adds to a request's identity: a digest other than SHA-256 (which the state
  /// compares itself), and the other algorithms' digests, so that a changed checksum entry fetches
  /// the file again.
  /// A failure is part of it too: a request refused for one session's checksum files is never
  /// the request of another session whose own files say otherwise.
  package func identitySalt(of verdict: ChecksumVerdict) -> String? {
    if case .fail(let failure) = verdict { return "refused:\(failure.code.rawValue)\n" }
    guard case .digest(let digest, let others, _) = verdict else { return nil }
    let salted = (digest.algorithm == .sha256 ? [] : [digest]) + others
    if salted.isEmpty { return nil }
    return salted.map { "expected:\($0.algorithm.rawValue):\($0.hex)\n" }.joined()
  }

  /// Whether `url` is one of `spec`'s checksum files or signatures given by URL.
  private mutating func isDocument(_ url: NormalizedURL, of spec: ChecksumSpec) -> Bool {
    for source in spec.files {
      if source.isURL, documentKey(source.location) == url.text { return true }
      if let signature = source.signature, source.signatureIsURL, documentKey(signature) == url.text { return true }
    }
    return false
  }

  /// A document's URL in normal form (as a task's), or the text itself when it is none; each
  /// normalized once per plan (every covered task asks).
  /// Notes where the document at `location` was served after redirects, so that a download of
  /// that URL is known as the document's (`PublishOrder`): published after the files it covers,
  /// and pinned to the bytes read.
  package mutating func noteFinalURL(of location: String, session: Session) {
    let key = DescriptorSet.key(of: location, for: session, in: manifest)
    guard let final = descriptorSet?.documents[key]?.finalURL else { return }
    let finalKey = documentKey(final)
    let written = documentKey(location)
    if finalKey != written, documentAliases[finalKey] == nil { documentAliases[finalKey] = written }
  }

  package mutating func documentKey(_ location: String) -> String {
    if let known = documentKeys[location] { return known }
    let key = (try? normalizer.normalize(location).get())?.text ?? location
    documentKeys[location] = key
    return key
  }

  /// The folder a checksum file given by URL names its files relative to (`ChecksumFile.folderPrefix`),
  /// made once per plan.
  private mutating func folderPrefix(of checksumURL: String) -> String? {
    if let known = folderPrefixes[checksumURL] { return known }
    let prefix = (try? normalizer.normalize(checksumURL).get()).flatMap { ChecksumFile.folderPrefix(ofNormalized: $0) }
    folderPrefixes[checksumURL] = .some(prefix)
    return prefix
  }

  /// `DescriptorSet.key(of:keyring:for:in:)`, made once per plan for each session and file.
  private mutating func checksumKey(
    _ source: ChecksumSource, keyring: String?, session: Session, sessionIndex: Int
  ) -> String {
    let memo = "\(sessionIndex)\n\(source.location)\n\(source.signature ?? "")\n\(keyring ?? "")"
    if let known = checksumKeys[memo] { return known }
    let key = DescriptorSet.key(of: source, keyring: keyring, for: session, in: manifest)
    checksumKeys[memo] = key
    return key
  }

  /// Lists a checksum file given by URL (and its signature) among the plan's descriptors, once,
  /// and notes what a download of either must be (`documentPins`).
  /// Records the checksum files (and signatures) the manifest names that no planned file made
  /// the plan read (an empty list, a listing with nothing selected): a night on which one could
  /// not be fetched or checked is still not a success.
  package mutating func recordUnusedChecksumFiles() {
    for (sessionIndex, session) in manifest.sessions.enumerated() {
      for (entryIndex, entry) in session.tasks.enumerated() {
        guard let spec = entry.checksums ?? session.checksums else { continue }
        for source in spec.files where source.isURL {
          let key = checksumKey(source, keyring: spec.keyring, session: session, sessionIndex: sessionIndex)
          guard !recordedDocuments.contains(key), let document = descriptorSet?.checksums[key] else { continue }
          record(document, key: key, source: source, session: sessionIndex, entry: entryIndex)
        }
      }
    }
  }

  private mutating func record(
    _ document: ChecksumDocument, key: String, source: ChecksumSource, session: Int, entry: Int
  ) {
    guard recordedDocuments.insert(key).inserted else { return }
    // What the checksum file gets wrong (a broken line leaves only its name without an entry):
    // warnings at its lines, as many as the reader lists.
    for diagnostic in document.file?.diagnostics ?? [] {
      diagnostics.warning(diagnostic.mark, diagnostic.message)
    }
    guard document.url != nil else { return }
    if let problem = document.problem, document.failure == nil {
      diagnostics.warning(
        manifest.sessions[session].tasks.indices.contains(entry)
          ? manifest.sessions[session].tasks[entry].mark : manifest.sessions[session].mark,
        "the checksum file \(document.display): \(problem)")
    }
    if document.outcome == .missing && document.failure == nil {
      partial = true
      diagnostics.warning(
        manifest.sessions[session].mark,
        "no stored copy of the checksum file \(document.display): the files it covers are not checked in this plan; 'batchdl plan' (without --offline) or 'batchdl run' fetches it"
      )
      return
    }
    // A download of the checksum file or its signature (publish order) must be the very bytes
    // the plan read; when the document failed, it fails as the files the document covers do.
    let failed = document.failure.map { ChecksumVerdict.fail($0) }
    func pin(_ sha256: String?) -> ChecksumVerdict {
      failed ?? sha256.map { .digest(ExpectedDigest(algorithm: .sha256, hex: $0), others: [], byFileName: false) }
        ?? .none
    }
    pinPublished(documentKey(source.location), pin(document.sha256))
    if let signature = source.signature, source.signatureIsURL {
      pinPublished(documentKey(signature), pin(document.signature?.sha256))
    }
    if let signature = document.signature {
      var planned = PlannedDescriptor(
        session: Int32(session), entry: Int32(entry), url: signature.url, outcome: signature.outcome,
        sha256: signature.sha256)
      if signature.outcome == .failed, document.failure == nil {
        failAsOneTask(&planned, "the signature \(signature.url): cannot fetch it")
      }
      descriptors.append(planned)
    }
    var planned = PlannedDescriptor(
      session: Int32(session), entry: Int32(entry), url: document.display,
      outcome: document.failure?.code == .descriptor ? .failed : document.outcome, sha256: document.sha256)
    if let failure = document.failure {
      planned.failure = failure.message
      diagnostics.warning(
        manifest.sessions[session].mark, failure.message + "; the files it covers fail with '\(failure.code)'")
    } else if document.outcome == .failed {
      // Upstream did not give it: the stored copy checks the files (warned above), the run fails.
      failAsOneTask(&planned, "the checksum file \(document.display): \(document.problem ?? "cannot fetch it")")
    }
    descriptors.append(planned)
  }
}
