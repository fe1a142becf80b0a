import Foundation
import TestSupport
import Testing

@testable import BatchDL

/// Plans `yaml` in a new folder; fails the test when it does not plan.
func planned(_ yaml: String, files: [String: String] = [:]) throws -> (folder: TemporaryDirectory, plan: Plan) {
  let (folder, result) = ManifestFixture.plan(yaml, files: files)
  return (folder, try result.get())
}

/// The request whose first task has id `id`.
func request(_ plan: Plan, id: String) throws -> PlannedRequest {
  try #require(plan.requests.first { plan.id(of: plan.tasks[Int($0.firstTask)]) == id })
}

@Suite struct DestinationTests {
  static let yaml = """
    version: 1
    sessions:
      s:
        dest: out
        tasks:
          - data: http://h.test/a
            to: a-data.json
          - download: http://h.test/a
            to: a.bin
          - data: http://h.test/b
            to: b.json
            become_download: {larger_than: 1MB}
          - data: http://h.test/c
            to: c.json
          - data: http://h.test/d
    """

  @Test func theOwnerIsTheFirstDownloadElseADataTaskThatMayBecomeOne() throws {
    let (folder, plan) = try planned(Self.yaml)
    let a = try request(plan, id: "out/a-data.json")
    let owner = try #require(plan.owner(of: a))
    #expect(plan.id(of: owner) == "out/a.bin")
    #expect(plan.absoluteDestination(of: owner) == folder.path + "/out/a.bin")
    #expect(plan.partialPath(of: a) == folder.path + "/out/a.bin.batchdl-part")
    let b = try request(plan, id: "out/b.json")
    #expect(plan.owner(of: b).map(plan.id(of:)) == "out/b.json")
    // A data task's body stays in memory and is written whole: no partial file.
    #expect(plan.owner(of: try request(plan, id: "out/c.json")) == nil)
    #expect(plan.partialPath(of: try request(plan, id: "out/c.json")) == nil)
    #expect(plan.owner(of: try request(plan, id: "http://h.test/d")) == nil)
  }
}

@Suite struct FilePlacerTests {
  @Test func itMakesFoldersAndWritesAndCopiesFilesWhole() throws {
    let (folder, plan) = try planned(
      "version: 1\nsessions:\n  s:\n    dest: out\n    tasks:\n      - download: http://h.test/x\n        to: deep/x.bin\n"
    )
    let task = plan.tasks[0]
    let placer = FilePlacer(plan: plan, stateFolder: nil)
    let path = try #require(plan.absoluteDestination(of: task))
    let made = try placer.prepare(path, for: task)
    #expect(made == folder.path + "/out/deep")
    _ = try placer.write(Array("hello".utf8), to: path, folder: made, naming: "deep/x.bin")
    #expect(folder.read("out/deep/x.bin") == "hello")
    try FilePlacer.copy(path, to: path + ".copy")
    #expect(folder.read("out/deep/x.bin.copy") == "hello")
    #expect(!folder.exists("out/deep/x.bin.copy.batchdl-part"))
    placer.close()
  }

  @Test func aSymbolicLinkOutOfDestIsRefused() throws {
    let outside = TemporaryDirectory()
    let (folder, plan) = try planned(
      "version: 1\nsessions:\n  s:\n    dest: out\n    tasks:\n      - download: http://h.test/x\n        to: link/x.bin\n"
    )
    try FileManager.default.createDirectory(atPath: folder.path + "/out", withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(atPath: folder.path + "/out/link", withDestinationPath: outside.path)
    let task = plan.tasks[0]
    let path = try #require(plan.absoluteDestination(of: task))
    #expect(throws: TransferFailure.self) { try FilePlacer(plan: plan, stateFolder: nil).prepare(path, for: task) }
    do {
      try FilePlacer(plan: plan, stateFolder: nil).prepare(path, for: task)
    } catch {
      #expect(error.code == .unsafePath)
    }
  }
}

@Suite struct JobBuilderTests {
  static let yaml = """
    version: 1
    sessions:
      s:
        headers: {X-Api-Key: "k", Accept: "*/*", X-Trace: "session"}
        tasks:
          - download: http://h.test/file.bin
            headers: {X-Trace: "task"}
          - data: http://h.test/info
    """

  @Test func aDownloadGoesToItsPartialFileWithTheTasksHeadersOverTheSessions() throws {
    let (folder, plan) = try planned(Self.yaml)
    let state = StateFolder(option: nil, manifest: plan.manifest)
    let builder = JobBuilder(plan: plan, state: state, redactor: Redactor())
    let download = try request(plan, id: "file.bin")
    let (spec, owner) = builder.spec(for: download)
    guard case .file(let partial) = spec.target else {
      Issue.record("expected a file target, got \(spec.target)")
      return
    }
    #expect(partial == folder.path + "/file.bin.batchdl-part")
    #expect(owner?.path == folder.path + "/file.bin")
    #expect(spec.headers.filter { $0.hasPrefix("X-Trace:") } == ["X-Trace: task"])
    #expect(spec.originOnlyHeaders == ["x-api-key"])
    #expect(!spec.decodeContent)
    let (data, none) = builder.spec(for: try request(plan, id: "http://h.test/info"))
    guard case .memory(let limit, nil) = data.target else {
      Issue.record("expected memory, got \(data.target)")
      return
    }
    #expect(limit == Runner.dataMemoryLimit && none == nil && data.decodeContent)
  }

  @Test func theSessionsTLSSettingsAndHTTPVersionReachItsTransfers() throws {
    let (folder, plan) = try planned(
      """
      version: 1
      sessions:
        s:
          tls: {ca_file: ca.pem, min_version: 1.3}
          network: {http_version: 1.1}
          tasks:
            - download: https://h.test/file.bin
      """, files: ["ca.pem": "ca"])
    let builder = JobBuilder(plan: plan, state: StateFolder(option: nil, manifest: plan.manifest), redactor: Redactor())
    let (spec, _) = builder.spec(for: try request(plan, id: "file.bin"))
    #expect(spec.tls.caFile == folder.path + "/ca.pem")
    #expect(spec.tls.minVersion == .tls1_3)
    #expect(spec.httpVersion == .http1_1)
  }

  @Test func aResumeContinuesFromTheCheckpointAndCountsTheTimeSpent() throws {
    let (folder, plan) = try planned(Self.yaml)
    let download = try request(plan, id: "file.bin")
    folder.write("file.bin.batchdl-part", String(repeating: "x", count: 5000))
    var prior = PriorState()
    let key = download.key.description
    prior.checkpoints[key] = Checkpoint(
      key: key, partial: folder.path + "/file.bin.batchdl-part", url: "http://h.test/file.bin", etag: "\"v1\"",
      lastModified: nil, total: 9000, durable: 4096)
    prior.budgets[key] = (spent: 1234, attempts: 2)
    let builder = JobBuilder(plan: plan, state: StateFolder(option: nil, manifest: plan.manifest), redactor: Redactor())
    let job = builder.job(
      for: download, action: .resume(offset: 4096), cached: nil, prior: prior, dependencies: [],
      placer: FilePlacer(plan: plan, stateFolder: nil))
    #expect(job.spec.resume == TransferSpec.Resume(offset: 4096, validator: .etag("\"v1\""), total: 9000))
    #expect(job.spec.spentBefore == 1234)
    #expect(job.failure == nil)
  }
}

@Suite struct StateRecorderTests {
  @Test func resultsAreRecordedAndEphemeralSessionsRecordNothing() throws {
    let (folder, plan) = try planned(
      """
      version: 1
      sessions:
        kept:
          tasks:
            - download: http://h.test/a
        gone:
          kind: ephemeral
          tasks:
            - download: http://h.test/b
      """)
    _ = folder
    let state = StateFolder(option: nil, manifest: plan.manifest)
    let recorder = StateRecorder(plan: plan, redactor: Redactor())
    let kept = try request(plan, id: "a")
    let gone = try request(plan, id: "b")
    #expect(!recorder.persists(kept))
    recorder.open(try state.openStore(), prior: PriorState(), warn: { Issue.record("\($0)") })
    #expect(recorder.persists(kept) && !recorder.persists(gone))
    for request in [kept, gone] {
      let task = plan.tasks[Int(request.firstTask)]
      let result = TaskResult(
        id: plan.id(of: task), session: "", kind: .download, url: "", to: nil, outcome: .completed, size: 1)
      recorder.remember(task, result, request: request, head: nil)
      recorder.spent(10, attempts: 1, on: request)
    }
    recorder.flush(force: true)
    recorder.close()
    let store = try #require(try state.openStore(readOnly: true))
    #expect(Set(try store.results().ids) == ["a"])
  }
}
