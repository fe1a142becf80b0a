import BatchDLManifest
import BatchDLStore
import BatchDLSupport
import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLPlan

/// `PrunePlan.decide`: what a session's `prune:` deletes, from the plan, the state's records, what
/// failed and `max_delete`, as a value (the files are looked at only through the function given).
@Suite struct PrunePlanTests {
  /// A manifest whose session `s` (dest `m/`) downloads `names` and prunes with `prune`.
  static func manifest(_ names: [String], prune: String = "true", kind: String = "default") -> String {
    var yaml = "version: 1\nsessions:\n  s:\n    kind: \(kind)\n    dest: m/\n    prune: \(prune)\n"
    yaml += names.isEmpty ? "    tasks: []\n" : "    tasks:\n"
    for name in names { yaml += "      - download: http://example.org/\(name)\n        to: \(name)\n" }
    return yaml
  }

  static func record(_ path: String, session: String = "s") -> PlacedFile {
    PlacedFile(session: session, path: path, size: 1, modified: 1, inode: 1, device: 1)
  }

  static func decide(
    _ names: [String], records: [PlacedFile], prune: String = "true", blocked: String? = nil,
    files: [String: PlacedFileState] = [:]
  ) throws -> PrunePlan {
    let (_, plan) = try planned(manifest(names, prune: prune))
    return try #require(
      PrunePlan.decide(session: 0, plan: plan, records: records, blocked: blocked) { _, relative, _ in
        files[relative] ?? .placed
      })
  }

  @Test func deletesOnlyRecordedFilesNoTaskNames() throws {
    let decision = try Self.decide(
      ["a", "b"], records: [Self.record("m/a"), Self.record("m/b"), Self.record("m/c"), Self.record("m/d/e")])
    #expect(decision.deletions.map(\.path) == ["m/c", "m/d/e"])
    #expect(decision.deletions.map(\.relative) == ["c", "d/e"])
    #expect(decision.recorded == 4)
    #expect(decision.deletes)
    #expect(!decision.exceedsLimit)
  }

  @Test func anotherSessionsRecordsAreNotItsOwn() throws {
    let decision = try Self.decide(["a"], records: [Self.record("m/x", session: "other")])
    #expect(decision.deletions.isEmpty)
    #expect(decision.recorded == 0)
  }

  @Test func filesNotAsPlacedAreLeftAndForgotten() throws {
    let decision = try Self.decide(
      ["a"], records: [Self.record("m/gone"), Self.record("m/mine"), Self.record("m/link")],
      files: ["gone": .missing, "mine": .changed("replaced"), "link": .changed("a symbolic link is there now")])
    #expect(decision.deletions.isEmpty)
    #expect(decision.gone == ["m/gone"])
    #expect(decision.changed.map(\.path) == ["m/link", "m/mine"])
    #expect(Set(decision.forgotten) == ["m/gone", "m/mine", "m/link"])
  }

  @Test func recordsOutsideDestAreNeverDeleted() throws {
    let decision = try Self.decide(
      ["a"],
      records: [
        Self.record("../x"), Self.record("/etc/passwd"), Self.record("m/../x"), Self.record("m/./x"),
        Self.record("m//x"), Self.record("x"), Self.record("m"), Self.record(""), Self.record("m/a\u{1}"),
      ])
    #expect(decision.deletions.isEmpty)
    #expect(decision.refused.count == 9)
    #expect(decision.recorded == 0)
  }

  @Test func inspectIsNotAskedAboutRefusedOrNamedRecords() throws {
    let (_, plan) = try planned(Self.manifest(["a"]))
    var asked: [String] = []
    _ = PrunePlan.decide(session: 0, plan: plan, records: [Self.record("m/a"), Self.record("../m/b")]) {
      _, relative, _ in
      asked.append(relative)
      return .placed
    }
    #expect(asked.isEmpty)
  }

  @Test func aCountLimitRefusesMoreThanItAllows() throws {
    let records = (0..<10).map { Self.record("m/f\($0)") }
    let within = try Self.decide(
      ["f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7"], records: records, prune: "{max_delete: 2}")
    #expect(within.deletions.count == 2)
    #expect(!within.exceedsLimit)
    let over = try Self.decide(["f0", "f1"], records: records, prune: "{max_delete: 2}")
    #expect(over.deletions.count == 8)
    #expect(over.exceedsLimit)
    #expect(!over.deletes)
    #expect(over.limitMessage.contains("would delete 8 of the 10 files"))
    #expect(over.limitMessage.contains("--no-prune"))
    #expect(over.limitMessage.contains("raise prune.max_delete"))
  }

  @Test func aShareLimitCountsTheRecordedFiles() throws {
    let records = (0..<10).map { Self.record("m/f\($0)") }
    // The list shrank to 2 of its 10 lines: 8 would go, 50% of 10 allows 5.
    let shrunk = try Self.decide(["f0", "f1"], records: records, prune: "{max_delete: \"50%\"}")
    #expect(shrunk.exceedsLimit)
    #expect(shrunk.allowed == 5)
    // Exactly half may go.
    let half = try Self.decide(["f0", "f1", "f2", "f3", "f4"], records: records, prune: "{max_delete: \"50%\"}")
    #expect(!half.exceedsLimit)
    #expect(half.deletions.count == 5)
    // An empty listing with any share below 100%.
    let empty = try Self.decide([], records: records, prune: "{max_delete: \"10%\"}")
    #expect(empty.exceedsLimit)
    #expect(empty.deletions.count == 10)
  }

  @Test func aFailureBlocksEverything() throws {
    let decision = try Self.decide(["a"], records: [Self.record("m/b")], blocked: "1 of its tasks failed")
    #expect(decision.deletions.map(\.path) == ["m/b"])
    #expect(!decision.deletes)
  }

  @Test func aSessionWithoutPruneHasNoPlan() throws {
    let (_, plan) = try planned(Self.manifest(["a"], prune: "false"))
    #expect(PrunePlan.decide(session: 0, plan: plan, records: [Self.record("m/b")]) { _, _, _ in .placed } == nil)
  }

  @Test func failedDescriptorsBlockTheirSession() throws {
    let (_, plan) = try planned(Self.manifest(["a"]))
    #expect(PruneDecisions.failures(of: 0, plan: plan, summary: nil) == nil)
    var summary = RunSummary()
    summary.failed = 1
    #expect(PruneDecisions.failures(of: 0, plan: plan, summary: summary)?.contains("failed") == true)
    var withDocument = plan
    withDocument.descriptors = [
      PlannedDescriptor(session: 0, entry: 0, url: "http://example.org/x.meta4", outcome: .failed)
    ]
    #expect(PruneDecisions.failures(of: 0, plan: withDocument, summary: nil)?.contains("x.meta4") == true)
    // A URL's stored copy (the server could not be reached) may be stale; a local file is current.
    withDocument.descriptors = [
      PlannedDescriptor(session: 0, entry: 0, url: "https://example.org/SHA256SUMS", outcome: .storedCopy)
    ]
    #expect(PruneDecisions.failures(of: 0, plan: withDocument, summary: nil) != nil)
    withDocument.descriptors = [PlannedDescriptor(session: 0, entry: 0, url: "SHA256SUMS", outcome: .storedCopy)]
    #expect(PruneDecisions.failures(of: 0, plan: withDocument, summary: nil) == nil)
    withDocument.descriptors = [
      PlannedDescriptor(session: 0, entry: 0, url: "https://example.org/pub/", outcome: .notModified)
    ]
    #expect(PruneDecisions.failures(of: 0, plan: withDocument, summary: nil) == nil)
    // Another session's failed document is not this one's.
    withDocument.descriptors = [
      PlannedDescriptor(session: 1, entry: 0, url: "https://example.org/pub/", outcome: .failed)
    ]
    #expect(PruneDecisions.failures(of: 0, plan: withDocument, summary: nil) == nil)
  }

  @Test func limitsAreWhatTheManifestWrites() {
    #expect(PruneLimit.count(50).description == "50")
    #expect(PruneLimit.percent(10).description == "10%")
    #expect(PruneLimit.percent(50).allowed(recorded: 10) == 5)
    #expect(PruneLimit.percent(10).allowed(recorded: 9) == 0)
    #expect(PruneLimit.count(3).allowed(recorded: 1) == 3)
  }
}

/// `PruneFiles`: the file checks and removal a run makes, on real files, links never followed.
@Suite struct PruneFilesTests {
  @Test func removesThePlacedFileAndTheFoldersItEmptied() throws {
    let folder = TemporaryDirectory()
    folder.write("m/d/e/f.txt", "x")
    folder.write("m/keep.txt", "y")
    let identity = try #require(FileIdentity(path: folder.path + "/m/d/e/f.txt"))
    let record = PlacedFile(session: "s", path: "m/d/e/f.txt", identity: identity)
    #expect(PruneFiles.inspect(root: folder.path + "/m", relative: "d/e/f.txt", record: record) == .placed)
    #expect(PruneFiles.remove(root: folder.path + "/m", relative: "d/e/f.txt", record: record) == .placed)
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/m/d"))
    #expect(FileManager.default.fileExists(atPath: folder.path + "/m/keep.txt"))
  }

  @Test func aReplacedFileIsLeft() throws {
    let folder = TemporaryDirectory()
    folder.write("m/f.txt", "x")
    let identity = try #require(FileIdentity(path: folder.path + "/m/f.txt"))
    let record = PlacedFile(session: "s", path: "m/f.txt", identity: identity)
    unlink(folder.path + "/m/f.txt")
    folder.write("m/f.txt", "mine")
    guard case .changed = PruneFiles.remove(root: folder.path + "/m", relative: "f.txt", record: record) else {
      Issue.record("a replaced file was removed")
      return
    }
    #expect(folder.read("m/f.txt") == "mine")
  }

  @Test func aLinkedFolderIsNotFollowed() throws {
    let folder = TemporaryDirectory()
    folder.write("m/d/f.txt", "x")
    let identity = try #require(FileIdentity(path: folder.path + "/m/d/f.txt"))
    let record = PlacedFile(session: "s", path: "m/d/f.txt", identity: identity)
    // The folder moves outside dest (the file keeps its inode) and a link takes its place.
    #expect(rename(folder.path + "/m/d", folder.path + "/outside") == 0)
    #expect(symlink(folder.path + "/outside", folder.path + "/m/d") == 0)
    guard case .changed = PruneFiles.remove(root: folder.path + "/m", relative: "d/f.txt", record: record) else {
      Issue.record("a file was removed through a symbolic link")
      return
    }
    #expect(folder.read("outside/f.txt") == "x")
  }

  @Test func aLinkAtThePathIsNotFollowed() throws {
    let folder = TemporaryDirectory()
    folder.write("victim.txt", "x")
    let identity = try #require(FileIdentity(path: folder.path + "/victim.txt"))
    let record = PlacedFile(session: "s", path: "m/f.txt", identity: identity)
    folder.write("m/other.txt", "")
    #expect(symlink(folder.path + "/victim.txt", folder.path + "/m/f.txt") == 0)
    #expect(
      PruneFiles.remove(root: folder.path + "/m", relative: "f.txt", record: record)
        == .changed("a symbolic link is there now"))
    #expect(folder.read("victim.txt") == "x")
  }
}
