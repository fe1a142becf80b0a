import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLTransfer

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
    try FilePlacer.copy(path, to: path + ".copy", through: path + ".copy.batchdl-part")
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
