import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLStore
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// Where a job writes with `partial_dir:`, and the listed size it is given (`Plan.listedSize`).
@Suite struct PartialDirJobTests {
  @Test func aDownloadOfASessionWithPartialDirWritesThereAndEachDestinationHasItsOwnName() throws {
    let (folder, plan) = try planned(
      """
      version: 1
      sessions:
        s:
          dest: pub
          partial_dir: ../.partial
          tasks:
            - download: http://h.test/a/file.bin
              to: a/file.bin
            - download: http://h.test/b/file.bin
              to: b/file.bin
      """)
    let builder = JobBuilder(plan: plan, state: StateFolder(option: nil, manifest: plan.manifest), redactor: Redactor())
    var partials: [String] = []
    for id in ["pub/a/file.bin", "pub/b/file.bin"] {
      let (spec, owner) = builder.spec(for: try request(plan, id: id))
      guard case .file(let partial) = spec.target else {
        Issue.record("expected a file target, got \(spec.target)")
        return
      }
      #expect(owner?.path == folder.path + "/" + id)
      #expect(FileAccess.directory(of: partial) == folder.path + "/.partial", "\(partial)")
      #expect(partial.hasSuffix("-file.bin.batchdl-part"), "\(partial)")
      #expect(plan.partialPath(of: try request(plan, id: id)) == partial)
      #expect(spec.listedSize == nil, "nothing lists it")
      partials.append(partial)
    }
    #expect(Set(partials).count == 2, "\(partials)")
  }
}
