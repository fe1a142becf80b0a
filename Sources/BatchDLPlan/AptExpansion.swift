import BatchDLManifest
import BatchDLSupport
import BatchDLTransfer

/// A line of `plan`'s chain of an `apt:` entry: a document, its verdict, the files it adds.
public struct RepositoryChainLine: Sendable {
  public var session: Int32
  public var entry: Int32
  /// The document's path relative to the repository's root, shown.
  public var path: String
  /// nil: accepted.
  public var failure: String?
  public var filesAdded: Int
  public var bytesAdded: Int64
}

/// An `apt:` entry: the files its signed chain names become downloads at `dest/to/PATH`, pinned
/// to the size and SHA-256 their parent document gives, published in order: pool files, then the
/// index files of a suite (waiting for every pool file of the suite), then its `Release`,
/// `Release.gpg` and `InRelease` (waiting for its indexes, and in that order).
extension PlanBuilder {
  package mutating func expand(_ spec: AptSpec, session: Session, sessionIndex: Int, entryIndex: Int) {
    let key = DescriptorSet.key(of: spec, for: session, in: manifest)
    let masked = redactor.url(spec.url)
    guard let crawl = descriptorSet?.repositories[key], !crawl.pages.isEmpty else {
      partial = true
      diagnostics.warning(
        spec.urlMark,
        "no stored copy of the repository \(masked): its files are not listed; 'batchdl plan' (without --offline) or 'batchdl run' fetches it"
      )
      return
    }
    for page in crawl.pages {
      descriptors.append(
        PlannedDescriptor(
          session: Int32(sessionIndex), entry: Int32(entryIndex), url: page.url, outcome: page.outcome,
          sha256: page.sha256, failure: page.failure))
    }
    let result = crawl.result
    for verdict in result.verdicts {
      repositoryChain.append(
        RepositoryChainLine(
          session: Int32(sessionIndex), entry: Int32(entryIndex), path: AptPath.shown(verdict.path),
          failure: verdict.failure.map { redactor.text("\($0.code): \($0.message)") }, filesAdded: verdict.filesAdded,
          bytesAdded: verdict.bytesAdded))
    }
    if let problem = crawl.problem {
      refuseListed(
        id: masked, url: spec.url, session: sessionIndex, entry: entryIndex, code: .descriptor,
        message: "the repository \(masked): \(problem)")
    }
    // Each failure stands in the run as a task of its own: `REPOSITORY#PATH`.
    for failure in result.failures {
      let code: FailureCode
      switch failure.code {
      case "signature": code = .signature
      case "checksum-mismatch": code = .checksumMismatch
      default: code = .descriptor
      }
      diagnostics.warning(spec.urlMark, redactor.text("the repository \(masked): \(failure.description)"))
      refuseListed(
        id: masked + "#" + AptPath.shown(failure.path), url: spec.url(of: failure.path), session: sessionIndex,
        entry: entryIndex, code: code, message: "\(AptPath.shown(failure.path)): \(failure.message)")
    }
    for part in result.parts {
      if let why = part.withheld {
        diagnostics.warning(
          spec.urlMark,
          "the repository \(masked): suite \(part.name) is not published this run (\(why)); the copy in place stays")
      }
    }
    guard let folder = entryFolder(spec.to, at: spec.toMark ?? spec.urlMark) else { return }
    let context = context(
      session: session, sessionIndex: sessionIndex, entryIndex: entryIndex, kind: .download, method: "GET",
      headers: spec.headers, body: "", priority: spec.priority)
    var requestOf: [[UInt8]: Int32] = [:]
    // Content identity joins files of one role only (pool files; the index files of one suite): a
    // pool file with an index's bytes stays its own request, so that publish order cannot wait in
    // a circle, and a suite's failure never holds back another suite's identical index.
    func place(_ file: RepositoryFile, at path: [UInt8], role: String?) {
      let shown = String(decoding: path, as: UTF8.self)
      // Made only for a file refused (most are not).
      var id: String { masked + "#" + AptPath.shown(path) }
      if let limit = spec.maxSize ?? session.maxSize, file.size > limit {
        refuseListed(
          id: id, url: spec.url(of: file.fetchPath), session: sessionIndex, entry: entryIndex, code: .tooLarge,
          message:
            "\(AptPath.shown(path)) is left out: its size \(file.size) is larger than max_size (\(ByteSize.format(limit)), \(limit) bytes)"
        )
        return
      }
      let url = spec.url(of: file.fetchPath)
      let normalized: NormalizedURL
      switch normalizer.normalize(url) {
      case .success(let value): normalized = value
      case .failure(let problem):
        refuseListed(
          id: id, url: url, session: sessionIndex, entry: entryIndex, code: .unsafePath,
          message: "\(AptPath.shown(path)): \(problem.description)")
        return
      }
      let warned = diagnostics.items.count
      guard
        let destination = resolveDestination(
          session: session, to: folder.appending(shown).path, isFolder: false, url: normalized, mark: spec.urlMark,
          quiet: false, fromDocument: true)
      else {
        let why = diagnostics.items.dropFirst(warned).first?.message ?? "its destination is refused"
        refuseListed(id: id, url: url, session: sessionIndex, entry: entryIndex, code: .unsafePath, message: why)
        return
      }
      let toRef = text.append(destination)
      let before = tasks.count
      guard
        let task = add(
          context: context, normalized: normalized, urlRef: text.append(url), toRef: toRef, idRef: toRef, line: 0,
          mark: spec.urlMark, explicitID: false, content: role.map { $0 + file.sha256 },
          document: DocumentFile(session: Int32(sessionIndex), entry: Int32(entryIndex), name: path))
      else { return }
      if Int(task) == before {
        tasks[Int(task)].expectation = Int32(expectations.count)
        expectations.append(
          TaskExpectation(size: file.size, digest: ExpectedDigest(algorithm: .sha256, hex: file.sha256)))
      }
      requestOf[path] = tasks[Int(task)].request
      if !spec.after.isEmpty { afterRefs.append((task, spec.after)) }
    }
    for file in result.pool { place(file, at: file.path, role: "pool:") }
    let prefix = Array(form.prefix(dest: session.dest, folder: folder).utf8)
    let limit = spec.maxSize ?? session.maxSize
    for part in result.parts where !part.indexes.isEmpty {
      // A suite whose indexes name a file the plan leaves out (a path batchdl keeps, a clash,
      // past max_size) is not published: clients would be sent to a file that is not there.
      let leftOut =
        part.pool.first { requestOf[$0] == nil }
        ?? part.indexes.first { file in limit.map { file.size > $0 } ?? false }?.path
      if let leftOut {
        diagnostics.warning(
          spec.urlMark,
          "the repository \(masked): suite \(part.name) is not published this run (it names \(AptPath.shown(leftOut)), which is left out); the copy in place stays"
        )
        continue
      }
      let pool = Set(part.pool.compactMap { requestOf[$0] }).sorted()
      var indexRequests = Set<Int32>()
      var members: [Int32] = []
      var indexesPlaced = true
      for file in part.indexes {
        for path in [file.path] + file.alsoAt {
          place(file, at: path, role: "index:\(part.name):")
          if let request = requestOf[path] {
            wait(request, for: pool)
            if indexRequests.insert(request).inserted { members.append(request) }
          } else {
            indexesPlaced = false
          }
        }
      }
      // The roots list every index: without one of them in place, the previous roots stay.
      guard indexesPlaced else {
        if !members.isEmpty {
          publishGroups.append(
            PublishGroup(name: "suite \(part.name) of \(masked)", members: members, removals: [], withheld: true))
        }
        continue
      }
      var earlierRoots = Set<Int32>()
      for file in part.roots {
        place(file, at: file.path, role: nil)
        guard let request = requestOf[file.path] else { continue }
        wait(request, for: indexRequests.union(earlierRoots).sorted())
        if earlierRoots.insert(request).inserted { members.append(request) }
      }
      // The suite's indexes and roots are placed together; a root upstream no longer publishes
      // (an InRelease gone, a Release pair not verified) goes, or it would name other files.
      let suite = AptFormat(suite: part.name, components: [], architectures: [])
      let published = Set(part.roots.map(\.path))
      let removals = [suite.releasePath, suite.signaturePath, suite.inReleasePath].filter { !published.contains($0) }
      var group = PublishGroup(
        name: "suite \(part.name) of \(masked)", members: members,
        removals: removals.map { String(decoding: prefix + $0, as: UTF8.self) }, withheld: false)
      group.retired = part.unmirrored.map { String(decoding: prefix + $0, as: UTF8.self) }
      publishGroups.append(group)
    }
    // What keep_removed keeps stays named for prune.
    for (path, until) in crawl.kept {
      keptFromPrune[prefix + path] = until
    }
  }

  /// Makes `request` wait for `others` (publish order, in order): it is placed only after them,
  /// and only when none of them failed.
  private mutating func wait(_ request: Int32, for others: [Int32]) {
    var dependencies = Set(requests[Int(request)].dependencies)
    for other in others where other != request && dependencies.insert(other).inserted {
      requests[Int(request)].dependencies.append(other)
      publishWaits[request, default: []].insert(other)
    }
  }
}
