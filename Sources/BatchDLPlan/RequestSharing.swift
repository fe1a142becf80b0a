import BatchDLSupport
import Crypto

/// Whether a task makes a new request, shares an earlier one (the same request, or the same
/// expected content), repeats an earlier task, or clashes with one.
extension PlanBuilder {
  /// Adds a task, creating or sharing its request. Returns the new task, or the earlier task an exact
  /// repeat merged into (so that the repeat's `after:` and priority still apply), or nil when it
  /// conflicts with an earlier task (reported unless `quiet`).
  package mutating func add(
    context: EntryContext, normalized: NormalizedURL, urlRef: TextRef, toRef: TextRef, idRef: TextRef, line: Int32,
    mark: SourceMark, explicitID: Bool, quiet: Bool = false, mirrors: [NormalizedURL] = [], content: String? = nil,
    document: DocumentFile? = nil
  ) -> Int32? {
    var url = normalized.text
    var authority = normalized.authority
    return url.withUTF8 { url in
      authority.withUTF8 { authority in
        add(
          context: context, url: UnsafeRawBufferPointer(url), authority: UnsafeRawBufferPointer(authority),
          urlRef: urlRef, toRef: toRef, idRef: idRef, line: line, mark: mark, explicitID: explicitID, quiet: quiet,
          mirrors: mirrors, content: content, document: document)
      }
    }
  }

  /// `add` with the normalized URL and its authority (host and port) as UTF-8 bytes.
  package mutating func add(
    context: EntryContext, url: UnsafeRawBufferPointer, authority: UnsafeRawBufferPointer, urlRef: TextRef,
    toRef: TextRef, idRef: TextRef, line: Int32, mark: SourceMark, explicitID: Bool, quiet: Bool = false,
    mirrors: [NormalizedURL] = [], content: String? = nil, document: DocumentFile? = nil
  ) -> Int32? {
    var hasher = context.prefix
    hasher.update(bufferPointer: url)
    let key = hasher.finalize().withUnsafeBytes { raw in
      RequestKey(
        high: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
        low: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
    }
    let taskIndex = Int32(tasks.count)
    var existingRequest = requestIndex.find(hash: key.low) { [requests] in requests[Int($0)].key == key }
    // Content identity: a download expecting the same SHA-256 as an earlier one is that request,
    // with this URL as one more source.
    let contentName = content.map { ContentName(sha256: $0, session: context.session, identity: context.identity) }
    var sameContent = false
    if existingRequest == nil, let contentName, let other = contentRequests[contentName] {
      existingRequest = other
      sameContent = true
    }

    // A destination (or, for data tasks without one, a URL id) names one task. It enters the
    // tables only once the task exists (below): every index in a table names a task.
    var pendingName: (ref: TextRef, hash: UInt64)?
    if !toRef.isNone || !explicitID {
      let nameRef = toRef.isNone ? idRef : toRef
      // Hashed once for the lookup and the insertion.
      let nameHash = toRef.isNone ? 0 : text.hash(toRef)
      if let other = lookupDestination(nameRef, isDestination: !toRef.isNone, hash: nameHash) {
        let previous = tasks[Int(other)]
        let sameRequest = existingRequest != nil && previous.request == existingRequest
        // Both with default ids: a destination, or the URL of a data task without `to:` (only those are
        // in `namedIDs` before `checkIDs`).
        // (A default id under an absolute `dest` is the destination relative to it: `portableID`.)
        let previousDefault =
          previous.id == previous.to || (!previous.to.isNone && namedIDs[ByteString(text.string(previous.id))] == other)
        let defaultIDs = !explicitID && (toRef.isNone || previousDefault)
        if sameRequest && defaultIDs && previous.kind == context.kind {
          merged += 1
          if context.priority < requests[Int(previous.request)].priority {
            requests[Int(previous.request)].priority = context.priority
          }
          if line == 0 {
            diagnostics.warning(
              mark,
              "this task repeats the task at \(self.mark(of: previous)) (same request, same destination); it runs once")
          }
          return other
        }
        // A document's file never makes the manifest invalid: it is left out (this one, else the
        // earlier one when that came from a document).
        if let document {
          newClashes[document] =
            "'\(text.string(nameRef))' is also the destination of the task at \(self.mark(of: previous))"
          return nil
        }
        if let earlier = documentFileOfTask[other] {
          newClashes[earlier] = "'\(text.string(nameRef))' is also the destination of the task at \(mark)"
          return nil
        }
        lineHadProblem = true
        if !quiet {
          let name = text.string(nameRef)
          if toRef.isNone {
            diagnostics.error(
              mark, "two tasks have the id '\(name)' (also at \(self.mark(of: previous))); give one of them an 'id:'")
          } else if sameRequest {
            diagnostics.error(
              mark,
              "'\(name)' is already written by the task at \(self.mark(of: previous)); one request writes each destination once"
            )
          } else {
            diagnostics.error(
              mark,
              "two different requests write '\(name)': this task and the one at \(self.mark(of: previous)); give one of them another 'to:'"
            )
          }
        }
        return nil
      }
      pendingName = (nameRef, nameHash)
    }

    let requestNumber: Int32
    if let existingRequest {
      requestNumber = existingRequest
      let last = lastSharing[Int(existingRequest)]
      tasks[Int(last)].nextSharing = taskIndex
      lastSharing[Int(existingRequest)] = taskIndex
      requests[Int(existingRequest)].taskCount += 1
      if context.priority < requests[Int(existingRequest)].priority {
        requests[Int(existingRequest)].priority = context.priority
      }
      if sameContent { addMirror(url, to: existingRequest) }
      addMirrors(mirrors, to: existingRequest)
    } else {
      requestNumber = Int32(requests.count)
      requestIndex.insert(requestNumber, hash: key.low) { [requests] in requests[Int($0)].key.low }
      let host = internHost(authority)
      let requestURL = text.equals(urlRef, url) ? urlRef : text.append(url)
      requests.append(
        PlannedRequest(
          key: key, method: context.method, url: requestURL, host: host, session: context.session,
          priority: context.priority, firstTask: taskIndex, taskCount: 1, dependencies: [], shardKey: key))
      lastSharing.append(taskIndex)
      addMirrors(mirrors, to: requestNumber)
      if let contentName { contentRequests[contentName] = requestNumber }
    }
    let finalURL = urlRef.isNone ? requests[Int(requestNumber)].url : urlRef
    // A default id that an earlier task under an absolute `dest` took as its relative id: that task
    // takes `SESSION:RELATIVE` instead, so that no two tasks share one.
    if !explicitID, idRef == toRef, !toRef.isNone, !namedIDs.isEmpty {
      let id = text.string(toRef)
      if let other = namedIDs[ByteString(id)], tasks[Int(other)].id != tasks[Int(other)].to {
        namedIDs[ByteString(id)] = nil
        qualifyPortableID(of: other)
      }
    }
    tasks.append(
      PlannedTask(
        session: context.session, entry: context.entry, line: line, kind: context.kind, request: requestNumber,
        nextSharing: -1, id: explicitID || idRef != toRef ? idRef : portableID(toRef, session: context.session),
        url: finalURL, to: toRef))
    if let pendingName {
      insertDestination(pendingName.ref, task: taskIndex, isDestination: !toRef.isNone, hash: pendingName.hash)
    }
    return taskIndex
  }

  package mutating func internHost(_ authority: UnsafeRawBufferPointer) -> Int32 {
    // Consecutive requests mostly share their host: compare with the last one before making a
    // String to look up.
    if lastHost >= 0 {
      var last = hosts[Int(lastHost)]
      if last.withUTF8({ bytesEqual(UnsafeRawBufferPointer($0), authority) }) { return lastHost }
    }
    let name = String(decoding: authority, as: UTF8.self)
    if let index = hostIndex[name] {
      lastHost = index
      return index
    }
    let index = Int32(hosts.count)
    hosts.append(name)
    hostIndex[name] = index
    lastHost = index
    return index
  }

  package func mark(of task: PlannedTask) -> SourceMark {
    let entry = manifest.sessions[Int(task.session)].tasks[Int(task.entry)]
    switch entry {
    case .task(let spec): return spec.mark
    case .list(let spec):
      return SourceMark(
        file: FileAccess.resolve(spec.file, against: manifest.directory), line: Int(task.line), column: 1)
    case .metalink(let spec):
      return spec.mark
    case .index(let spec):
      return spec.mark
    case .apt(let spec):
      return spec.mark
    }
  }
}
