import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import Foundation

/// The documents of `apt:` entries: each repository's format (`AptRepositoryFormat`) is stepped
/// until it answers, the documents it asks for fetched by the same engine jobs as every document
/// (bounded, conditional, stored), every repository's in one round. The signed roots are checked
/// with gpgv between rounds, before anything they list is used; an index the Release pins is not
/// asked for again when the state folder holds a copy with its digest.
extension Descriptors {
  /// The most rounds of one crawl (roots, then indexes: two; more is a format's loop).
  static let maxRepositoryRounds = 8

  typealias RepositoryItem = CrawledEntry<AptSpec>

  static func crawlRepositories(
    _ items: [RepositoryItem], fetcher: inout DocumentFetcher, manifest: Manifest, now: Int64
  ) -> [String: RepositoryCrawl] {
    struct Progress {
      var format: AptRepositoryFormat
      var documents: RepositoryDocuments
      var crawl = RepositoryCrawl()
      /// gpgv's words for each root it did not verify.
      var signatureProblems: [[UInt8]: String] = [:]
      /// Documents upstream did not give (other than a 404), and why.
      var fetchProblems: [[UInt8]: String] = [:]
      var done = false
    }
    var progress = items.map { item in
      Progress(format: item.spec.format, documents: RepositoryDocuments(now: now))
    }
    for _ in 0..<maxRepositoryRounds where progress.contains(where: { !$0.done }) {
      var asked: [[RepositoryRequest]] = Array(repeating: [], count: items.count)
      for (number, item) in items.enumerated() where !progress[number].done {
        switch progress[number].format.step(progress[number].documents) {
        case .done(let result):
          progress[number].crawl.result = result
          progress[number].done = true
        case .fetch(let requests):
          asked[number] = requests
          for request in requests {
            let limit = request.size.map { Int(clamping: $0) } ?? AptRelease.maxBytes
            fetcher.want(
              item.spec.url(of: request.fetchPath), session: item.session, sessionIndex: item.sessionIndex,
              headers: item.spec.headers, limit: max(limit, 1), origin: item.spec.url, pinned: request.sha256)
          }
        }
      }
      fetcher.fetchWanted()
      for (number, item) in items.enumerated() where !asked[number].isEmpty {
        // Reading stored copies only (`validate`, `plan --offline`): without a copy of each
        // document there is no chain to show; the planner says so.
        if fetcher.mode == .stored,
          asked[number].allSatisfy({ request in
            let key = DescriptorSet.key(of: item.spec.url(of: request.fetchPath), for: item.session, in: manifest)
            return fetcher.documents[key]?.outcome ?? .missing == .missing
          })
        {
          progress[number].crawl = RepositoryCrawl()
          progress[number].done = true
          continue
        }
        for request in asked[number] {
          let url = item.spec.url(of: request.fetchPath)
          let key = DescriptorSet.key(of: url, for: item.session, in: manifest)
          let fetched = fetcher.documents[key] ?? FetchedDocument(outcome: .missing)
          var page = listingPage(fetched, url: fetcher.redactor.url(url), unreadable: nil)
          var bytes = fetched.body
          if fetched.notFound {
            bytes = nil
            page.outcome = request.isOptional ? .fetched : .failed
            page.failure = "the server does not have it (404)"
          } else if fetched.outcome == .missing {
            // No stored copy of an optional document (upstream never had it): as a 404.
            bytes = nil
          } else if fetched.outcome == .failed {
            // A stored copy never stands in for a repository's document: what was checked
            // before may since have been replaced upstream.
            bytes = nil
            progress[number].fetchProblems[request.fetchPath] = fetched.problem ?? "cannot fetch it"
          }
          progress[number].crawl.pages.append(page)
          // The digest the copy was stored with, computed from its bytes as they came.
          progress[number].documents.documents[request.fetchPath] = RepositoryDocument(
            bytes: bytes, sha256: bytes == nil ? nil : fetched.sha256)
        }
        var documents = progress[number].documents
        var problems = progress[number].signatureProblems
        verifyRoots(item, fetched: Set(asked[number].map(\.fetchPath)), &documents, &problems, manifest: manifest)
        progress[number].documents = documents
        progress[number].signatureProblems = problems
      }
    }
    var crawls: [String: RepositoryCrawl] = [:]
    for (number, item) in items.enumerated() {
      var crawl = progress[number].crawl
      if !progress[number].done {
        crawl.problem = "the repository's documents ask for more documents past \(maxRepositoryRounds) rounds"
      }
      explain(&crawl.result, signatureProblems: progress[number].signatureProblems)
      var unknown: [[UInt8]: String] = [:]
      for (path, problem) in progress[number].fetchProblems.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
        crawl.result.failures.append(
          RepositoryFailure(
            path: path, code: "descriptor", message: fetcher.redactor.text("cannot fetch it: \(problem)")))
        // A suite with a document upstream did not give is not known tonight: not published.
        for suite in item.spec.suites where path.starts(with: Array("dists/\(suite)/".utf8)) {
          unknown[Array("dists/\(suite)/".utf8)] = "\(AptPath.shown(path)) could not be fetched"
        }
      }
      crawl.result.withhold(partsBelow: unknown)
      crawl.kept = keptPaths(item, crawl: crawl, state: fetcher.state, mode: fetcher.mode, now: now)
      crawls[item.key] = crawl
    }
    return crawls
  }

  /// Runs gpgv on the roots of each suite fetched this round (`fetched`: `InRelease`; `Release`
  /// with its `Release.gpg`) and marks those it verifies; sets the published root's `Date` on
  /// them. A root of an earlier round is not checked again.
  static func verifyRoots(
    _ item: RepositoryItem, fetched: Set<[UInt8]>, _ documents: inout RepositoryDocuments,
    _ problems: inout [[UInt8]: String], manifest: Manifest
  ) {
    let keyring = FileAccess.resolve(item.spec.keyring, against: manifest.absoluteDirectory)
    let check = SignatureCheck()
    for suite in item.spec.format.suites
    where fetched.contains(suite.inReleasePath) || fetched.contains(suite.releasePath) {
      let published = publishedDate(of: suite, item: item, manifest: manifest)
      if var document = documents[suite.inReleasePath], !document.signatureVerified, let bytes = document.bytes {
        switch check.verifyClearSigned(.bytes(bytes), keyring: keyring) {
        case .success(let signed):
          // What the format reads must be exactly what gpgv says is signed.
          if case .success(let text) = AptClearSigned.signedText(of: bytes), text.bytes == signed.bytes {
            document.signatureVerified = true
          } else {
            problems[suite.inReleasePath] = "its signed text is not the text gpgv verified"
          }
        case .failure(let failure): problems[suite.inReleasePath] = failure.message
        }
        document.storedDate = published
        documents.documents[suite.inReleasePath] = document
      }
      if var document = documents[suite.releasePath], !document.signatureVerified, let bytes = document.bytes,
        let signature = documents[suite.signaturePath]?.bytes
      {
        switch check.verifyDetached(data: .bytes(bytes), signature: .bytes(signature), keyring: keyring) {
        case .success(let signed) where signed.bytes == bytes: document.signatureVerified = true
        case .success: problems[suite.releasePath] = "gpgv verified other bytes than the Release read"
        case .failure(let failure): problems[suite.releasePath] = failure.message
        }
        document.storedDate = published
        documents.documents[suite.releasePath] = document
      }
    }
  }

  /// The `Date` of the suite's root the mirror publishes now (`InRelease`, else `Release`), which
  /// batchdl placed only once gpgv had verified it; nil when there is none.
  static func publishedDate(of suite: AptFormat, item: RepositoryItem, manifest: Manifest) -> Int64? {
    let root = FileAccess.resolve(
      item.session.dest.isEmpty ? "." : item.session.dest, against: manifest.absoluteDirectory)
    let folder = FileAccess.normalize(root + "/" + (item.spec.to ?? ""))
    for path in [suite.inReleasePath, suite.releasePath] {
      let file = folder + "/" + String(decoding: path, as: UTF8.self)
      guard let bytes = try? ChecksumFile.readBytes(path: file),
        case .success(let release) = AptRelease.parse(document: bytes), let date = release.date
      else { continue }
      return date
    }
    return nil
  }

  /// Adds gpgv's own words to the format's `signature` failures of roots gpgv did not verify.
  static func explain(_ result: inout RepositoryResult, signatureProblems: [[UInt8]: String]) {
    guard !signatureProblems.isEmpty else { return }
    for number in result.failures.indices where result.failures[number].code == "signature" {
      if let problem = signatureProblems[result.failures[number].path] {
        result.failures[number].message += " (gpgv: \(problem))"
      }
    }
    for number in result.verdicts.indices {
      if let failure = result.verdicts[number].failure, failure.code == "signature",
        let problem = signatureProblems[failure.path]
      {
        result.verdicts[number].failure?.message += " (gpgv: \(problem))"
      }
    }
  }

  // MARK: - keep_removed

  /// The paths `keep_removed` keeps (`NamedPaths.next`), from the record in the state folder
  /// (`descriptors/apt-HASH.named`), which a crawl that fetched writes back when it changed.
  static func keptPaths(
    _ item: RepositoryItem, crawl: RepositoryCrawl, state: StateFolder, mode: DescriptorMode, now: Int64
  ) -> [[UInt8]: Int64] {
    // By repository, destination and suites: a manifest that drops an architecture or a component
    // keeps the pool files those named for `keep_removed` too (two entries of one repository and
    // destination that name other suites keep records of their own).
    let owner = [
      item.spec.url, item.session.dest, item.spec.to ?? "", item.spec.suites.sorted().joined(separator: ","),
    ]
    .joined(separator: "\n")
    let file = state.descriptors + "/apt-" + FileDigest.hex(of: Array(owner.utf8), algorithm: .sha256) + ".named"
    let record = FileManager.default.contents(atPath: file).map { NamedPaths.parse(Array($0)) } ?? NamedPaths()
    var named = Set(crawl.result.pool.map(\.path))
    for index in crawl.result.indexes { named.formUnion(index.alsoAt) }
    let complete = crawl.problem == nil && crawl.result.failures.isEmpty && !crawl.result.parts.isEmpty
    let next = record.next(
      named: named, complete: complete && mode == .fetch, keepSeconds: item.spec.keepRemoved.milliseconds / 1000,
      now: now)
    if let written = next.record, written != record {
      try? AtomicFile.makeParent(of: file)
      _ = try? AtomicFile.write(written.bytes, to: file)
    }
    return next.kept
  }
}
