import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLSupport

@Suite struct FolderStatusTests {
  @Test func givesTheAnswersOfAStatOfTheWholePath() throws {
    let folder = TemporaryDirectory()
    let base = folder.path
    try FileAccess.makeDirectories(base + "/a/b")
    #expect(FileManager.default.createFile(atPath: base + "/a/b/one.bin", contents: Data(repeating: 1, count: 10)))
    #expect(FileManager.default.createFile(atPath: base + "/a/two.bin", contents: Data(repeating: 2, count: 20)))
    let files = FolderStatus()
    let paths = [
      base + "/a/b/one.bin", base + "/a/b/missing.bin", base + "/a/two.bin", base + "/a/b", base + "/a/b/one.bin",
      base + "/nowhere/x.bin", base + "/a/b/", "/", "relative.bin", base + "/a/b/../two.bin",
    ]
    for path in paths {
      let expected = FileAccess.status(path)
      let found = files.status(path)
      #expect(found?.size == expected?.size && found?.modified == expected?.modified, "\(path)")
    }
    #expect(files.status(base + "/a/b/one.bin")?.size == 10)
  }
}
