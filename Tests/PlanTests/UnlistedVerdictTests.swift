import TestServer
import TestSupport
import Testing

@testable import BatchDLManifest
@testable import BatchDLPlan
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// `unlisted:` and `checksums: sidecar` as the planner decides them (no sockets, no gpgv): what a
/// covered file that no entry names gets, the hint its failure gives, and what a sidecar in each
/// state makes of its file.
@Suite struct UnlistedVerdictTests {
  static let a = String(repeating: "a", count: 64)

  /// The manifest `yaml`, loaded from a temporary folder (with a list file `urls.txt`).
  func load(_ yaml: String, in folder: TemporaryDirectory = TemporaryDirectory()) throws -> (Manifest, [Diagnostic]) {
    folder.write("urls.txt", "https://h/pub/b.iso\n")
    let path = folder.write("manifest.yaml", yaml)
    let (loaded, diagnostics) = ManifestLoader.read(path: path, environment: [:])
    return (try #require(loaded, "\(diagnostics)"), diagnostics)
  }

  /// `SUMS` lists `a.iso` only; `b.iso` is covered, by a task or a list line.
  func plan(entry: String, unlisted: String?) throws -> Plan {
    let folder = TemporaryDirectory()
    defer { withExtendedLifetime(folder) {} }
    let (manifest, diagnostics) = try load(
      """
      version: 1
      sessions:
        s:
          checksums: https://h/pub/SUMS
      \(unlisted.map { "    unlisted: \($0)" } ?? "")
          tasks:
            - \(entry)
      """, in: folder)
    var set = DescriptorSet()
    let session = manifest.sessions[0]
    let source = try #require(session.checksums?.files.first)
    var document = ChecksumDocument(display: source.location, url: source.location, outcome: .fetched)
    document.file = ChecksumFile.parse(Array("\(Self.a)  a.iso\n".utf8), file: source.location)
    set.checksums[DescriptorSet.key(of: source, keyring: nil, for: session, in: manifest)] = document
    return try Planner().plan(manifest, warnings: diagnostics, descriptors: set)
  }

  struct Case: Sendable, CustomTestStringConvertible {
    var entry: String
    var unlisted: String?
    /// `failed` (with `hint` in its message), `unverified` or `skipped`.
    var outcome: String
    var hint = ""
    var testDescription: String { "\(entry) unlisted: \(unlisted ?? "-")" }
  }

  static let cases: [Case] = [
    Case(entry: "download: https://h/pub/b.iso", unlisted: nil, outcome: "failed", hint: "add the file's sha256:"),
    Case(entry: "download: https://h/pub/b.iso", unlisted: "fail", outcome: "failed", hint: "'unlisted: fetch'"),
    Case(entry: "download: https://h/pub/b.iso", unlisted: "fetch", outcome: "unverified"),
    Case(entry: "download: https://h/pub/b.iso", unlisted: "skip", outcome: "skipped"),
    Case(entry: "list: urls.txt", unlisted: nil, outcome: "failed", hint: "give its line a sha256:HEX column"),
    Case(entry: "list: urls.txt", unlisted: "fetch", outcome: "unverified"),
    Case(entry: "list: urls.txt", unlisted: "skip", outcome: "skipped"),
  ]

  @Test(arguments: cases) func aFileNoEntryNamesGetsWhatUnlistedSays(_ item: Case) throws {
    let plan = try plan(entry: item.entry, unlisted: item.unlisted)
    let task = plan.tasks.first { plan.url(of: $0).hasSuffix("b.iso") }
    switch item.outcome {
    case "skipped":
      #expect(task == nil)
    case "unverified":
      let found = try #require(task)
      #expect(plan.unverifiedRequests.contains(found.request))
      #expect(plan.refusedRequests[found.request] == nil)
    default:
      let found = try #require(task)
      let refusal = try #require(plan.refusedRequests[found.request])
      #expect(refusal.code == .checksumMissing)
      #expect(refusal.message.contains(item.hint), "\(refusal.message)")
      #expect(refusal.message.contains("unlisted: skip"), "\(refusal.message)")
    }
  }

  /// The hint of each kind of entry: only what that entry accepts.
  @Test(arguments: [
    ("download: https://h/pub/b.iso", "add the file's sha256: to the task", "exclude:"),
    ("list: urls.txt", "give its line a sha256:HEX column", "to the task"),
    ("index: https://h/pub/", "leave the file out with exclude:", "sha256"),
  ])
  func theHintNamesWhatTheEntryTakes(_ entry: String, _ says: String, _ never: String) throws {
    let (manifest, _) = try load(
      """
      version: 1
      sessions:
        s:
          checksums: https://h/pub/SUMS
          tasks:
            - \(entry)
      """)
    let builder = PlanBuilder(manifest: manifest, maxProblemsPerList: 10)
    let spec = try #require(manifest.sessions[0].checksums)
    let hint = builder.unlistedHint(spec, sessionIndex: 0, entryIndex: 0)
    #expect(hint.contains(says) && !hint.contains(never), "\(hint)")
    #expect(hint.contains("unlisted: fetch") && hint.contains("unlisted: skip"), "\(hint)")
  }

  /// What a sidecar in each state makes of `b.iso` under `checksums: sidecar`.
  enum SidecarState: String, Sendable, CaseIterable {
    case good, namesAnother, absentFail, absentFetch, absentSkip, failed
  }

  @Test(arguments: SidecarState.allCases) func aSidecarDecidesItsFile(_ state: SidecarState) throws {
    let unlisted: String
    switch state {
    case .absentFetch: unlisted = "fetch"
    case .absentSkip: unlisted = "skip"
    default: unlisted = "fail"
    }
    let (manifest, diagnostics) = try load(
      """
      version: 1
      sessions:
        s:
          checksums: sidecar
          unlisted: \(unlisted)
          tasks:
            - download: https://h/pub/b.iso
      """)
    // Without the sidecar, the plan asks for it.
    let first = try Planner().plan(manifest, warnings: diagnostics, descriptors: DescriptorSet())
    #expect(first.wantedSidecars.map(\.url) == ["https://h/pub/b.iso"])
    var sidecar = SidecarDocument(
      url: "https://h/pub/b.iso.sha256", display: "https://h/pub/b.iso.sha256", outcome: .fetched)
    switch state {
    case .good: sidecar.body = Array("\(Self.a)  b.iso\n".utf8)
    case .namesAnother: sidecar.body = Array("\(Self.a)  c.iso\n".utf8)
    case .absentFail, .absentFetch, .absentSkip:
      sidecar = SidecarDocument(url: nil, display: "b.iso.sha256 or b.iso.sha512", outcome: .missing)
      sidecar.absent = true
    case .failed:
      sidecar = SidecarDocument(url: nil, display: "https://h/pub/b.iso.sha256", outcome: .failed)
      sidecar.failure = "the server answered 500"
    }
    var set = DescriptorSet()
    set.sidecars[DescriptorSet.key(of: "https://h/pub/b.iso", for: manifest.sessions[0], in: manifest)] =
      SidecarPair(checksum: sidecar)
    let plan = try Planner().plan(manifest, warnings: diagnostics, descriptors: set)
    #expect(plan.wantedSidecars.isEmpty)
    let task = plan.tasks.first
    switch state {
    case .good:
      let found = try #require(task)
      #expect(plan.expectation(of: found)?.digest?.hex == Self.a)
    case .namesAnother, .failed:
      #expect(task.flatMap { plan.refusedRequests[$0.request] }?.code == .descriptor)
    case .absentFail:
      #expect(task.flatMap { plan.refusedRequests[$0.request] }?.code == .checksumMissing)
    case .absentFetch:
      #expect(task.map { plan.unverifiedRequests.contains($0.request) } == true)
    case .absentSkip:
      #expect(task == nil)
    }
  }
}
