import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport

/// `checksums: sidecar`: the sidecars of the files a first plan found, fetched as descriptors.
extension Descriptors {
  /// Fetches (or reads from `state`) the sidecars each of `wants` needs, into `set.sidecars`:
  /// `NAME.sha256`, else `NAME.sha512`, and with a signature `NAME.asc`, else `NAME.sig`. Where an
  /// `index:` listing of the file's folder is at hand, only a sidecar it shows is asked for (and
  /// one it does not show is absent, with no request); elsewhere each name is asked for in turn,
  /// the next only after a 404. Like every descriptor: a conditional request when a copy is stored,
  /// the stored copy used (and the run failed) when upstream cannot be read.
  static func prepareSidecars(
    _ wants: [SidecarWant], manifest: Manifest, state: StateFolder, mode: DescriptorMode, fetching: Set<String>?,
    into set: inout DescriptorSet
  ) {
    var fetcher = DocumentFetcher(manifest: manifest, state: state, mode: mode)
    fetcher.fetching = fetching
    let listed = ListedFiles(set.listings)
    // Per want and kind (checksum, then signature): the candidates left to try, and what was found.
    struct Probe {
      var want: SidecarWant
      var isSignature: Bool
      /// Every name a sidecar of this kind may have, as messages list them.
      var names: [String]
      var candidates: [String]
      var tried: [String] = []
      var found: (url: String, document: FetchedDocument)?
      var failed: (url: String, document: FetchedDocument)?
      var unknown = false
      var absent: Bool { found == nil && failed == nil && !unknown && candidates.isEmpty }
    }
    var probes: [Probe] = []
    for want in wants {
      var kinds = [(SidecarWant.checksumExtensions, false)]
      if want.signature { kinds.append((SidecarWant.signatureExtensions, true)) }
      for (extensions, isSignature) in kinds {
        let names = SidecarWant.candidates(of: want.url, extensions: extensions)
        let candidates = listed.shown(names, beside: want.url) ?? names
        probes.append(Probe(want: want, isSignature: isSignature, names: names, candidates: candidates))
      }
    }
    // Round by round: the next candidate of every probe not yet settled, all at once.
    while probes.contains(where: { $0.found == nil && $0.failed == nil && !$0.unknown && !$0.candidates.isEmpty }) {
      var asked: [Int: String] = [:]
      for index in probes.indices {
        let probe = probes[index]
        guard probe.found == nil, probe.failed == nil, !probe.unknown, let next = probe.candidates.first else {
          continue
        }
        let session = manifest.sessions[Int(probe.want.session)]
        let limit = probe.isSignature ? SignatureCheck.maxSignatureBytes : SidecarChecksum.maxBytes
        fetcher.want(
          next, session: session, sessionIndex: Int(probe.want.session),
          headers: headers(of: session, entry: Int(probe.want.entry)), limit: limit, origin: probe.want.url)
        asked[index] = next
      }
      fetcher.fetchWanted()
      for (index, url) in asked {
        let session = manifest.sessions[Int(probes[index].want.session)]
        let document =
          fetcher.documents[DescriptorSet.key(of: url, for: session, in: manifest)]
          ?? FetchedDocument(outcome: .missing)
        probes[index].candidates.removeFirst()
        probes[index].tried.append(url)
        if document.notFound {
          continue
        } else if document.body != nil {
          probes[index].found = (url, document)
        } else if document.outcome == .missing {
          // Nothing stored (a command that does not fetch): the next name may have a copy.
          if probes[index].candidates.isEmpty { probes[index].unknown = true }
        } else {
          probes[index].failed = (url, document)
        }
      }
    }
    let redactor = fetcher.redactor
    func sidecar(_ probe: Probe) -> SidecarDocument {
      if let (url, document) = probe.found {
        var result = SidecarDocument(url: url, display: redactor.url(url), outcome: document.outcome)
        result.body = document.body
        result.sha256 = document.sha256
        if document.outcome == .failed { result.problem = document.problem }
        return result
      }
      if let (url, document) = probe.failed {
        var result = SidecarDocument(url: nil, display: redactor.url(url), outcome: .failed)
        result.failure = document.problem ?? "cannot fetch it"
        return result
      }
      let shown = probe.names.map { redactor.url($0) }
      var result = SidecarDocument(url: nil, display: shown.joined(separator: " or "), outcome: .missing)
      result.absent = !probe.unknown
      return result
    }
    var index = 0
    for want in wants {
      let key = DescriptorSet.key(
        of: want.url, for: manifest.sessions[Int(want.session)], in: manifest)
      var pair = SidecarPair(checksum: sidecar(probes[index]))
      index += 1
      if want.signature {
        pair.signature = sidecar(probes[index])
        index += 1
      }
      set.sidecars[key] = pair
    }
  }

  /// The headers a sidecar of a file of entry `entry` is fetched with: the entry's own (a
  /// sidecar is at its file's origin).
  private static func headers(of session: Session, entry: Int) -> [Header] {
    guard session.tasks.indices.contains(entry) else { return [] }
    switch session.tasks[entry] {
    case .task(let spec): return spec.headers
    case .list(let spec): return spec.headers
    case .index(let spec): return spec.headers
    case .apt(let spec): return spec.headers
    case .metalink: return []
    }
  }
}

/// The files the `index:` listings at hand show, by folder: which sidecars exist needs no request.
private struct ListedFiles {
  /// Normalized folder URLs whose listing was read.
  var folders = Set<String>()
  /// Normalized URLs of the files those listings show.
  var files = Set<String>()

  init(_ listings: [String: IndexCrawl]) {
    for crawl in listings.values {
      for folder in crawl.folders {
        guard let listing = folder.listing, let url = Self.normalized(folder.url) else { continue }
        folders.insert(url)
        for entry in listing.entries where !entry.isFolder {
          if let file = Self.normalized(entry.url) { files.insert(file) }
        }
      }
    }
  }

  /// Of `candidates` (sidecars of `file`), those the listing of `file`'s folder shows; nil when
  /// no listing of that folder is at hand.
  func shown(_ candidates: [String], beside file: String) -> [String]? {
    guard let slash = file.utf8.lastIndex(of: 0x2F) else { return nil }
    let folder = String(file[...slash])
    guard folders.contains(folder) else { return nil }
    return candidates.filter { files.contains(Self.normalized($0) ?? $0) }
  }

  static func normalized(_ url: String) -> String? {
    (try? Metalink.normalizer.withLock { $0.normalize(url) }.get())?.text
  }
}
