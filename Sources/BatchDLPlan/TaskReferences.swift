import BatchDLManifest
import BatchDLSupport

/// Ids and `after:`: which task an id names, duplicate ids, references to unknown tasks and cycles.
extension PlanBuilder {
  /// The task an id names: an explicit or URL id, else a destination used as a default id.
  package func task(withID id: String) -> Int32? {
    if let task = namedIDs[ByteString(id)] { return task }
    if let task = task(withDestination: id), text.equals(tasks[Int(task)].id, id) { return task }
    // An absolute destination names its task still, as the id it was before ids under an absolute
    // `dest` became relative to it.
    if id.hasPrefix("/"), let task = task(withDestination: id) { return task }
    return nil
  }

  package mutating func checkIDs() {
    for (task, mark) in explicitIDs {
      let id = text.string(tasks[Int(task)].id)
      // Ids are kept in the state folder and reports: an id holding a secret's value is refused,
      // as a destination holding one is.
      let masked = redactor.text(id)
      if masked != id {
        diagnostics.error(
          mark,
          "the id '\(ShownText.escaped(masked, limit: 200))' holds the value of a secret ${VAR} (one used in a URL, a header, a body or a form field): ids are kept in the state folder and reports, which never hold a secret; choose an id without it"
        )
        continue
      }
      if let other = self.task(withID: id), other != task {
        if let documentFile = documentFileOfTask[other] {
          newClashes[documentFile] = "'\(id)' is also the id of the task at \(mark)"
          namedIDs[ByteString(id)] = task
          continue
        }
        diagnostics.error(
          mark,
          "two tasks have the id '\(id)' (also at \(self.mark(of: tasks[Int(other)]))); ids must be unique"
        )
        continue
      }
      namedIDs[ByteString(id)] = task
    }
  }

  package mutating func resolveAfter() {
    let smallPlan = tasks.count <= 10_000
    // A `list:` entry's `after:` belongs to every line: report (and look for a suggestion) once.
    var reported = Set<SourceMark>()
    var candidates: [String]?
    for (task, refs) in afterRefs {
      var resolved: [(task: Int32, ref: TaskReference)] = []
      for ref in refs {
        // A data task's URL id has its user-info masked: a reference may quote the URL as written.
        guard let target = self.task(withID: ref.id) ?? self.task(withID: redactor.url(ref.id)) else {
          // A document that failed may have listed the id: the task must not run as if it had
          // been listed and completed.
          if let failed = descriptors.first(where: { $0.outcome == .failed }) {
            let request = tasks[Int(task)].request
            if unresolvedAfter[request] == nil {
              unresolvedAfter[request] = (ref.id, "the document \(failed.url), which may have listed it, failed")
            }
            continue
          }
          // An id under the folder of an `index:` or `metalink:` entry is one only its document can
          // name: one that does not name it (a listing that dropped the file) fails the task, not
          // the manifest.
          if let document = documentListing(id: ref.id) {
            let request = tasks[Int(task)].request
            if unresolvedAfter[request] == nil {
              unresolvedAfter[request] = (ref.id, "\(document), which decides the files there, does not list it")
            }
            continue
          }
          if partial || !reported.insert(ref.mark).inserted { continue }
          var hint = ""
          if smallPlan {
            let ids = candidates ?? tasks.map { text.string($0.id) }
            candidates = ids
            hint = Suggestions.hint(for: ref.id, in: ids)
          }
          diagnostics.error(ref.mark, "after: no task has the id '\(ref.id)'\(hint)")
          continue
        }
        if target == task {
          diagnostics.error(ref.mark, "a task cannot wait for itself")
          continue
        }
        resolved.append((target, ref))
      }
      resolvedAfter[task, default: []].append(contentsOf: resolved)
    }
    reportCycles()
    for (task, targets) in resolvedAfter {
      let request = tasks[Int(task)].request
      for target in targets {
        let dependency = tasks[Int(target.task)].request
        if dependency != request && !requests[Int(request)].dependencies.contains(dependency) {
          requests[Int(request)].dependencies.append(dependency)
        }
      }
    }
  }

  /// The `index:` or `metalink:` entry (by URL) whose files could have the id `id`: `id` lies
  /// under the entry's `to:` folder, in the form destinations (or, below an absolute `dest`, ids)
  /// take. Nil when no such entry has fetched its document (or the manifest has none).
  package func documentListing(id: String) -> String? {
    for session in manifest.sessions {
      for entry in session.tasks {
        let to: String?
        let document: String
        switch entry {
        case .index(let spec): (to, document) = (spec.to, "the listing " + redactor.url(spec.url))
        case .apt(let spec): (to, document) = (spec.to, "the repository " + redactor.url(spec.url))
        case .metalink(let spec) where spec.isURL:
          (to, document) = (spec.to, "the Metalink document " + redactor.url(spec.document))
        default: continue
        }
        let folder = to.flatMap { try? RelativeDestination.parse($0).get() } ?? .folder
        var prefixes = [form.prefix(dest: session.dest, folder: folder)]
        if session.dest.hasPrefix("/") { prefixes.append(PathRules.folderPrefix(folder.path)) }
        if prefixes.contains(where: { id.hasPrefix($0) && id.utf8.count > $0.utf8.count }) { return document }
      }
    }
    return nil
  }

  /// Reports each cycle of `after:` once, naming the ids around it.
  package mutating func reportCycles() {
    enum Color { case visiting, done }
    var color: [Int32: Color] = [:]
    for start in resolvedAfter.keys.sorted() where color[start] == nil {
      var stack: [(task: Int32, next: Int)] = [(start, 0)]
      color[start] = .visiting
      while let top = stack.last {
        let edges = resolvedAfter[top.task] ?? []
        if top.next >= edges.count {
          color[top.task] = .done
          stack.removeLast()
          continue
        }
        stack[stack.count - 1].next += 1
        let edge = edges[top.next]
        switch color[edge.task] {
        case .visiting:
          guard let begin = stack.firstIndex(where: { $0.task == edge.task }) else { continue }
          let cycle = stack[begin...].map { text.string(tasks[Int($0.task)].id) }
          let path = (cycle + [cycle[0]]).joined(separator: " → ")
          diagnostics.error(edge.ref.mark, "cycle in after: \(path); remove one of these references")
        case .done:
          continue
        case nil:
          color[edge.task] = .visiting
          stack.append((edge.task, 0))
        }
      }
    }
  }
}
