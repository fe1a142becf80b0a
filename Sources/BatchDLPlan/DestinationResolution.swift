import BatchDLManifest
import BatchDLSupport

/// Where each task's file goes: its destination in the plan's one form, which ids follow from it,
/// and which destinations clash with another task's file or folder.
extension PlanBuilder {
  /// An entry's `to:` folder (`list:`, `metalink:`), normalized: `.folder` without one, nil after
  /// reporting why it cannot be one.
  package mutating func entryFolder(_ to: String?, at mark: SourceMark) -> RelativeDestination? {
    guard let to else { return .folder }
    switch RelativeDestination.parse(to) {
    case .success(let value): return value
    case .failure(let problem):
      diagnostics.error(mark, problem.message)
      return nil
    }
  }

  /// The destination relative to the manifest's folder, or nil after reporting why there is none.
  /// `fromDocument`: the name came from a document (Metalink), so that a name it may not have leaves
  /// that file out, with a warning, instead of making the manifest invalid.
  package mutating func resolveDestination(
    session: Session, to: String?, isFolder: Bool, url: NormalizedURL, mark: SourceMark, quiet: Bool = false,
    fromDocument: Bool = false
  ) -> String? {
    var relative = RelativeDestination.folder
    // Compared by bytes: a String compares NFC and NFD spellings as equal, two names on Linux.
    if let to, let lastTo, lastTo.text.utf8.elementsEqual(to.utf8) {
      relative = lastTo.normalized
    } else if let to {
      switch RelativeDestination.parse(to) {
      case .success(let value):
        relative = value
        lastTo = (to, value)
      case .failure(let problem):
        if !quiet {
          // A document's names (joined under its entry's folder) may make a path no file can
          // have (longer than PATH_MAX): that file is left out, the manifest stays valid.
          if fromDocument {
            diagnostics.warning(mark, problem.message + "; this file is left out")
          } else {
            diagnostics.error(mark, problem.message)
          }
        }
        return nil
      }
    }
    if to == nil || isFolder {
      guard let name = url.fileName, name != ".", name != "..", !name.utf8.contains(0x2F), !name.utf8.contains(0) else {
        if !quiet {
          diagnostics.error(
            mark, "cannot name the file after the URL (it has no usable last path segment); add 'to:' with a file name")
        }
        return nil
      }
      relative = relative.appending(name)
    }
    if relative.isFolder {
      if !quiet {
        diagnostics.error(
          mark,
          "to '\(ShownText.escaped(to ?? "", limit: 200))' names the session's dest folder itself, not a file inside it"
        )
      }
      return nil
    }
    lastRelative = relative.path
    let destination = form.destination(dest: session.dest, relative)
    let documentWhy = fromDocument ? reserved.outputProblem(with: destination, in: manifest.absoluteDirectory) : nil
    if let why = documentWhy ?? reserved.problem(with: destination, in: manifest.absoluteDirectory) {
      if !quiet {
        // A name from a document is shown escaped (no control character reaches the output).
        let message = "the destination '\(ShownText.escaped(redactor.text(destination), limit: .max))' \(why)"
        if fromDocument {
          diagnostics.warning(mark, message + "; this file is left out")
        } else {
          diagnostics.error(mark, message)
        }
      }
      return nil
    }
    // File names appear in reports and the state folder, and on disk: none may hold a secret.
    let masked = redactor.text(destination)
    if masked != destination {
      if !quiet {
        let secret = "holds the value of a secret ${VAR} (one used in the URL, a header, a body or a form field)"
        let stored = "file names are kept in the state folder and reports, which never hold a secret"
        if fromDocument {
          // A document from the network names it (a server that got the secret can): that file
          // is left out, the manifest stays valid.
          diagnostics.warning(
            mark,
            "the destination '\(ShownText.escaped(masked, limit: .max))' \(secret): \(stored); this file is left out")
        } else {
          diagnostics.error(
            mark,
            to == nil || isFolder
              ? "the file would be named after the URL, as '\(masked)', which \(secret): \(stored); add 'to:' with a file name"
              : "the destination '\(masked)' \(secret): \(stored); choose a name without it (a variable also written in 'to:' or 'dest' is a path, not a secret)"
          )
        }
      }
      return nil
    }
    return destination
  }

  /// The default id of a task whose destination is `toRef`: the destination itself when it is
  /// relative to the manifest's folder, and relative to the session's `dest` when that is absolute,
  /// so that the same manifest has the same ids on every machine (another `dest`, a CI workspace).
  /// In a manifest of several sessions the id is `SESSION:RELATIVE` (another session's file could
  /// take the relative id on any night), still the same on every machine; in a manifest of one
  /// session it is `RELATIVE`, or `SESSION:RELATIVE` when a task has that id already. Only when
  /// both are taken does the destination stay the id.
  package mutating func portableID(_ toRef: TextRef, session: Int32) -> TextRef {
    guard !toRef.isNone, let prefix = absoluteDestPrefix(session: session) else { return toRef }
    guard text.withBytes(toRef, { $0.count > prefix.count && $0.starts(with: prefix) }) else { return toRef }
    let bytes = text.withBytes(toRef) { Array($0.dropFirst(prefix.count)) }
    // With several sessions, a file of another session may have the relative id on some night
    // (a listing grows): the id is `SESSION:RELATIVE` from the start, so that it never changes
    // with upstream.
    let qualified = sessionQualified(bytes, session: session)
    for candidate in manifest.sessions.count > 1 ? [qualified] : [bytes, qualified] {
      let id = String(decoding: candidate, as: UTF8.self)
      guard namedIDs[ByteString(id)] == nil, task(withDestination: id) == nil else { continue }
      let relative = candidate.withUnsafeBytes { text.append($0) }
      namedIDs[ByteString(id)] = Int32(tasks.count)
      return relative
    }
    return toRef
  }

  /// The id `SESSION:RELATIVE` of a file `relative` to its session's absolute `dest`.
  package func sessionQualified(_ relative: [UInt8], session: Int32) -> [UInt8] {
    Array(manifest.sessions[Int(session)].name.utf8) + [0x3A] + relative
  }

  /// Gives task `index`, whose default id was its destination relative to an absolute `dest`, the
  /// id `SESSION:RELATIVE` (or its destination when that is taken), because a later task's own
  /// destination is that relative path.
  package mutating func qualifyPortableID(of index: Int32) {
    let task = tasks[Int(index)]
    let relative = text.withBytes(task.id) { Array($0) }
    let qualified = sessionQualified(relative, session: task.session)
    let id = String(decoding: qualified, as: UTF8.self)
    if namedIDs[ByteString(id)] == nil, self.task(withDestination: id) == nil {
      tasks[Int(index)].id = qualified.withUnsafeBytes { text.append($0) }
      namedIDs[ByteString(id)] = index
    } else {
      tasks[Int(index)].id = task.to
    }
  }

  /// A session's absolute `dest` with a final `/`, as bytes, in the form its destinations take
  /// (`DestinationForm`: relative inside the manifest's folder); nil when the `dest` is written relative.
  package mutating func absoluteDestPrefix(session: Int32) -> [UInt8]? {
    if destPrefixes == nil {
      destPrefixes = manifest.sessions.map { [self] session in
        session.dest.hasPrefix("/") ? Array(form.prefix(dest: session.dest, folder: .folder).utf8) : nil
      }
    }
    return destPrefixes?[Int(session)] ?? nil
  }

  /// `hash` is `text.hash(ref)` for a destination (unused for an id).
  package func lookupDestination(_ ref: TextRef, isDestination: Bool, hash: UInt64) -> Int32? {
    if !isDestination { return namedIDs[ByteString(text.string(ref))] }
    return destinations.find(hash: hash) { [text, tasks] in text.equals(tasks[Int($0)].to, ref) }
  }

  package mutating func insertDestination(_ ref: TextRef, task: Int32, isDestination: Bool, hash: UInt64) {
    if !isDestination {
      namedIDs[ByteString(text.string(ref))] = task
      return
    }
    destinations.insert(task, hash: hash) { [text, tasks] in text.hash(tasks[Int($0)].to) }
  }

  /// `task(withDestination:)` of a destination's bytes, without a String.
  package func task(withDestinationBytes path: UnsafeRawBufferPointer) -> Int32? {
    destinations.find(hash: TextArena.hash(path)) { [text, tasks] in text.equals(tasks[Int($0)].to, path) }
  }

  /// The task whose destination is `path`.
  package func task(withDestination path: String) -> Int32? {
    var path = path
    let hash = path.withUTF8 { TextArena.hash(UnsafeRawBufferPointer($0)) }
    return destinations.find(hash: hash) { [text, tasks] in text.equals(tasks[Int($0)].to, path) }
  }

  /// A destination that is also a folder of another destination cannot be written.
  package mutating func checkFolders() {
    // Each folder above a destination is looked up once, by its bytes (the NFC and NFD spellings of
    // a folder are two folders), and only its hash is kept: a list of deep paths kept every folder
    // of every path as a String (hundreds of MB for a few hundred lines).
    var seen = Set<Int>()
    var folders: [(folder: String, task: Int32)] = []
    var previousParent: [UInt8] = []
    for (index, task) in tasks.enumerated() where !task.to.isNone {
      text.withBytes(task.to) { bytes in
        guard var end = bytes.lastIndex(of: 0x2F) else { return }
        // Consecutive tasks usually share a folder: skip the set when this one repeats the last.
        if bytes.count > 0, end == previousParent.count,
          previousParent.withUnsafeBytes({ bytesEqual(UnsafeRawBufferPointer(rebasing: bytes.prefix(end)), $0) })
        {
          return
        }
        previousParent = Array(bytes.prefix(end))
        while end > 0 {
          let folder = UnsafeRawBufferPointer(rebasing: bytes.prefix(end))
          var hasher = Hasher()
          hasher.combine(bytes: folder)
          if !seen.insert(hasher.finalize()).inserted { break }
          if self.task(withDestinationBytes: folder) != nil {
            folders.append((String(decoding: folder, as: UTF8.self), Int32(index)))
          }
          guard let next = bytes.prefix(end).lastIndex(of: 0x2F) else { break }
          end = next
        }
      }
    }
    for (folder, child) in folders {
      if let owner = task(withDestination: folder) {
        // A document's file is left out instead (the later one when both come from documents).
        let documentFile = documentFileOfTask[max(owner, child)] ?? documentFileOfTask[min(owner, child)]
        if let documentFile {
          let other = documentFileOfTask[owner] == documentFile ? child : owner
          newClashes[documentFile] =
            documentFileOfTask[owner] == documentFile
            ? "'\(folder)' is a folder for the task at \(mark(of: tasks[Int(other)]))"
            : "'\(folder)' is a file of the task at \(mark(of: tasks[Int(other)])), not a folder"
          continue
        }
        diagnostics.error(
          mark(of: tasks[Int(owner)]),
          "'\(folder)' is a file here but a folder for the task at \(mark(of: tasks[Int(child)])); rename one of them")
      }
    }
  }
}
