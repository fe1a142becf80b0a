import BatchDLPlan
import BatchDLSupport
import BatchDLTransfer
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Puts a run's files in place: makes each destination's folder and checks that no symbolic link
/// leads it out of its session's `dest`, writes a body kept in memory as an unnamed file linked
/// into place, and copies a shared request's file to its other destinations. Folders are checked
/// once per run, and the last one stays open (files of one folder mostly come one after another).
/// Used by one thread at a time: the run's, then the relay's once the engine runs.
final class FilePlacer {
  private let plan: Plan
  /// batchdl's own files, checked again where each destination resolves.
  private let reserved: ReservedPaths

  init(plan: Plan, stateFolder: String?) {
    self.plan = plan
    reserved = ReservedPaths(manifest: plan.manifest, stateFolder: stateFolder)
  }

  /// Lets go of the open folder.
  func close() {
    lastFolder = nil
  }

  /// Writes a body kept in memory to `path` (whose folder `prepare` returned) in one step, with
  /// the modification time `modified` (seconds) when given; returns the file's size and time as
  /// written.
  func write(
    _ body: [UInt8], to path: String, folder: String, naming destination: String, modified: Int64? = nil
  ) throws(TransferFailure)
    -> (size: Int64, modified: Int64)?
  {
    do throws(SystemError) {
      return try AtomicFile.write(body, to: path, makingParent: false, in: openFolder(folder), modified: modified)
    } catch {
      throw TransferFailure.system(errno: error.code, doing: "write \(destination)")
    }
  }

  /// Creates the folder of a task's file and checks that it stays inside the session's dest and
  /// that, links followed, it is none of batchdl's own files; returns the folder.
  @discardableResult
  func prepare(_ path: String, for task: PlannedTask) throws(TransferFailure) -> String {
    let folder = try prepareFolder(path, for: task)
    let name = FileAccess.name(of: path)
    if name.utf8.withContiguousStorageIfAvailable({ reserved.mayName(UnsafeRawBufferPointer($0)) }) ?? true,
      let real = ReservedPaths.realPath(folder), let why = reserved.problem(withResolved: real + "/" + name)
    {
      throw TransferFailure(code: .unsafePath, message: "\(path) \(why) (through a symbolic link); nothing was written")
    }
    return folder
  }

  private func prepareFolder(_ path: String, for task: PlannedTask) throws(TransferFailure) -> String {
    // Folders already made and checked in this run need neither again (10,000 files, one folder);
    // the last one is told by comparing bytes, without making the folder's path.
    if let lastPrepared, FileAccess.isEntry(path, of: lastPrepared) { return lastPrepared }
    let parent = FileAccess.directory(of: path)
    if preparedFolders.contains(ByteString(parent)) {
      lastPrepared = parent
      return parent
    }
    let session = plan.manifest.sessions[Int(task.session)]
    let root = FileAccess.resolve(session.dest.isEmpty ? "." : session.dest, against: plan.manifest.absoluteDirectory)
    let real = try Self.prepare(path: path, root: root, realRoot: realRoots[root])
    realRoots[root] = real.root
    if let why = reserved.problem(withResolved: real.folder) {
      throw TransferFailure(code: .unsafePath, message: "\(path) \(why) (through a symbolic link); nothing was written")
    }
    preparedFolders.insert(ByteString(parent))
    lastPrepared = parent
    return parent
  }

  /// Makes the `partial_dir:` of a task's session, once per run; nothing when it has none.
  func preparePartialFolder(for task: PlannedTask) throws(TransferFailure) {
    let session = Int(task.session)
    guard let folder = plan.partialFolders.indices.contains(session) ? plan.partialFolders[session] : nil,
      preparedPartialFolders.insert(ByteString(folder)).inserted
    else { return }
    do {
      try FileAccess.makeDirectories(folder)
    } catch {
      preparedPartialFolders.remove(ByteString(folder))
      throw TransferFailure.system(errno: error.code, doing: "make the partial_dir \(folder)")
    }
  }

  /// `partial_dir:` folders made in this run.
  private var preparedPartialFolders: Set<ByteString> = []

  /// Folders made and checked (inside their session's dest) in this run, by their bytes: the NFC
  /// and NFD spellings of a folder are two folders.
  private var preparedFolders: Set<ByteString> = []

  /// Where each session's dest resolves, once `prepare` made it (by its absolute path).
  private var realRoots: [String: String] = [:]

  /// The folder `prepare` last returned.
  private var lastPrepared: String?

  /// The folder small files were last written to, held open (relay thread only).
  private var lastFolder: OpenFolder?

  /// A folder `prepare` has made and checked, open: files of one folder mostly come one after
  /// another, so the last one stays open.
  private func openFolder(_ folder: String) -> OpenFolder? {
    // By bytes: a String compares the NFC and NFD spellings of a folder as equal.
    if let lastFolder, lastFolder.path.utf8.elementsEqual(folder.utf8) { return lastFolder }
    lastFolder = OpenFolder(path: folder)
    return lastFolder
  }

  /// Creates the destination's folders and refuses a path that a symbolic link leads outside
  /// `root` (the session's dest): the deepest folder that exists is checked before any folder is
  /// made under it, and the whole path again once they are.
  /// Returns where the root and the destination's folder resolve. `realRoot`: where `root`
  /// resolves, when a call before made it and found out (it is neither made nor resolved again).
  @discardableResult
  static func prepare(
    path: String, root: String, realRoot known: String? = nil
  ) throws(TransferFailure) -> (
    root: String, folder: String
  ) {
    let parent = FileAccess.directory(of: path)
    let realRoot: String
    if let known {
      realRoot = known
    } else {
      do {
        try FileAccess.makeDirectories(root)
      } catch {
        throw TransferFailure.system(errno: error.code, doing: error.operation)
      }
      guard let resolved = realPath(root) else {
        throw TransferFailure(code: .write, message: "cannot resolve the folder \(root)")
      }
      realRoot = resolved
    }
    var existing = parent
    var info = stat()
    // The root was just made, so the walk up ends at it at the latest.
    while lstat(existing, &info) != 0, errno == ENOENT {
      let up = FileAccess.directory(of: existing)
      if up == existing || up.isEmpty { break }
      existing = up
    }
    let checked = try checkInside(existing, root: realRoot, naming: path)
    // The folder was there: nothing was made under what was just checked.
    if existing.utf8.elementsEqual(parent.utf8) { return (realRoot, checked) }
    do {
      try FileAccess.makeDirectories(parent)
    } catch {
      throw TransferFailure.system(errno: error.code, doing: error.operation)
    }
    return (realRoot, try checkInside(parent, root: realRoot, naming: path))
  }

  /// Where `folder` resolves; refuses it when that is not `root` or a folder inside it.
  @discardableResult
  private static func checkInside(
    _ folder: String, root: String, naming path: String
  ) throws(TransferFailure)
    -> String
  {
    guard let real = realPath(folder) else {
      throw TransferFailure(code: .write, message: "cannot resolve the folder \(folder)")
    }
    guard real == root || real.hasPrefix(root.hasSuffix("/") ? root : root + "/") else {
      throw TransferFailure(
        code: .unsafePath,
        message: "\(path) leads outside the session's dest through a symbolic link; nothing was written")
    }
    return real
  }

  static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// Copies `source` to `path` through the partial file `partial` and a rename; the copy takes
  /// the modification time `modified` (seconds) before it is renamed into place, when given.
  static func copy(
    _ source: String, to path: String, through partial: String, modified: Int64? = nil
  )
    throws(TransferFailure)
  {
    let input = open(source, O_RDONLY | O_CLOEXEC)
    guard input >= 0 else { throw TransferFailure.system(errno: errno, doing: "read \(source)") }
    defer { Glibc.close(input) }
    let output = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard output >= 0 else { throw TransferFailure.system(errno: errno, doing: "create \(partial)") }
    let failed = copyByReading(input, output, partial)
    if failed == nil, let modified { FileAccess.setModified(descriptor: output, seconds: modified) }
    Glibc.close(output)
    if let failed {
      unlink(partial)
      throw failed
    }
    guard rename(partial, path) == 0 else {
      let failure = TransferFailure.system(errno: errno, doing: "rename \(partial)")
      unlink(partial)
      throw failure
    }
  }

  private static func copyByReading(_ input: Int32, _ output: Int32, _ partial: String) -> TransferFailure? {
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let count = buffer.withUnsafeMutableBytes { SystemCalls.readRetrying(input, into: $0) }
      if count == 0 { return nil }
      guard count > 0,
        buffer.withUnsafeBytes({ SystemCalls.writeAll(output, UnsafeRawBufferPointer(rebasing: $0[0..<count])) })
      else {
        return TransferFailure.system(errno: errno, doing: "copy to \(partial)")
      }
    }
  }
}
