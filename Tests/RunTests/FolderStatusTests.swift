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

  /// Below a root, no link is followed: a linked folder or a linked file reads as no file, whatever
  /// way the root is written, and the cached folder never answers for another one.
  @Test func belowARootNoLinkIsFollowed() throws {
    let folder = TemporaryDirectory()
    let base = folder.path
    let outside = TemporaryDirectory()
    try FileAccess.makeDirectories(base + "/m/real")
    try FileAccess.makeDirectories(outside.path + "/sub")
    #expect(FileManager.default.createFile(atPath: base + "/m/real/f.bin", contents: Data(repeating: 1, count: 10)))
    #expect(
      FileManager.default.createFile(atPath: outside.path + "/sub/f.bin", contents: Data(repeating: 2, count: 20)))
    #expect(symlink(outside.path + "/sub", base + "/m/linked") == 0)
    #expect(symlink(outside.path + "/sub/f.bin", base + "/m/real/link.bin") == 0)
    let files = FolderStatus()
    for root in [base + "/m", base + "/m/"] {
      #expect(files.status(base + "/m/real/f.bin", below: root)?.size == 10)
      #expect(files.status(base + "/m/linked/f.bin", below: root) == nil)
      #expect(files.status(base + "/m/real/link.bin", below: root) == nil)
      #expect(files.status(base + "/m/real/f.bin", below: root)?.size == 10)
      // Outside the root the answer is a plain stat's.
      #expect(files.status(outside.path + "/sub/f.bin", below: root)?.size == 20)
    }
    // A root that is only a prefix of a folder's name is not that folder's root.
    #expect(files.status(base + "/m/real/f.bin", below: base + "/m/re")?.size == 10)
  }

  /// Folders looked in one after another share the folders above them (a pool with a folder per
  /// package): siblings, a climb back up, a deeper one and a linked folder among them all get a
  /// plain `lstat`'s answer, and a link is never followed.
  @Test func siblingFoldersShareTheFoldersAboveThem() throws {
    let folder = TemporaryDirectory()
    let root = folder.path + "/dest"
    let outside = TemporaryDirectory()
    let files: [(String, Int)] = [
      ("pool/main/a/alpha/f", 1), ("pool/main/a/apple/f", 2), ("pool/main/b/beta/f", 3), ("pool/contrib/c/f", 4),
      ("pool/main/a/alpha/deeper/g", 5), ("top", 6),
    ]
    for (path, size) in files {
      try FileAccess.makeDirectories(FileAccess.directory(of: root + "/" + path))
      #expect(FileManager.default.createFile(atPath: root + "/" + path, contents: Data(repeating: 1, count: size)))
    }
    #expect(FileManager.default.createFile(atPath: outside.path + "/f", contents: Data(repeating: 1, count: 99)))
    #expect(symlink(outside.path, root + "/pool/main/a/linked") == 0)
    let status = FolderStatus()
    for _ in 0..<2 {
      for (path, size) in files + files.reversed() {
        #expect(status.status(root + "/" + path, below: root)?.size == Int64(size), "\(path)")
        #expect(status.status(root + "/pool/main/a/linked/f", below: root) == nil)
      }
      #expect(status.status(root + "/pool/main/a/missing/f", below: root) == nil)
      #expect(status.status(root + "/pool/main/a/alpha/f", below: root)?.size == 1)
    }
  }
}
