import BatchDLManifest
import BatchDLSupport

/// Where each task's file goes, by one rule that every command and the run read: the planner
/// normalizes a `to:` once (relative to the manifest's folder); these turn it into the absolute
/// path, the partial file beside it, and the task whose destination a shared request's body is
/// written to.
extension Plan {
  /// The partial file of a destination (`PartialFile`: `DEST.batchdl-part`, beside it).
  public static func partialPath(of destination: String) -> String { PartialFile.path(of: destination) }

  /// The partial file of a destination (absolute) of session `session`: in its `partial_dir:`
  /// when it has one, else beside the destination.
  public func partialPath(of destination: String, session: Int) -> String {
    let folder = session < partialFolders.count ? partialFolders[session] : partialFolder(session: session)
    return PartialFile.path(of: destination, in: folder)
  }

  /// Session `index`'s `partial_dir:` as an absolute, normalized folder (relative to its `dest`);
  /// nil when it has none.
  public func partialFolder(session index: Int) -> String? {
    guard index < manifest.sessions.count, let written = manifest.sessions[index].partialDir else { return nil }
    return ManifestDecoder.partialFolder(written, root: sessionRoot(dest: manifest.sessions[index].dest))
  }

  /// A path the manifest names (a destination, an upload's file), absolute: resolved against the
  /// manifest's folder.
  public func absolute(_ path: String) -> String { FileAccess.resolve(path, against: manifest.absoluteDirectory) }

  /// The absolute, normalized folder of a task's session's `dest` (the manifest's folder when it
  /// has none): the root below which no symbolic link is followed.
  public func absoluteDest(of task: PlannedTask) -> String {
    let index = Int(task.session)
    return index < sessionRoots.count ? sessionRoots[index] : sessionRoot(dest: manifest.sessions[index].dest)
  }

  /// `dest` (a session's) as an absolute, normalized folder.
  package func sessionRoot(dest: String) -> String {
    FileAccess.normalize(absolute(dest.isEmpty ? "." : dest))
  }

  /// A task's destination as an absolute path; nil when the task has none.
  public func absoluteDestination(of task: PlannedTask) -> String? {
    destination(of: task).map(absolute)
  }

  /// A data task's `become_download` rule, when it has one.
  public func becomeDownload(of task: PlannedTask) -> BecomeDownload? {
    guard task.kind == .data, case .task(let spec) = entry(of: task) else { return nil }
    return spec.becomeDownload
  }

  /// The task whose destination a request's body is written to, through a partial file: the
  /// first download or upload with a destination, else the first data task that may become a
  /// download and has one. nil when the body stays in memory (data tasks, whose files are
  /// written whole at the end).
  public func owner(of request: PlannedRequest) -> PlannedTask? {
    let tasks = tasks(of: request)
    return tasks.first { $0.kind != .data && !$0.to.isNone }
      ?? tasks.first { becomeDownload(of: $0) != nil && !$0.to.isNone }
  }

  /// The partial file a request's body goes to, when it goes to a file.
  public func partialPath(of request: PlannedRequest) -> String? {
    guard let task = owner(of: request), let destination = absoluteDestination(of: task) else { return nil }
    return partialPath(of: destination, session: Int(task.session))
  }
}

/// The one form the plan keeps destinations in: a session's `dest` joined with a
/// `RelativeDestination`, and a path inside the manifest's folder relative to it whatever way it
/// was written, so that `dest: /srv/m/x` and `dest: x/` in a manifest in `/srv/m` are seen to name
/// one file (two sessions wrote it, each with exit 0).
package struct DestinationForm {
  /// The manifest's folder with a final `/`, normalized.
  package let manifestFolderPrefix: String

  /// For a manifest in `manifestDirectory` (absolute).
  package init(manifestDirectory: String) {
    manifestFolderPrefix = PathRules.folderPrefix(FileAccess.normalize(manifestDirectory))
  }

  /// Before a plan starts: nothing is made relative.
  package init() {
    manifestFolderPrefix = ""
  }

  /// The destination `relative` names under `dest`.
  package func destination(dest: String, _ relative: RelativeDestination) -> String {
    canonical(PathRules.join(dest, relative.path))
  }

  /// What `destination(dest:_:)` of `folder.appending(name)` puts before a file `name` (one
  /// segment, not empty): the same for every name, so that a list's lines can be joined on their
  /// bytes.
  package func prefix(dest: String, folder: RelativeDestination) -> String {
    canonical(PathRules.folderPrefix(dest) + PathRules.folderPrefix(folder.path))
  }

  /// A path in the plan's form: an absolute path inside the manifest's folder becomes relative to it.
  package func canonical(_ destination: String) -> String {
    guard destination.hasPrefix("/") else { return destination }
    let prefix = manifestFolderPrefix
    guard destination.hasPrefix(prefix) else { return destination }
    return String(destination.dropFirst(prefix.count))
  }
}
