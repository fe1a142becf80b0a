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
}
