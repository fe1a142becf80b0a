import BatchDLSupport

/// One suite of an APT repository as a `RepositoryFormat`: the chain from the signed root to the
/// pool files, each link checked before the next is used.
///
/// 1. Asks for `dists/SUITE/InRelease`, `Release` and `Release.gpg` (each may be missing).
/// 2. Reads the root: `InRelease` when the server has it, else `Release` (with `Release.gpg`).
///    It must be verified by gpgv (the caller's `signatureVerified`), its `Date` not older than the
///    stored copy's (nor missing when the stored copy has one) and its `Valid-Until` not past:
///    else the suite fails `signature`. A root that cannot be read fails `descriptor`. Then asks for
///    the index files `AptIndexSelection` selects, from their by-hash paths when the Release says
///    `Acquire-By-Hash: yes`, pinned to the Release's size and SHA-256.
/// 3. Checks each index fetched (the variant read, and the optional ones) against its Release line
///    (`checksum-mismatch`); one the server does not have fails `descriptor` unless it is optional.
///    The other variants are not fetched now: they are published as downloads pinned to their
///    Release line, checked when they come. The read variant of each `Packages` and
///    `Sources` is decompressed (bounded) and read: what fails there fails `descriptor`; each pool
///    path an index names that batchdl refuses fails alone (`descriptor`), the rest is kept.
///
/// When any document of the suite fails, its index and root files are not published (the
/// previous copy stays consistent); the pool files of the indexes that passed still are.
/// Only root files verified by gpgv are published: `InRelease`, and `Release` with `Release.gpg`
/// when the caller verified that pair and (beside an `InRelease`) it is the `InRelease`'s signed
/// text. A pair gpgv does not verify beside an `InRelease` fails the suite (`signature`); a
/// verified pair that is not the `InRelease`'s text is left out, with a `descriptor` failure of
/// its own (the mirror then removes its old pair, which would contradict the new `InRelease`).
public struct AptFormat: RepositoryFormat {
  public var suite: String
  public var components: [String]
  public var architectures: [String]
  public var sources: Bool
  /// The bounds of decompressing one index.
  package var decompressionLimits = DecompressionLimits()
  /// The bounds of reading one decompressed index.
  public var indexLimits = AptIndexReader.Limits()

  public init(suite: String, components: [String], architectures: [String], sources: Bool = false) {
    self.suite = suite
    self.components = components
    self.architectures = architectures
    self.sources = sources
  }

  var folder: [UInt8] { Array("dists/\(suite)/".utf8) }
  /// `dists/SUITE/InRelease`.
  public var inReleasePath: [UInt8] { folder + Array("InRelease".utf8) }
  /// `dists/SUITE/Release`.
  public var releasePath: [UInt8] { folder + Array("Release".utf8) }
  /// `dists/SUITE/Release.gpg`.
  public var signaturePath: [UInt8] { folder + Array("Release.gpg".utf8) }

  public func step(_ documents: RepositoryDocuments) -> RepositoryStep {
    if let problem = AptPath.problem(Array(suite.utf8)) {
      var result = RepositoryResult()
      result.fail(inReleasePath, "descriptor", "the suite '\(AptPath.shown(Array(suite.utf8)))': \(problem)")
      return .done(result)
    }
    let roots = [inReleasePath, releasePath, signaturePath]
    let asked = roots.filter { documents[$0] == nil }
    if !asked.isEmpty {
      return .fetch(asked.map { RepositoryRequest(path: $0, isOptional: true) })
    }
    var result = RepositoryResult()
    guard let release = checkedRoot(documents, &result) else { return .done(result) }
    let plan: AptIndexPlan
    switch AptIndexSelection.select(
      release: release.release, suite: suite, components: components, architectures: architectures, sources: sources)
    {
    case .success(let found): plan = found
    case .failure(let problem):
      result.fail(release.path, "descriptor", problem.message)
      return .done(result)
    }
    // Only what must be known before planning is fetched now: the variant read, and the optional
    // ones (whether the server has them). The others are downloads pinned to their Release line,
    // checked when they come.
    var asking: Set<[UInt8]> = []
    let requests = plan.targets.filter {
      ($0.isRead || $0.isOptional) && documents[$0.fetchPath] == nil && asking.insert($0.fetchPath).inserted
    }.map {
      RepositoryRequest(
        path: $0.path, fetchPath: $0.fetchPath, size: $0.size, sha256: $0.sha256, isOptional: $0.isOptional)
    }
    if !requests.isEmpty { return .fetch(requests) }
    var missing = plan.missing.map { RepositoryFailure(path: release.path, code: "descriptor", message: $0) }
    // A signed line batchdl cannot use (a path listed twice with other digests, one that escapes)
    // leaves the Release naming what the mirror will not hold: the suite is not published.
    missing += release.release.refused.map { refused in
      RepositoryFailure(
        path: refused.path.isEmpty ? release.path : folder + refused.path, code: "descriptor",
        message: "\(AptPath.shown(release.path)) line \(refused.line) is refused: \(refused.reason)")
    }
    var documentFailed = !missing.isEmpty
    result.failures += missing
    result.verdicts.append(
      RepositoryVerdict(
        path: release.path, failure: missing.first, filesAdded: plan.targets.count,
        bytesAdded: plan.targets.reduce(Int64(0)) { $0 + $1.size }))
    var pool = PoolMerger()
    var indexes: [RepositoryFile] = []
    var refusedPath: [UInt8]?
    for target in plan.targets {
      if !target.isRead && !target.isOptional {
        indexes.append(
          RepositoryFile(
            path: target.path, size: target.size, sha256: target.sha256, fetchPath: target.fetchPath,
            alsoAt: target.byHashPath.map { [$0] } ?? []))
        continue
      }
      guard let bytes = documents[target.fetchPath]?.bytes else {
        if !target.isOptional {
          result.fail(
            target.path, "descriptor",
            "the Release lists it (\(target.size) bytes) but the server does not have it (404)")
          documentFailed = true
        }
        continue
      }
      if let mismatch = Self.mismatch(bytes, target, known: documents[target.fetchPath]?.sha256) {
        result.fail(target.path, "checksum-mismatch", mismatch)
        documentFailed = true
        continue
      }
      indexes.append(
        RepositoryFile(
          path: target.path, size: target.size, sha256: target.sha256, fetchPath: target.fetchPath,
          alsoAt: target.byHashPath.map { [$0] } ?? []))
      guard target.isRead else {
        result.verdicts.append(RepositoryVerdict(path: target.path))
        continue
      }
      // The uncompressed variant, when the server has it with the bytes the Release names, says
      // the same without a decompression.
      var reading = (bytes: bytes, target: target)
      if target.compression != .none, let plain = Self.plainVariant(of: target, in: plan.targets),
        let plainBytes = documents[plain.fetchPath]?.bytes,
        Self.mismatch(plainBytes, plain, known: documents[plain.fetchPath]?.sha256) == nil
      {
        reading = (plainBytes, plain)
      }
      switch read(reading.bytes, reading.target) {
      case .failure(let failure):
        result.fail(target.path, failure.code, failure.message)
        documentFailed = true
      case .success(let index):
        let files = index.files.map { RepositoryFile(path: $0.path, size: $0.size, sha256: $0.sha256) }
        result.verdicts.append(
          RepositoryVerdict(
            path: target.path, filesAdded: files.count, bytesAdded: files.reduce(Int64(0)) { $0 + $1.size }))
        if refusedPath == nil, index.refusedCount > 0 { refusedPath = index.refused.first?.path ?? target.path }
        for refused in index.refused {
          result.failures.append(
            RepositoryFailure(
              path: refused.path, code: "descriptor",
              message: "\(AptPath.shown(target.path)) line \(refused.line) is refused: \(refused.reason)"))
        }
        if index.refusedCount > index.refused.count {
          result.failures.append(
            RepositoryFailure(
              path: target.path, code: "descriptor",
              message: "\(index.refusedCount - index.refused.count) more paths of it are refused (not listed)"))
        }
        for file in files { pool.add(file) }
      }
    }
    result.pool = pool.files
    result.failures += pool.failures
    var part = RepositoryPart(name: suite)
    part.pool = pool.files.map(\.path)
    // What the Release lists that this mirror does not keep (an architecture dropped from the
    // manifest): a copy of it left in the mirror would not match the new Release.
    let mirrored = Set(plan.targets.map(\.path))
    part.unmirrored = release.release.files.map { folder + $0.path }.filter { !mirrored.contains($0) }
    if documentFailed {
      part.withheld = "a document of the suite failed"
    } else if let refused = refusedPath ?? pool.failures.first?.path {
      // An index that names a file the mirror will not hold is not published: clients would be
      // sent to a file that is not there.
      part.withheld = "its indexes name \(AptPath.shown(refused)), which is refused"
    } else {
      part.indexes = indexes
      part.roots = release.publish
      result.indexes = indexes
      result.roots = release.publish
    }
    result.parts = [part]
    return .done(result)
  }

  // MARK: - Links

  /// The Release read from the signed root, where it came from, and the root files to publish.
  struct Root {
    var release: AptRelease
    var path: [UInt8]
    var publish: [RepositoryFile]
  }

  /// The root checked: present, verified, readable, not rolled back, not expired; nil (with the
  /// failure in `result`) otherwise.
  func checkedRoot(_ documents: RepositoryDocuments, _ result: inout RepositoryResult) -> Root? {
    let inRelease = documents[inReleasePath]
    let plain = documents[releasePath]
    let detached = documents[signaturePath]
    let path: [UInt8]
    let document: RepositoryDocument
    if let inRelease, inRelease.bytes != nil {
      (path, document) = (inReleasePath, inRelease)
    } else if let plain, plain.bytes != nil, detached?.bytes != nil {
      (path, document) = (releasePath, plain)
    } else {
      result.fail(
        inReleasePath, "descriptor",
        "the server has neither dists/\(suite)/InRelease nor dists/\(suite)/Release with its Release.gpg")
      return nil
    }
    guard document.signatureVerified, let bytes = document.bytes else {
      result.fail(path, "signature", "gpgv did not verify its signature against the keyring: nothing it lists is used")
      return nil
    }
    let release: AptRelease
    switch AptRelease.parse(document: bytes) {
    case .success(let parsed): release = parsed
    case .failure(let problem):
      result.fail(path, "descriptor", problem.description)
      return nil
    }
    if let problem = Self.otherSuite(release, suite) {
      result.fail(path, "signature", problem)
      return nil
    }
    if let stored = document.storedDate {
      guard let date = release.date else {
        result.fail(
          path, "signature",
          "it has no Date, so it cannot be shown not older than the stored copy's (\(AptDate.format(stored)))")
        return nil
      }
      if date < stored {
        result.fail(
          path, "signature",
          "its Date (\(AptDate.format(date))) is older than the stored copy's (\(AptDate.format(stored))): a rollback")
        return nil
      }
    }
    if let date = release.date, date > documents.now + Self.maxFutureSeconds {
      // A Date far ahead would become the stored copy's and refuse every later Release.
      result.fail(
        path, "signature",
        "its Date (\(AptDate.format(date))) is more than 10 days ahead of now: it is not valid yet (check this machine's clock)"
      )
      return nil
    }
    if let validUntil = release.validUntil, validUntil < documents.now {
      result.fail(
        path, "signature", "its Valid-Until (\(AptDate.format(validUntil))) is past: the repository's signature expired"
      )
      return nil
    }
    var publish: [RepositoryFile] = []
    // Beside an InRelease, a Release with a Release.gpg that gpgv does not verify is a root the
    // repository publishes unsigned: the suite fails, the mirror keeps its roots as they were.
    if path == inReleasePath, let plain, !plain.signatureVerified, plain.bytes != nil, detached?.bytes != nil {
      result.fail(
        releasePath, "signature",
        "gpgv did not verify Release with Release.gpg against the keyring: the suite is not published")
      return nil
    }
    if let plain, plain.signatureVerified, let releaseBytes = plain.bytes, let gpg = detached?.bytes {
      if path == inReleasePath, (try? AptClearSigned.signedText(of: bytes).get().bytes) != releaseBytes {
        result.failures.append(
          RepositoryFailure(
            path: releasePath, code: "descriptor",
            message: "it differs from the InRelease's signed text: it is not published (the InRelease is)"))
      } else {
        publish.append(Self.file(releasePath, releaseBytes))
        publish.append(Self.file(signaturePath, gpg))
      }
    }
    if path == inReleasePath { publish.append(Self.file(inReleasePath, bytes)) }
    return Root(release: release, path: path, publish: publish)
  }

  /// Why `release` is another suite's (a signed Release replayed in this suite's folder): it gives
  /// a `Suite` or `Codename` and neither is `suite` nor, for `stable/updates`-style names, its
  /// first segment (apt: "Conflicting distribution"). nil when it is this suite's.
  static func otherSuite(_ release: AptRelease, _ suite: String) -> String? {
    let names = [release.suite, release.codename].compactMap { $0 }
    guard !names.isEmpty else { return nil }
    let first = suite.split(separator: "/").first.map(String.init) ?? suite
    if names.contains(where: { $0.utf8.elementsEqual(suite.utf8) || $0.utf8.elementsEqual(first.utf8) }) { return nil }
    let shown = names.map { "'\(ShownText.escaped($0, limit: 60))'" }.joined(separator: " / ")
    return "it is the Release of \(shown), not of '\(ShownText.escaped(suite, limit: 60))' (Suite and Codename): "
      + "another suite's signed Release served in its place is not mirrored as this one"
  }

  /// How far ahead of now a Release's `Date` may be: apt's `Acquire::Max-FutureTime` (10 days).
  public static let maxFutureSeconds: Int64 = 10 * 86_400

  static func file(_ path: [UInt8], _ bytes: [UInt8]) -> RepositoryFile {
    RepositoryFile(path: path, size: Int64(bytes.count), sha256: FileDigest.hex(of: bytes, algorithm: .sha256))
  }

  /// The uncompressed variant of `target` among `targets` (its path without the compression's
  /// suffix), when the Release lists one.
  static func plainVariant(of target: AptIndexTarget, in targets: [AptIndexTarget]) -> AptIndexTarget? {
    guard let dot = target.path.lastIndex(of: 0x2E) else { return nil }
    let stem = target.path[..<dot]
    return targets.first { $0.compression == .none && $0.kind == target.kind && $0.path.elementsEqual(stem) }
  }

  /// How `bytes` differ from the Release line of `target`, or nil when they match. `known`: the
  /// bytes' SHA-256 when the caller computed it as they came (it is not computed again).
  static func mismatch(_ bytes: [UInt8], _ target: AptIndexTarget, known: String? = nil) -> String? {
    if Int64(bytes.count) != target.size {
      return "it holds \(bytes.count) bytes; the Release says \(target.size)"
    }
    let digest = known ?? FileDigest.hex(of: bytes, algorithm: .sha256)
    if digest != target.sha256 {
      return "its SHA-256 is \(digest); the Release says \(target.sha256)"
    }
    return nil
  }

  /// The index decompressed (bounded) and read.
  func read(_ bytes: [UInt8], _ target: AptIndexTarget) -> Result<AptIndex, RepositoryFailure> {
    let format: CompressionFormat
    switch target.compression {
    case .none: format = .uncompressed
    case .gzip: format = .gzip
    case .xz: format = .xz
    case .other:
      return .failure(RepositoryFailure(path: target.path, code: "descriptor", message: "batchdl cannot decompress it"))
    }
    var reader = AptIndexReader(kind: target.kind == .sources ? .sources : .packages, limits: indexLimits)
    do {
      _ = try bytes.withUnsafeBytes { input in
        try Decompression.decompress(input, format: format, limits: decompressionLimits) { chunk in
          reader.feed(
            UnsafeBufferPointer(start: chunk.baseAddress?.assumingMemoryBound(to: UInt8.self), count: chunk.count))
        }
      }
    } catch {
      return .failure(RepositoryFailure(path: target.path, code: "descriptor", message: "\(error)"))
    }
    switch reader.finish() {
    case .success(let index): return .success(index)
    case .failure(let problem):
      return .failure(RepositoryFailure(path: target.path, code: "descriptor", message: problem.description))
    }
  }
}

/// Several suites of one APT repository: each suite's chain (`AptFormat`), the pool files of all
/// merged, each path once (the same `.deb` in two suites is one file; two suites that give one
/// path different sizes or digests fail that path alone, `descriptor`).
public struct AptRepositoryFormat: RepositoryFormat {
  public var suites: [AptFormat]

  public init(suites: [AptFormat]) { self.suites = suites }

  public func step(_ documents: RepositoryDocuments) -> RepositoryStep {
    var requests: [RepositoryRequest] = []
    var seen: Set<[UInt8]> = []
    var results: [RepositoryResult] = []
    for suite in suites {
      switch suite.step(documents) {
      case .fetch(let asked):
        for request in asked where seen.insert(request.fetchPath).inserted { requests.append(request) }
      case .done(let result): results.append(result)
      }
    }
    if !requests.isEmpty { return .fetch(requests) }
    var merged = RepositoryResult()
    var pool = PoolMerger()
    for result in results {
      for file in result.pool { pool.add(file) }
      merged.parts += result.parts
      merged.verdicts += result.verdicts
      merged.failures += result.failures
    }
    merged.pool = pool.files
    merged.failures += pool.failures
    // A path two suites give different bytes is refused: the suites that name it are withheld.
    let conflicted = Set(pool.failures.map(\.path))
    for number in merged.parts.indices where merged.parts[number].withheld == nil {
      if let path = merged.parts[number].pool.first(where: { conflicted.contains($0) }) {
        merged.parts[number].withheld = "its indexes name \(AptPath.shown(path)), which is refused"
        merged.parts[number].indexes = []
        merged.parts[number].roots = []
      }
    }
    merged.indexes = merged.parts.flatMap(\.indexes)
    merged.roots = merged.parts.flatMap(\.roots)
    return .done(merged)
  }
}

/// Pool files, each path once: the same path with the same size and digest is one file; with
/// another, the path is refused (every copy of it).
struct PoolMerger {
  private(set) var files: [RepositoryFile] = []
  private(set) var failures: [RepositoryFailure] = []
  private var positions: [[UInt8]: Int] = [:]
  private var conflicted: Set<[UInt8]> = []

  mutating func add(_ file: RepositoryFile) {
    if conflicted.contains(file.path) { return }
    guard let position = positions[file.path] else {
      positions[file.path] = files.count
      files.append(file)
      return
    }
    let earlier = files[position]
    if earlier.size == file.size && earlier.sha256 == file.sha256 { return }
    conflicted.insert(file.path)
    files.remove(at: position)
    positions = Dictionary(uniqueKeysWithValues: files.enumerated().map { ($1.path, $0) })
    failures.append(
      RepositoryFailure(
        path: file.path, code: "descriptor",
        message: "indexes give this pool path different sizes or digests (\(earlier.size) bytes, \(earlier.sha256) "
          + "and \(file.size) bytes, \(file.sha256)); it is refused"))
  }
}

extension RepositoryResult {
  /// Records a document's failure (its verdict too).
  mutating func fail(_ path: [UInt8], _ code: String, _ message: String) {
    let failure = RepositoryFailure(path: path, code: code, message: message)
    failures.append(failure)
    verdicts.append(RepositoryVerdict(path: path, failure: failure))
  }
}
