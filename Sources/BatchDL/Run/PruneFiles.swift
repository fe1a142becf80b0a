import BatchDLStore
import BatchDLSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Looks at and removes the files `prune:` names, without ever following a symbolic link below the
/// session's `dest`: each folder on the way is opened with `O_NOFOLLOW` from the one above it, and
/// the file is looked at (`fstatat`, `AT_SYMLINK_NOFOLLOW`) and removed (`unlinkat`) in the folder
/// so opened. (`dest` itself may be a link: the user chose it.)
package enum PruneFiles {
  /// What the file at `relative` below `root` is now, against its record.
  package static func inspect(root: String, relative: String, record: PlacedFile) -> PlacedFileState {
    walk(root: root, relative: relative) { folder, name, _ in
      state(in: folder, name: name, record: record)
    }
  }

  /// Removes the file at `relative` below `root` when it is still the one recorded, then the
  /// folders below `root` that this left empty; returns what was there (`.placed`: removed).
  package static func remove(root: String, relative: String, record: PlacedFile) -> PlacedFileState {
    walk(root: root, relative: relative) { folder, name, chain in
      let found = state(in: folder, name: name, record: record)
      guard found == .placed else { return found }
      guard unlinkat(folder, name, 0) == 0 else {
        return errno == ENOENT ? .missing : .changed("cannot remove it: \(String(cString: strerror(errno)))")
      }
      // Folders that held only this file go too, deepest first; never `dest` itself. A folder
      // that is not empty (ENOTEMPTY) ends the climb.
      for (parent, child) in chain.reversed() {
        guard unlinkat(parent, child, AT_REMOVEDIR) == 0 else { break }
      }
      return .placed
    }
  }

  /// Removes the partial file (`NAME.batchdl-part`) at `relative` below `root` when it is a
  /// regular file there (no link followed on the way); true when it was removed.
  package static func removePartial(root: String, relative: String) -> Bool {
    guard relative.hasSuffix(PartialFile.suffix) else { return false }
    return walk(root: root, relative: relative) { folder, name, _ in
      var info = stat()
      guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFREG,
        unlinkat(folder, name, 0) == 0
      else { return .missing }
      return .placed
    } == .placed
  }

  /// Opens the folders from `root` down to the file's, without following links, and calls `body`
  /// with the file's folder, its name, and the chain of (folder, name of the child folder) opened.
  private static func walk(
    root: String, relative: String, _ body: (Int32, String, [(Int32, String)]) -> PlacedFileState
  ) -> PlacedFileState {
    let parts = relative.split(separator: "/").map(String.init)
    guard let name = parts.last else { return .changed("the path names the session's dest itself") }
    let top = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard top >= 0 else { return errno == ENOENT ? .missing : .changed("cannot open \(root)") }
    var opened: [Int32] = [top]
    defer { for fd in opened { close(fd) } }
    var chain: [(Int32, String)] = []
    for part in parts.dropLast() {
      let parent = opened[opened.count - 1]
      let fd = openat(parent, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
      guard fd >= 0 else {
        switch errno {
        case ENOENT: return .missing
        case ELOOP, ENOTDIR: return .changed("the folder \(part) on its way is a symbolic link or not a folder now")
        default: return .changed("cannot open the folder \(part): \(String(cString: strerror(errno)))")
        }
      }
      opened.append(fd)
      chain.append((parent, part))
    }
    return body(opened[opened.count - 1], name, chain)
  }

  private static func state(in folder: Int32, name: String, record: PlacedFile) -> PlacedFileState {
    var info = stat()
    guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
      return errno == ENOENT ? .missing : .changed("cannot look at it: \(String(cString: strerror(errno)))")
    }
    switch info.st_mode & S_IFMT {
    case S_IFREG: break
    case S_IFLNK: return .changed("a symbolic link is there now")
    case S_IFDIR: return .changed("a folder is there now")
    default: return .changed("it is no longer a regular file")
    }
    guard record.matches(FileIdentity(info)) else {
      return .changed("it is not the file batchdl placed (its size, time or inode changed)")
    }
    return .placed
  }
}
