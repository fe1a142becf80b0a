import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
import CCurl
import Crypto
import Foundation

/// Whether commands fetch descriptors before planning (`run`, `plan`) or read the stored copies
/// only (`validate`, `plan --offline`, and the commands that only read state).
public enum DescriptorMode: Sendable {
  case fetch
  case stored
}

/// Fetches the documents a manifest's entries depend on, before planning: Metalink documents and
/// checksum files (and their signatures) given by URL, and the folder pages of `index:` entries,
/// level by level. One bounded GET each (a conditional one when the state folder holds an earlier
/// copy), by the transfer engine. Copies are kept in `StateFolder.descriptors`, written
/// atomically; their names and metadata hold the URL with user-info and secrets masked, never a
/// secret. Checksum files are then read (local ones from the manifest's folder), their signatures
/// checked with gpgv when a keyring is given, and parsed.
public enum Descriptors {
  /// The largest Metalink document fetched: what `Metalink` reads.
  public static let maxBytes = Metalink.maxBytes
  /// The longest `ETag` or `Last-Modified` kept with a copy (real ones are well under 100 bytes).
  static let maxValidatorBytes = 8 << 10

  /// Whether `manifest` has entries that need documents before planning.
  public static func needed(by manifest: Manifest) -> Bool {
    manifest.sessions.contains { session in
      session.checksums != nil
        || session.tasks.contains { entry in
          switch entry {
          case .metalink(let spec): return spec.isURL
          case .index, .apt: return true
          case .task, .list: return entry.checksums != nil
          }
        }
    }
  }

  /// The documents `manifest` needs, fetched or read from `state`. `fetching`: the sessions whose
  /// documents `.fetch` fetches (nil: every session); the others' are read from `state` (a
  /// background session's worker fetches its own only).
  public static func prepare(
    _ manifest: Manifest, state: StateFolder, mode: DescriptorMode, fetching: Set<String>? = nil
  ) -> DescriptorSet {
    var fetcher = DocumentFetcher(manifest: manifest, state: state, mode: mode)
    fetcher.fetching = fetching
    var set = DescriptorSet()
    // Metalink documents, checksum files and signatures by URL, and the first page of each index.
    for (index, session) in manifest.sessions.enumerated() {
      for spec in checksumSpecs(of: session, redactor: fetcher.redactor) {
        for source in spec.specs.files {
          if source.isURL {
            fetcher.want(
              source.location, session: session, sessionIndex: index, headers: spec.headers,
              limit: ChecksumFile.maxBytes, origin: spec.origin)
          }
          if let signature = source.signature, source.signatureIsURL {
            fetcher.want(
              signature, session: session, sessionIndex: index, headers: spec.headers,
              limit: SignatureCheck.maxSignatureBytes, origin: spec.origin)
          }
        }
      }
      for entry in session.tasks {
        switch entry {
        case .metalink(let spec) where spec.isURL:
          fetcher.want(spec.document, session: session, sessionIndex: index, headers: spec.headers, limit: maxBytes)
        case .index(let spec) where session.access.awsSigV4 == nil:
          fetcher.want(
            spec.url, session: session, sessionIndex: index, headers: spec.headers,
            limit: DirectoryIndex.maxBytes)
        default: break
        }
      }
    }
    fetcher.fetchWanted()
    set.documents = fetcher.documents
    // Each index, level by level: the pages of one level of every index are fetched together.
    var crawls: [(key: String, spec: IndexSpec, session: Session, sessionIndex: Int, crawl: IndexCrawl)] = []
    var buckets: [BucketItem] = []
    var crawlKeys = Set<String>()
    for (index, session) in manifest.sessions.enumerated() {
      for case .index(let spec) in session.tasks {
        let key = DescriptorSet.key(of: spec, for: session, in: manifest)
        guard crawlKeys.insert(key).inserted else { continue }
        // An index of a session that signs for S3 lists a bucket.
        if session.access.awsSigV4 != nil {
          buckets.append(BucketItem(key: key, spec: spec, session: session, sessionIndex: index))
        } else {
          crawls.append((key, spec, session, index, IndexCrawl()))
        }
      }
    }
    for (key, crawl) in crawlBuckets(buckets, fetcher: &fetcher, manifest: manifest) { set.listings[key] = crawl }
    var repositories: [RepositoryItem] = []
    for (index, session) in manifest.sessions.enumerated() {
      for case .apt(let spec) in session.tasks {
        let key = DescriptorSet.key(of: spec, for: session, in: manifest)
        guard crawlKeys.insert(key).inserted else { continue }
        repositories.append(RepositoryItem(key: key, spec: spec, session: session, sessionIndex: index))
      }
    }
    let now = Int64(Date().timeIntervalSince1970)
    for (key, crawl) in crawlRepositories(repositories, fetcher: &fetcher, manifest: manifest, now: now) {
      set.repositories[key] = crawl
    }
    var pending: [[DirectoryIndex.PendingFolder]] = crawls.map { item in
      DirectoryIndex.nextFolders(indexURL: item.spec.url, fetched: [], depth: item.spec.depth, filter: .init()).next
    }
    while pending.contains(where: { !$0.isEmpty }) {
      for (number, item) in crawls.enumerated() {
        for folder in pending[number] {
          fetcher.want(
            folder.url, session: item.session, sessionIndex: item.sessionIndex,
            headers: item.spec.headers, limit: DirectoryIndex.maxBytes, origin: item.spec.url)
        }
      }
      fetcher.fetchWanted()
      for number in crawls.indices {
        let item = crawls[number]
        for folder in pending[number] {
          let key = DescriptorSet.key(of: folder.url, for: item.session, in: manifest)
          let document = fetcher.documents[key] ?? FetchedDocument(outcome: .missing)
          let masked = fetcher.redactor.url(folder.url)
          var listing: DirectoryIndex.Listing?
          var unreadable: String?
          if let body = document.body {
            // Links resolve against the page's URL after redirects (a folder on another host).
            let base = document.finalURL.flatMap { $0.hasSuffix("/") ? $0 : nil } ?? folder.url
            let parsed = DirectoryIndex.parse(body, folderURL: base, contentType: document.contentType, display: masked)
            if parsed.isListing {
              // Names the page gets wrong are left out one by one (`leftOut`); the rest is used.
              listing = parsed
            } else {
              let reason = parsed.diagnostics.first { $0.severity == .error }.map { "\($0.mark): \($0.message)" }
              unreadable = "cannot read it as a directory listing: \(reason ?? "no listing found")"
            }
          }
          let page = listingPage(document, url: masked, unreadable: unreadable)
          crawls[number].crawl.pages.append(page)
          crawls[number].crawl.folders.append(
            DirectoryIndex.FetchedFolder(path: folder.path, url: folder.url, listing: listing))
        }
        if pending[number].isEmpty { continue }
        let step = DirectoryIndex.nextFolders(
          indexURL: item.spec.url, fetched: crawls[number].crawl.folders, depth: item.spec.depth,
          filter: DirectoryIndex.Filter(include: item.spec.include, exclude: item.spec.exclude))
        if let problem = step.limitProblem { crawls[number].crawl.limitProblem = problem }
        pending[number] = step.next
      }
    }
    for item in crawls { set.listings[item.key] = item.crawl }
    // Checksum files: read, checked, parsed.
    for session in manifest.sessions {
      for spec in checksumSpecs(of: session, redactor: fetcher.redactor) {
        for source in spec.specs.files {
          let key = DescriptorSet.key(of: source, keyring: spec.specs.keyring, for: session, in: manifest)
          guard set.checksums[key] == nil else { continue }
          set.checksums[key] = checksumDocument(source, keyring: spec.specs.keyring, session: session, fetcher: fetcher)
        }
      }
    }
    set.requestsSent = fetcher.requestsSent
    set.requestsPerSession = fetcher.requestsPerSession
    return set
  }

  /// A listing page (an index's folder, a bucket's page) as the report keeps it: `unreadable`
  /// says why a body that came could not be read as one; a page that gave no body says why; a
  /// stored copy standing in for a page upstream did not give (`failed` with a body) says so.
  static func listingPage(_ document: FetchedDocument, url masked: String, unreadable: String?) -> ListingPage {
    var page = ListingPage(url: masked, outcome: document.outcome, sha256: document.sha256)
    if let unreadable {
      page.outcome = .failed
      page.failure = unreadable
    } else if document.body == nil, document.outcome != .missing {
      page.failure = document.problem ?? "cannot fetch it"
    }
    if document.outcome == .failed, page.failure == nil {
      page.failure = document.problem ?? "cannot fetch it; the stored copy is used"
    }
    return page
  }

  /// The `checksums:` keys of a session and its entries, with the headers their files are fetched
  /// with, and the origin those headers' secrets belong to: a task's or an index's headers were
  /// given with its URL, and go to a checksum file at another origin without their secrets; a
  /// list's secrets never go (its lines have many origins); nil: the checksum file's own URL, for
  /// the session's headers.
  static func checksumSpecs(
    of session: Session, redactor: Redactor
  ) -> [(specs: ChecksumSpec, headers: [Header], origin: String?)] {
    var found: [(specs: ChecksumSpec, headers: [Header], origin: String?)] = []
    if let own = session.checksums { found.append((own, [], nil)) }
    for entry in session.tasks {
      guard let specs = entry.checksums else { continue }
      switch entry {
      case .task(let spec): found.append((specs, spec.headers, spec.headers.isEmpty ? nil : spec.url))
      // A list's secrets belong to its lines' origins, which are many: none of them goes to a
      // checksum file (its other headers, and the session's, do).
      case .list(let spec):
        let secret = redactor.originOnly(spec.headers)
        found.append((specs, spec.headers.filter { !secret.contains($0.name.lowercased()) }, nil))
      case .index(let spec): found.append((specs, spec.headers, spec.headers.isEmpty ? nil : spec.url))
      case .metalink, .apt: break
      }
    }
    return found
  }

  /// A checksum file read (from disk, or as fetched), its signature checked, and parsed.
  static func checksumDocument(
    _ source: ChecksumSource, keyring: String?, session: Session, fetcher: DocumentFetcher
  ) -> ChecksumDocument {
    let manifest = fetcher.manifest
    let display = source.isURL ? fetcher.redactor.url(source.location) : source.location
    var document = ChecksumDocument(
      display: display, url: source.isURL ? source.location : nil, outcome: source.isURL ? .missing : .storedCopy)
    func fail(_ code: FailureCode, _ message: String) -> ChecksumDocument {
      var failed = document
      failed.failure = DocumentFailure(code: code, message: fetcher.redactor.text(message))
      failed.file = nil
      if code == .descriptor { failed.outcome = .failed }
      return failed
    }
    let bytes: [UInt8]
    if source.isURL {
      let fetched =
        fetcher.documents[DescriptorSet.key(of: source.location, for: session, in: manifest)]
        ?? FetchedDocument(outcome: .missing)
      document.outcome = fetched.outcome
      document.problem = fetched.problem
      document.sha256 = fetched.sha256
      guard let body = fetched.body else {
        if fetched.outcome == .missing { return document }
        return fail(.descriptor, "the checksum file \(display): \(fetched.problem ?? "cannot fetch it")")
      }
      bytes = body
    } else {
      let path = FileAccess.resolve(source.location, against: manifest.directory)
      do {
        bytes = try ChecksumFile.readBytes(path: path)
      } catch {
        return fail(.descriptor, "cannot read the checksum file \(display): \(error.reason)")
      }
      document.outcome = .fetched
      document.sha256 = SHA256.hash(data: bytes).hexString
    }
    var parsed: ChecksumFile
    if let keyring {
      let keyringPath = FileAccess.resolve(keyring, against: manifest.directory)
      let check = SignatureCheck()
      let result: Result<SignedText, SignatureFailure>
      if let signature = source.signature {
        let signatureBytes: [UInt8]
        let shown = source.signatureIsURL ? fetcher.redactor.url(signature) : signature
        if source.signatureIsURL {
          let fetched =
            fetcher.documents[DescriptorSet.key(of: signature, for: session, in: manifest)]
            ?? FetchedDocument(outcome: .missing)
          document.signature = (shown, fetched.outcome, fetched.sha256)
          guard let body = fetched.body else {
            if fetched.outcome == .missing { return document }
            return fail(.signature, "the signature \(shown) of \(display): \(fetched.problem ?? "cannot fetch it")")
          }
          signatureBytes = body
        } else {
          let path = FileAccess.resolve(signature, against: manifest.directory)
          guard let read = try? ChecksumFile.readBytes(path: path) else {
            return fail(.signature, "cannot read the signature \(shown) of \(display)")
          }
          signatureBytes = read
        }
        result = check.verifyDetached(data: .bytes(bytes), signature: .bytes(signatureBytes), keyring: keyringPath)
      } else if ChecksumFile.isClearSigned(bytes) {
        result = check.verifyClearSigned(.bytes(bytes), keyring: keyringPath)
      } else {
        return fail(
          .signature,
          "the checksum file \(display) is neither clear-signed nor given a signature:, and keyring: says it must be signed"
        )
      }
      switch result {
      case .failure(let failure):
        return fail(.signature, "the signature of \(display): \(failure.message)")
      case .success(let signed):
        parsed =
          source.signature != nil
          ? ChecksumFile.parse(signed.bytes, file: display)
          : ChecksumFile.parse(signedText: signed.bytes, of: signed.document, file: display)
      }
    } else {
      parsed = ChecksumFile.parse(bytes, file: display)
    }
    if parsed.isUnusable {
      let reason = parsed.diagnostics.first { $0.severity == .error }.map { "\($0.mark): \($0.message)" }
      return fail(.descriptor, "cannot read the checksum file \(display): \(reason ?? "no checksum lines")")
    }
    document.file = parsed
    return document
  }

  /// What a fetch's answer means with the stored copy: a new copy is stored, a 304 keeps the old,
  /// a failure falls back on it: the stored copy's bytes, with the outcome `failed` (the run that
  /// plans with it fails).
  static func settle(
    _ answer: DescriptorFetch.Answer, stored: StoredDescriptor?, masked: String,
    files: (body: String, meta: String), redactor: Redactor
  ) -> FetchedDocument {
    switch answer {
    case .body(let body, let etag, let lastModified, let contentType, let finalURL):
      var meta = DescriptorMeta(
        url: masked, etag: etag, lastModified: lastModified, sha256: SHA256.hash(data: body).hexString)
      meta.contentType = contentType
      // Kept beside the copy only when it holds no secret.
      meta.finalURL = finalURL.flatMap { redactor.url($0) == $0 ? $0 : nil }
      var fetched = FetchedDocument(outcome: .fetched, body: body, contentType: contentType, sha256: meta.sha256)
      fetched.finalURL = finalURL
      // The same bytes with the same metadata (a page without validators, fetched whole again):
      // the stored copy stays as it is.
      if let stored, stored.meta == meta { return fetched }
      do {
        try AtomicFile.makeParent(of: files.body)
        try AtomicFile.write(body, to: files.body)
        try AtomicFile.write(meta.json, to: files.meta)
      } catch {
        // The document is used all the same; the next command fetches it again.
        var unstored = fetched
        unstored.problem = "cannot store a copy: \(error)"
        return unstored
      }
      return fetched
    case .notModified:
      if let stored { return stored.document(.notModified) }
      return FetchedDocument(
        outcome: .failed, problem: "the server answered 304 Not Modified, but no copy is stored; run again")
    case .notFound(let message):
      var document = settle(.failed(message), stored: stored, masked: masked, files: files, redactor: redactor)
      document.notFound = true
      return document
    case .failed(let message):
      let masked = redactor.text(message)
      // Upstream could not be read: the stored copy still plans the tasks it lists (they stay as
      // they were), but the document is `failed`, and so is the run (MANIFEST.md, Descriptors).
      if var document = stored?.document(.failed) {
        document.problem = "cannot fetch it (\(masked)); the stored copy is used, and the run fails"
        return document
      }
      return FetchedDocument(outcome: .failed, problem: "cannot fetch it: \(masked)")
    }
  }
}
