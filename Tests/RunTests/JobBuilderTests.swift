import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLStore
@testable import BatchDLSupport
@testable import BatchDLTransfer

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
