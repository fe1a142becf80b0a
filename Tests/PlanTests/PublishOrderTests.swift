import TestServer
import TestSupport
import Testing

@testable import BatchDLManifest
@testable import BatchDLPlan
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// Publication is manifest-wide (no sockets): a download that mirrors a checksum file or an index
/// page, in whatever session, waits for the files it covers in every session and is pinned to the
/// bytes the plan read; and a listing upstream did not give, whose stored copy plans its files,
/// fails as one task.
@Suite struct PublishOrderTests {
  static let a = String(repeating: "a", count: 64)
  static let b = String(repeating: "b", count: 64)
  static let sums = "\(a)  a.iso\n\(b)  b.iso\n"

  /// Plans `yaml` with `https://h/pub/SHA256SUMS` read as `sums` for every session that names it.
  func plan(_ yaml: String) throws -> Plan {
    let folder = TemporaryDirectory()
    let path = folder.write("manifest.yaml", yaml)
    let (loaded, diagnostics) = ManifestLoader.read(path: path, environment: [:])
    let manifest = try #require(loaded, "\(diagnostics)")
    var set = DescriptorSet()
    for session in manifest.sessions {
      for spec in (session.checksums.map { [$0] } ?? []) + session.tasks.compactMap(\.checksums) {
        for source in spec.files {
          var document = ChecksumDocument(display: source.location, url: source.location, outcome: .fetched)
          document.file = ChecksumFile.parse(Array(Self.sums.utf8), file: source.location)
          document.sha256 = SHA256Digest.hex(Array(Self.sums.utf8))
          set.checksums[DescriptorSet.key(of: source, keyring: spec.keyring, for: session, in: manifest)] = document
        }
      }
    }
    return try Planner().plan(manifest, warnings: diagnostics, descriptors: set)
  }

  func task(_ plan: Plan, _ id: String) -> PlannedTask? { plan.tasks.first { plan.id(of: $0) == id } }

  /// The mirrored checksum file in the covered files' session, in another session with the same or
  /// another `dest`, before or after them in the manifest: the same waits and the same pin.
  @Test func theMirroredChecksumFileWaitsAndIsPinnedWhateverItsSession() throws {
    let files = """
        files:
          dest: m
          checksums: https://h/pub/SHA256SUMS
          tasks:
            - download: https://h/pub/a.iso
            - download: https://h/pub/b.iso
      """
    let shapes: [(name: String, yaml: String, id: String)] = [
      (
        "same session",
        files + "\n      - download: https://h/pub/SHA256SUMS\n", "m/SHA256SUMS"
      ),
      (
        "another session, same dest",
        files + "\n  meta:\n    dest: m\n    tasks:\n      - download: https://h/pub/SHA256SUMS\n", "m/SHA256SUMS"
      ),
      (
        "another session first, another dest",
        "  meta:\n    dest: n\n    tasks:\n      - download: https://h/pub/SHA256SUMS\n" + files + "\n",
        "n/SHA256SUMS"
      ),
    ]
    for shape in shapes {
      let plan = try plan("version: 1\nsessions:\n" + shape.yaml)
      let sums = try #require(task(plan, shape.id), "\(shape.name)")
      let covered = Set(["m/a.iso", "m/b.iso"].compactMap { task(plan, $0)?.request })
      #expect(covered.count == 2, "\(shape.name)")
      #expect(Set(plan.requests[Int(sums.request)].dependencies) == covered, "\(shape.name)")
      #expect(Set(plan.publishedAfter[sums.request] ?? []) == covered, "\(shape.name)")
      #expect(
        plan.expectation(of: sums)?.digest
          == ExpectedDigest(algorithm: .sha256, hex: SHA256Digest.hex(Array(Self.sums.utf8))),
        "\(shape.name): the mirrored copy must be the bytes the files were checked with")
      // The publish wait never joins the covered files into the checksum file's shard.
      #expect(plan.requests[Int(sums.request)].shardKey == plan.requests[Int(sums.request)].key, "\(shape.name)")
    }
  }

  static let indexYAML = """
    version: 1
    sessions:
      s:
        dest: m
        tasks:
          - index: https://h/pub/
          - download: https://h/pub/
            to: index.html
    """

  /// Plans `indexYAML` with its listing read as `page`, with `outcome`.
  func planIndex(page: String, outcome: DescriptorOutcome) throws -> Plan {
    let folder = TemporaryDirectory()
    let path = folder.write("manifest.yaml", Self.indexYAML)
    let (loaded, diagnostics) = ManifestLoader.read(path: path, environment: [:])
    let manifest = try #require(loaded, "\(diagnostics)")
    let session = manifest.sessions[0]
    guard case .index(let spec) = session.tasks[0] else { throw PlanFailed(description: "no index entry") }
    var crawl = IndexCrawl()
    let listing = DirectoryIndex.parse(Array(page.utf8), folderURL: spec.url, contentType: "text/html")
    crawl.folders.append(DirectoryIndex.FetchedFolder(path: "", url: spec.url, listing: listing))
    crawl.pages.append(
      ListingPage(
        url: spec.url, outcome: outcome, sha256: SHA256Digest.hex(Array(page.utf8)),
        failure: outcome == .failed ? "cannot fetch it (HTTP 500); the stored copy is used, and the run fails" : nil))
    var set = DescriptorSet()
    set.listings[DescriptorSet.key(of: spec, for: session, in: manifest)] = crawl
    return try Planner().plan(manifest, warnings: diagnostics, descriptors: set)
  }

  /// The mirrored index page is pinned to the crawled bytes and waits for the files it lists; a
  /// page upstream did not give still plans its files from the stored copy, and fails as one task.
  @Test func aMirroredIndexPageIsPinnedAndAStaleListingFailsAsOneTask() throws {
    let page = IndexExpansionTests.page("/pub/", [("a.iso", "100"), ("b.iso", "200")])
    for outcome in [DescriptorOutcome.fetched, .notModified, .failed] {
      let plan = try planIndex(page: page, outcome: outcome)
      let mirrored = try #require(task(plan, "m/index.html"))
      #expect(
        plan.expectation(of: mirrored)?.digest
          == ExpectedDigest(algorithm: .sha256, hex: SHA256Digest.hex(Array(page.utf8))),
        "\(outcome)")
      let covered = Set(["m/a.iso", "m/b.iso"].compactMap { task(plan, $0)?.request })
      #expect(covered.count == 2, "the stored copy plans the files: \(outcome)")
      #expect(Set(plan.publishedAfter[mirrored.request] ?? []) == covered, "\(outcome)")
      let standIns = plan.descriptors.compactMap(\.task)
      #expect(standIns.count == (outcome == .failed ? 1 : 0), "\(outcome)")
      #expect(plan.descriptors.first?.outcome == outcome, "\(outcome)")
    }
  }
}

/// `checkPublishCycles`: a covered download `after:` its own mirrored document is an error at the
/// reference, from the manifest alone (no document read), unless the task is not covered.
@Suite struct PublishCycleCheckTests {
  func problems(_ tasks: String, session: String = "") throws -> [String] {
    let folder = TemporaryDirectory()
    let yaml = "version: 1\nsessions:\n  s:\n    dest: m\n" + session + "    tasks:\n" + tasks
    let path = folder.write("manifest.yaml", yaml)
    let (loaded, diagnostics) = ManifestLoader.read(path: path, environment: [:])
    let manifest = try #require(loaded, "\(diagnostics)")
    do {
      _ = try Planner().plan(manifest, warnings: diagnostics, descriptors: nil)
      return []
    } catch {
      return error.diagnostics.filter { $0.severity == .error }.map(\.description)
    }
  }

  @Test func aCoveredFileAfterItsMirroredDocumentIsACycleUnlessItIsNotCovered() throws {
    let sums = "    checksums: https://h/pub/SHA256SUMS\n"
    let cases: [(name: String, session: String, tasks: String, cycle: Bool)] = [
      (
        "session checksums", sums,
        "      - download: https://h/pub/a.iso\n        after: [m/SHA256SUMS]\n      - download: https://h/pub/SHA256SUMS\n",
        true
      ),
      (
        "the task's own checksums", "",
        "      - download: https://h/pub/a.iso\n        checksums: https://h/pub/SHA256SUMS\n        after: [m/SHA256SUMS]\n      - download: https://h/pub/SHA256SUMS\n",
        true
      ),
      (
        "a digest of its own", sums,
        "      - download: https://h/pub/a.iso\n        sha256: \(String(repeating: "a", count: 64))\n        after: [m/SHA256SUMS]\n      - download: https://h/pub/SHA256SUMS\n",
        false
      ),
      (
        "not covered", "",
        "      - download: https://h/pub/a.iso\n        after: [m/SHA256SUMS]\n      - download: https://h/pub/SHA256SUMS\n",
        false
      ),
    ]
    for item in cases {
      let found = try problems(item.tasks, session: item.session)
      if item.cycle {
        #expect(found.count == 1 && found[0].contains("publish order"), "\(item.name): \(found)")
        #expect(found.first?.contains("manifest.yaml:") == true, "\(item.name): \(found)")
      } else {
        #expect(found.isEmpty, "\(item.name): \(found)")
      }
    }
  }
}
