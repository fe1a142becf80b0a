import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLSupport

@Suite struct AtomicFileTests {
  @Test func aNewFileAppearsWholeWithNothingBeside() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/new.bin"
    try AtomicFile.write([1, 2, 3, 4], to: path)
    #expect(FileManager.default.contents(atPath: path) == Data([1, 2, 3, 4]))
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["new.bin"])
  }

  @Test func anExistingFileIsReplaced() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/old.bin"
    _ = FileManager.default.createFile(atPath: path, contents: Data([9, 9, 9, 9, 9, 9]))
    try AtomicFile.write([5, 6], to: path)
    #expect(FileManager.default.contents(atPath: path) == Data([5, 6]))
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["old.bin"])
  }

  @Test func aSymbolicLinkIsReplacedNotFollowed() throws {
    let folder = TemporaryDirectory()
    let target = folder.path + "/target.txt"
    _ = FileManager.default.createFile(atPath: target, contents: Data("keep".utf8))
    #expect(symlink(target, folder.path + "/link.txt") == 0)
    try AtomicFile.write(Array("new".utf8), to: folder.path + "/link.txt")
    #expect(FileManager.default.contents(atPath: target) == Data("keep".utf8))
    #expect(FileManager.default.contents(atPath: folder.path + "/link.txt") == Data("new".utf8))
    var info = stat()
    #expect(lstat(folder.path + "/link.txt", &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
  }

  /// A held body placed with its server's time: the time is on the file before it is linked or
  /// renamed in (the status returned is read from the file before that), never set after.
  @Test func aGivenTimeIsOnTheFileBeforeItAppears() throws {
    let folder = TemporaryDirectory()
    let open = try #require(OpenFolder(path: folder.path))
    let seconds: Int64 = 1_500_000_000
    for (name, existing, inFolder) in [
      ("fresh.bin", false, false), ("replaced.bin", true, false), ("opened.bin", false, true),
    ] {
      let path = folder.path + "/" + name
      if existing { _ = FileManager.default.createFile(atPath: path, contents: Data([7])) }
      let written = try AtomicFile.write(
        [1, 2, 3], to: path, makingParent: false, in: inFolder ? open : nil, modified: seconds)
      #expect(written?.modified == seconds * 1_000_000_000, "\(name)")
      #expect(FileAccess.status(path)?.modified == seconds * 1_000_000_000, "\(name)")
      #expect(FileManager.default.contents(atPath: path) == Data([1, 2, 3]))
    }
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [
        "fresh.bin", "opened.bin", "replaced.bin",
      ])
  }

  /// A partial file swapped for a symbolic link before its time is set: the time stays off the
  /// file the link points to.
  @Test func aTimeSetByPathNeverFollowsALink() throws {
    let folder = TemporaryDirectory()
    let target = folder.path + "/elsewhere.txt"
    _ = FileManager.default.createFile(atPath: target, contents: Data("keep".utf8))
    let before = try #require(FileAccess.status(target)?.modified)
    #expect(symlink(target, folder.path + "/file.batchdl-part") == 0)
    _ = FileAccess.setModified(folder.path + "/file.batchdl-part", seconds: 1_000_000_000)
    #expect(FileAccess.status(target)?.modified == before)
  }

  @Test func theWrittenFilesSizeAndTimeAreReturnedAsAStatReadsThem() throws {
    let folder = TemporaryDirectory()
    for (name, existing) in [("fresh.bin", false), ("replaced.bin", true)] {
      let path = folder.path + "/" + name
      if existing { try Data("old contents".utf8).write(to: URL(fileURLWithPath: path)) }
      let written = try AtomicFile.write(Array(repeating: 7, count: 5000), to: path)
      #expect(written?.size == 5000)
      let read = FileAccess.status(path)
      #expect(read != nil && written?.size == read?.size && written?.modified == read?.modified)
    }
  }

  @Test func filesWrittenInAnOpenFolderLandThereWhole() throws {
    let folder = TemporaryDirectory()
    let open = try #require(OpenFolder(path: folder.path))
    let path = folder.path + "/a.bin"
    let first = try AtomicFile.write([1, 2, 3], to: path, makingParent: false, in: open)
    #expect(first?.size == 3)
    // Something at the destination already: the named way (a temporary and a rename) replaces it.
    let second = try AtomicFile.write([4, 5], to: path, makingParent: false, in: open)
    #expect(second?.size == 2)
    #expect(FileManager.default.contents(atPath: path) == Data([4, 5]))
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["a.bin"])
    #expect(OpenFolder(path: folder.path + "/absent") == nil)
  }

  /// One test, because the way of linking is the process's: a missing folder must not change it,
  /// and the way through `/proc` must work once it has changed.
  @Test func aMissingFolderFailsTheWriteAndBothWaysOfLinkingWork() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/absent/file.bin"
    let before = AtomicFile.linksByDescriptor
    #expect(throws: SystemError.self) { try AtomicFile.write([1], to: path, makingParent: false) }
    #expect(FileAccess.status(path) == nil)
    #expect(AtomicFile.linksByDescriptor == before)
    try AtomicFile.write([2], to: folder.path + "/by-descriptor.bin", makingParent: false)
    AtomicFile.stopLinkingByDescriptor()
    let written = try AtomicFile.write([3, 4], to: folder.path + "/through-proc.bin", makingParent: false)
    #expect(written?.size == 2)
    #expect(FileManager.default.contents(atPath: folder.path + "/by-descriptor.bin") == Data([2]))
    #expect(FileManager.default.contents(atPath: folder.path + "/through-proc.bin") == Data([3, 4]))
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [
        "by-descriptor.bin", "through-proc.bin",
      ])
  }
}
