import BatchDLManifest
import BatchDLSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The files batchdl reads or keeps, which no destination may name, so that nothing fetched can
/// replace them: the manifest, its list files and local Metalink documents, the files of its
/// sessions' `tls:` and anything in a `tls.ca_path` folder, the state folder (and anything in it),
/// and any partial file (`NAME.batchdl-part`), which belongs to another destination's download in
/// progress. (A file an upload sends may be a download's: `after:` orders the two.)
///
/// The planner checks each destination as written (`problem(with:in:)`); the run checks each
/// one again where it resolves, symbolic links followed (`problem(withResolved:)`), before the
/// file is written.
package struct ReservedPaths {
  /// Absolute, standardized paths of files, and where they resolve.
  private var files: Set<String> = []
  /// Absolute, standardized paths of folders, with everything in them, and why.
  private var folders: [(path: String, why: String)] = []
  /// The last path components of all of them, as UTF-8: most destinations hold none of them, told
  /// on the bytes of their components, without a string or a path made (every destination of a
  /// million-line list passes here).
  private var names: [[UInt8]] = []
  /// The files this command writes besides destinations (`run --report`, `--events`, `--junit`,
  /// `--metrics`): absolute, standardized, and where they resolve. A document's name is never one
  /// (`outputProblem`); the manifest's own tasks are told apart by the command.
  private var outputs: Set<String> = []
  /// Their last path components: a destination with another name is none of them, told without
  /// a system call (every file of a large index passes here).
  private var outputNames: Set<String> = []

  package init() {}

  /// The reserved paths of `manifest`, and the command's `outputs` (paths absolute or relative to
  /// the working folder).
  package init(manifest: Manifest, stateFolder: String?, outputs: [String]) {
    self.init(manifest: manifest, stateFolder: stateFolder)
    for output in outputs {
      for absolute in Self.spellings(of: FileAccess.resolve(output, against: FileManager.default.currentDirectoryPath))
      {
        self.outputs.insert(absolute)
        outputNames.insert(FileAccess.name(of: absolute))
      }
    }
  }

  /// Why a document's file at `destination` (relative to `root`, or absolute) may not be written
  /// because the command writes that file itself (`--report` and the like); nil when it may.
  package func outputProblem(with destination: String, in root: String) -> String? {
    guard !outputs.isEmpty, outputNames.contains(FileAccess.name(of: destination)) else { return nil }
    let path = Self.standardized(FileAccess.resolve(destination, against: root))
    guard outputs.contains(path) || Self.realPath(path).map(outputs.contains) == true else { return nil }
    return "is a file this run writes itself (--report, --events, --junit or --metrics)"
  }

  package init(manifest: Manifest, stateFolder: String?) {
    let root = manifest.absoluteDirectory
    func file(_ path: String?) {
      guard let path else { return }
      for absolute in Self.spellings(of: FileAccess.resolve(path, against: root)) {
        files.insert(absolute)
        insertName(FileAccess.name(of: absolute))
      }
    }
    func folder(_ path: String?, _ why: String) {
      guard let path else { return }
      for absolute in Self.spellings(of: FileAccess.resolve(path, against: root)) {
        folders.append((absolute, "is in \(absolute), \(why)"))
        insertName(FileAccess.name(of: absolute))
      }
    }
    func checksumFiles(_ spec: ChecksumSpec?) {
      guard let spec else { return }
      for source in spec.files {
        if !source.isURL { file(source.location) }
        if let signature = source.signature, !source.signatureIsURL { file(signature) }
      }
      if let keyring = spec.keyring { file(keyring) }
    }
    file(FileAccess.name(of: manifest.path))
    for session in manifest.sessions {
      for path in [session.tls.caFile, session.tls.clientCert, session.tls.clientKey, session.tls.pinnedPublicKey] {
        if let path, path.hasPrefix("/") { file(path) }
      }
      folder(session.tls.caPath, "the folder of CA certificates that tls.ca_path trusts")
      for entry in session.tasks {
        switch entry {
        case .task: break
        case .list(let spec): file(spec.file)
        case .metalink(let spec): if !spec.isURL { file(spec.document) }
        case .index: break
        case .apt(let spec): file(spec.keyring)
        }
        checksumFiles(entry.checksums)
      }
      checksumFiles(session.checksums)
    }
    folder(root + "/" + DefaultStateFolder.name, "batchdl's state folder")
    folder(stateFolder, "batchdl's state folder")
  }

  private mutating func insertName(_ name: String) {
    let bytes = Array(name.utf8)
    if !names.contains(bytes) { names.append(bytes) }
  }

  /// A path as written (standardized) and where it resolves, when it exists.
  package static func spellings(of path: String) -> [String] {
    let written = standardized(path)
    guard let resolved = realPath(written), resolved != written else { return [written] }
    return [written, resolved]
  }

  package static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// An absolute path without `.`, `..` and empty components (symbolic links are not followed).
  package static func standardized(_ path: String) -> String { FileAccess.normalize(path) }

  /// Whether a file named `name` (UTF-8) in some folder could be one of them: the list fast path
  /// leaves such names to the general rules.
  package func mayName(_ name: UnsafeRawBufferPointer) -> Bool {
    PartialFile.isPartial(name: name) || isName(name)
  }

  private func isName(_ component: UnsafeRawBufferPointer) -> Bool {
    names.contains { $0.count == component.count && $0.elementsEqual(component) }
  }

  /// Why `destination` (relative to `root`, or absolute), as written, may not be written; nil when
  /// it may.
  package func problem(with destination: String, in root: String) -> String? {
    var text = destination
    let (partial, named) = text.withUTF8 { bytes in
      var partial = false
      var named = false
      var start = 0
      for end in 0...bytes.count where end == bytes.count || bytes[end] == UInt8(ascii: "/") {
        let component = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[start..<end]))
        partial = partial || PartialFile.isPartial(name: component)
        named = named || isName(component)
        start = end + 1
      }
      return (partial, named)
    }
    if partial {
      return "names a partial file (*\(PartialFile.suffix)), where batchdl keeps a download in progress"
    }
    guard named else { return nil }
    return problem(withResolved: Self.standardized(FileAccess.resolve(destination, against: root)))
  }

  /// Why the file at `path` (absolute, standardized or resolved) may not be written; nil when it may.
  package func problem(withResolved path: String) -> String? {
    if files.contains(path) {
      return "is a file batchdl reads for this manifest (the manifest, a list, a document or a tls: file)"
    }
    for folder in folders where path == folder.path || path.hasPrefix(folder.path + "/") {
      return folder.why
    }
    return nil
  }
}
