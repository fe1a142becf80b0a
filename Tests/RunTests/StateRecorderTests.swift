import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLStore
@testable import BatchDLSupport

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

  @Test func aPartialFileIsRecordedBeforeItsFirstByteAndForgottenWhenItsDownloadEnds() throws {
    let (folder, plan) = try planned(
      """
      version: 1
      sessions:
        kept:
          tasks:
            - download: http://h.test/a
            - download: http://h.test/b
            - download: http://h.test/c
        gone:
          kind: ephemeral
          tasks:
            - download: http://h.test/d
      """)
    _ = folder
    let state = StateFolder(option: nil, manifest: plan.manifest)
    let (a, b, c, d) = (
      try request(plan, id: "a"), try request(plan, id: "b"), try request(plan, id: "c"), try request(plan, id: "d")
    )
    // An earlier run's checkpoint of c, which the record must not replace.
    var prior = PriorState()
    let kept = Checkpoint(
      key: c.key.description, partial: try #require(plan.partialPath(of: c)), url: "http://h.test/c", etag: "\"c\"",
      lastModified: nil, total: 100, durable: 40)
    prior.checkpoints[c.key.description] = kept
    do {
      let store = try #require(try state.openStore())
      try store.update(checkpoints: [kept])
    }
    let recorder = StateRecorder(plan: plan, redactor: Redactor())
    recorder.open(try state.openStore(), prior: prior, warn: { Issue.record("\($0)") })
    recorder.recordStarts([a, b, c, d])
    var store = try #require(try state.openStore(readOnly: true))
    var points = try store.checkpoints()
    // Each download's partial file is known before anything is sent; the ephemeral one is not.
    #expect(Set(points.keys) == Set([a, b, c].map(\.key.description)))
    #expect(points[a.key.description]?.partial == plan.partialPath(of: a))
    #expect(points[a.key.description]?.holdsBytes == false)
    #expect(points[c.key.description] == kept)
    // A record holds nothing to go on from: no failure keeps a partial file for it.
    #expect(!recorder.hasCheckpoint(a) && recorder.hasCheckpoint(c))
    // a ends (completed or failed for good), b is answered 304: their records go; c's stays.
    recorder.finished(a)
    recorder.notWritten(b)
    recorder.flush(force: true)
    recorder.close()
    store = try #require(try state.openStore(readOnly: true))
    points = try store.checkpoints()
    #expect(Set(points.keys) == [c.key.description])
  }

  @Test func aRecordOfAnotherPartialFileGivesWayOnlyOnceThatFileIsGone() throws {
    let (folder, plan) = try planned(
      """
      version: 1
      sessions:
        s:
          dest: pub
          partial_dir: ../.partial
          tasks:
            - download: http://h.test/a
            - download: http://h.test/b
      """)
    let state = StateFolder(option: nil, manifest: plan.manifest)
    let (a, b) = (try request(plan, id: "pub/a"), try request(plan, id: "pub/b"))
    // Before partial_dir was set, both were partial files beside their files; a's is still there.
    folder.write("pub/a.batchdl-part", "half\n")
    var prior = PriorState()
    for (item, name) in [(a, "a"), (b, "b")] {
      prior.checkpoints[item.key.description] = Checkpoint(
        key: item.key.description, partial: folder.path + "/pub/\(name).batchdl-part", url: "http://h.test/" + name,
        etag: "\"1\"", lastModified: nil, total: 10, durable: 5)
    }
    do {
      let store = try #require(try state.openStore())
      try store.update(checkpoints: Array(prior.checkpoints.values))
    }
    let recorder = StateRecorder(plan: plan, redactor: Redactor())
    recorder.open(try state.openStore(), prior: prior, warn: { Issue.record("\($0)") })
    recorder.recordStarts([a, b])
    recorder.close()
    let points = try #require(try state.openStore(readOnly: true)).checkpoints()
    #expect(points[a.key.description] == prior.checkpoints[a.key.description])
    #expect(points[b.key.description]?.partial == plan.partialPath(of: b))
    #expect(points[b.key.description]?.holdsBytes == false)
  }
}
