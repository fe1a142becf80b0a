import BatchDLPlan
import BatchDLStore
import BatchDLSupport

/// Prints a plan for people (`batchdl plan`) or machines (`batchdl plan --json`).
public struct PlanListing {
  public let plan: Plan
  /// Only this shard's requests, when set.
  public var shard: Shard?
  /// Annotate every request with its shard among this many, when set (and no `shard`).
  public var shardCount: Int?
  private let redactor: Redactor

  /// What earlier runs left, to say per request whether it would be sent, resumed or skipped.
  public var prior: PriorState?
  /// As `run --refresh` would see it.
  public var refresh = false
  /// What each session's `prune:` would delete (`PruneDecisions.prunePlans`): listed after the
  /// requests.
  public var prune: [PrunePlan] = []
  /// List the bytes the run expects to write and the space free, per filesystem, last
  /// (`PlanSpace`).
  public var showsSpace = false

  public init(plan: Plan, shard: Shard? = nil, shardCount: Int? = nil) {
    self.plan = plan
    self.shard = shard
    self.shardCount = shard?.count ?? shardCount
    // The redactor knows the encoded spellings normalized URLs carry (`a|b` as `a%7Cb`).
    self.redactor = Redactor(secrets: plan.manifest.secrets)
  }

  /// Positions (1-based) of requests in the scheduled order.
  private func positions() -> [Int32] {
    var position = [Int32](repeating: 0, count: plan.requests.count)
    for (index, request) in plan.order.enumerated() { position[Int(request)] = Int32(index + 1) }
    return position
  }

  private func included(_ request: PlannedRequest) -> Bool {
    shard.map { $0.contains(request) } ?? true
  }

  private func sessionName(_ index: Int32) -> String { plan.manifest.sessions[Int(index)].name }

  /// The connections a download may use (its task's `segments:`, else its session's
  /// `network.segments`), when more than one.
  private func segments(of request: PlannedRequest) -> Int? {
    guard let owner = plan.owner(of: request), owner.kind == .download else { return nil }
    var count = plan.session(of: request).network.segments
    if case .task(let spec) = plan.entry(of: owner) { count = spec.segments ?? count }
    return count > 1 ? count : nil
  }

  /// The human-readable listing.
  public func writeText(to out: inout some TextOutputStream) {
    let position = positions()
    var requestCount = 0
    var taskCount = 0
    var shared = 0
    for index in plan.order where included(plan.requests[Int(index)]) {
      requestCount += 1
      taskCount += Int(plan.requests[Int(index)].taskCount)
      if plan.requests[Int(index)].taskCount > 1 { shared += 1 }
    }
    var header = "plan for \(plan.manifest.path)"
    if let shard { header += " (shard \(shard))" }
    header += ": \(taskCount) task\(taskCount == 1 ? "" : "s") → \(requestCount) request\(requestCount == 1 ? "" : "s")"
    if shared > 0 { header += ", \(shared) shared by several tasks" }
    if plan.mergedDuplicates > 0 {
      header += ", \(plan.mergedDuplicates) repeated task\(plan.mergedDuplicates == 1 ? "" : "s") merged"
    }
    out.write(header + "\n")
    for line in accessLines() { out.write(line + "\n") }
    for line in repositoryLines() { out.write(line + "\n") }
    // Lines go into one buffer written every 64 KB: a String per line and per note cost more
    // than the rest of the listing at 100,000 requests.
    var text = ""
    text.reserveCapacity(1 << 16)
    var tally = PlanSpace.Tally(sessions: plan.manifest.sessions.count)
    for index in plan.order {
      let request = plan.requests[Int(index)]
      guard included(request) else { continue }
      text += "#"
      text += String(position[Int(index)])
      text += "  "
      text += request.method
      text += " "
      text += redactor.url(plan.url(of: request))
      text += "  ("
      let refusal = plan.refusedRequests[index]
      // A request that fails before it is sent writes nothing.
      if showsSpace && refusal == nil && prior == nil { tally.add(request, action: nil, in: plan) }
      if let refusal {
        text += "fails before it is sent: \(refusal.code): " + redactor.text(refusal.message) + ", "
      } else if let prior {
        let (action, reason) = prior.action(for: request, in: plan, refresh: refresh)
        if showsSpace { tally.add(request, action: action, in: plan) }
        switch action {
        case .send: text += "send: "
        case .resume(let offset): text += "resume from byte \(offset): "
        case .revalidate: text += "revalidate: "
        case .unchanged: text += "skip: "
        }
        text += reason
        text += ", "
      }
      if plan.unverifiedRequests.contains(index) { text += "no upstream digest (unlisted: fetch), " }
      text += "session "
      text += sessionName(request.session)
      if request.priority != .normal { text += ", \(request.priority.rawValue) priority" }
      if let segments = segments(of: request) { text += ", segments \(segments)" }
      if let count = shardCount { text += ", shard \(plan.shard(of: request, count: count))/\(count)" }
      if !request.dependencies.isEmpty {
        let after = request.dependencies.map { position[Int($0)] }.sorted().map { "#\($0)" }
        // A repository's index waits for thousands of pool files: the first few are named.
        text += ", after " + after.prefix(8).joined(separator: ", ")
        if after.count > 8 { text += " and \(after.count - 8) more" }
      }
      text += ")\n"
      for mirror in request.mirrors {
        text += "    mirror "
        text += redactor.url(plan.text.string(mirror))
        text += "\n"
      }
      for task in plan.tasks(of: request) {
        text += "    "
        text += task.kind.rawValue
        let id = redactor.text(plan.id(of: task))
        if let to = plan.destination(of: task) {
          text += " → "
          text += redactor.text(to)
          if id != to {
            text += "  [id "
            text += id
            text += "]"
          }
        } else {
          text += "  [id "
          text += id
          text += "]"
        }
        text += "\n"
      }
      if text.utf8.count >= (1 << 16) - 4096 {
        out.write(text)
        text.removeAll(keepingCapacity: true)
      }
    }
    for decision in prune { text += pruneText(decision) }
    if showsSpace { for line in PlanSpace.lines(plan: plan, tally: tally) { text += line.text + "\n" } }
    out.write(text)
  }

  /// A session's prune: a line that says what the run would do, then a `delete PATH` line for each
  /// file it would delete and a `leave PATH` line for each record it would not touch.
  private func pruneText(_ decision: PrunePlan) -> String {
    var text = "prune session \(decision.session)"
    if let limit = decision.limit {
      text += decision.limitName == "--max-delete" ? " (--max-delete \(limit))" : " (max_delete \(limit))"
    }
    text += ": "
    let count = decision.deletions.count
    let files = "\(count) file\(count == 1 ? "" : "s")"
    if let blocked = decision.blocked {
      text += "the run would delete nothing: \(blocked)\n"
    } else if decision.exceedsLimit {
      text +=
        "the run would delete nothing and fail with prune-limit: it \(decision.limitReason); \(decision.limitAdvice)\n"
    } else if count == 0 {
      text += "nothing to delete (\(decision.recorded) file\(decision.recorded == 1 ? "" : "s") recorded"
      text += decision.kept > 0 ? ", \(decision.kept) kept by keep_removed)\n" : ")\n"
    } else {
      text +=
        "the run would delete \(files) no task names any more, of \(decision.recorded) recorded, unless a task of the session fails\n"
    }
    let verb = decision.blocked == nil && !decision.exceedsLimit ? "delete" : "would delete, but for the above,"
    for deletion in decision.deletions { text += "    \(verb) \(redactor.text(deletion.path))\n" }
    for left in decision.changed + decision.refused {
      text += "    leave \(redactor.text(left.path)): \(left.why)\n"
    }
    return text
  }

  /// A session's prune in `plan --json`.
  private func pruneJSON(_ decision: PrunePlan) -> JSON {
    var fields: [String: JSON] = [
      "session": .string(decision.session), "recorded": .int(decision.recorded),
      "delete": .array(decision.deletions.map { .string(redactor.text($0.path)) }),
      "leave": .array(
        (decision.changed + decision.refused).map {
          .object(["path": .string(redactor.text($0.path)), "reason": .string($0.why)])
        }),
      "limit_exceeded": .bool(decision.exceedsLimit),
    ]
    if let limit = decision.limit { fields["max_delete"] = .string(limit.description) }
    if let blocked = decision.blocked { fields["blocked"] = .string(blocked) }
    if decision.exceedsLimit {
      fields["error"] = .object([
        "code": .string("prune-limit"), "message": .string(redactor.text(decision.limitMessage)),
      ])
    }
    return .object(fields)
  }

  /// The JSON listing: `{"format": "batchdl-plan/1", "manifest", "requests": [...], "summary"}`,
  /// keys sorted, requests in scheduled order.
  public func writeJSON(to out: inout some TextOutputStream) {
    let position = positions()
    var head = "{\"format\":\"batchdl-plan/1\",\"manifest\":"
    JSON.quote(plan.manifest.path, into: &head)
    if !prune.isEmpty { head += ",\"prune\":" + JSON.array(prune.map(pruneJSON)).text }
    head += ",\"requests\":["
    out.write(head)
    var first = true
    var requestCount = 0
    var taskCount = 0
    var text = ""
    text.reserveCapacity(1 << 16)
    var tally = PlanSpace.Tally(sessions: plan.manifest.sessions.count)
    for index in plan.order {
      let request = plan.requests[Int(index)]
      guard included(request) else { continue }
      requestCount += 1
      taskCount += Int(request.taskCount)
      // Keys in sorted order, written directly: a million requests must not build a million trees.
      text += first ? "{" : ",{"
      first = false
      var decision: (action: RequestAction, reason: String)?
      // A request that fails before it is sent writes nothing.
      let writes = showsSpace && plan.refusedRequests[index] == nil
      if writes && prior == nil { tally.add(request, action: nil, in: plan) }
      if let prior {
        let found = prior.action(for: request, in: plan, refresh: refresh)
        decision = found
        if writes { tally.add(request, action: found.action, in: plan) }
        text += "\"action\":\"" + found.action.name + "\","
      }
      text += "\"after\":["
      let after = request.dependencies.map { position[Int($0)] }.sorted()
      for (offset, value) in after.enumerated() { text += offset == 0 ? String(value) : "," + String(value) }
      text += "]"
      if let refusal = plan.refusedRequests[index] {
        text += ",\"fails\":{\"code\":\"\(refusal.code)\",\"message\":"
        JSON.quote(redactor.text(refusal.message), into: &text)
        text += "}"
      }
      text += ",\"host\":"
      JSON.quote(redactor.text(plan.hosts[Int(request.host)]), into: &text)
      text += ",\"key\":\"" + request.key.description + "\",\"method\":"
      JSON.quote(request.method, into: &text)
      if !request.mirrors.isEmpty {
        text += ",\"mirrors\":["
        for (offset, mirror) in request.mirrors.enumerated() {
          if offset > 0 { text += "," }
          JSON.quote(redactor.url(plan.text.string(mirror)), into: &text)
        }
        text += "]"
      }
      text += ",\"position\":" + String(position[Int(index)]) + ",\"priority\":\"" + request.priority.rawValue + "\""
      if let decision {
        text += ",\"reason\":"
        JSON.quote(decision.reason, into: &text)
        if case .resume(let offset) = decision.action { text += ",\"resume_from\":" + String(offset) }
      }
      if let segments = segments(of: request) { text += ",\"segments\":" + String(segments) }
      text += ",\"session\":"
      JSON.quote(sessionName(request.session), into: &text)
      if let count = shardCount { text += ",\"shard\":" + String(plan.shard(of: request, count: count)) }
      text += ",\"tasks\":["
      var task = request.firstTask
      var firstTask = true
      while task >= 0 {
        let planned = plan.tasks[Int(task)]
        text += firstTask ? "{\"id\":" : ",{\"id\":"
        firstTask = false
        JSON.quote(redactor.text(plan.id(of: planned)), into: &text)
        text += ",\"kind\":\"" + planned.kind.rawValue + "\""
        if let to = plan.destination(of: planned) {
          text += ",\"to\":"
          JSON.quote(redactor.text(to), into: &text)
        }
        text += "}"
        task = planned.nextSharing
      }
      text += "],\"url\":"
      JSON.quote(redactor.url(plan.url(of: request)), into: &text)
      if plan.unverifiedRequests.contains(index) { text += ",\"verified\":false" }
      text += "}"
      if text.utf8.count >= 1 << 16 {
        out.write(text)
        text.removeAll(keepingCapacity: true)
      }
    }
    out.write(text)
    var summary: [String: JSON] = [
      "tasks": .int(taskCount), "requests": .int(requestCount), "hosts": .int(plan.hosts.count),
      "sessions": .int(plan.manifest.sessions.count), "merged_duplicates": .int(plan.mergedDuplicates),
    ]
    if let shard { summary["shard"] = .string(shard.description) }
    out.write("]")
    if showsSpace {
      out.write(",\"space\":" + JSON.array(PlanSpace.lines(plan: plan, tally: tally).map(\.json)).text)
    }
    out.write(",\"summary\":" + JSON.object(summary).text + "}\n")
  }
}

extension PlanListing {
  /// One line per session that is let in otherwise than directly and anonymously: its proxy
  /// route and who its requests are made as, never a secret.
  func accessLines() -> [String] {
    var lines: [String] = []
    for session in plan.manifest.sessions where !session.access.isEmpty {
      var parts: [String] = []
      if let auth = session.access.auth { parts.append("auth \(auth.scheme.rawValue) as \(redactor.text(auth.user))") }
      if let netrc = session.access.netrc { parts.append("netrc \(netrc.path)") }
      if let signature = session.access.awsSigV4 { parts.append("aws_sigv4 \(signature.provider)") }
      let proxies = session.access.proxy.shown
      if !proxies.isEmpty { parts.append("proxy " + proxies.joined(separator: "; ")) }
      lines.append("session \(session.name): " + redactor.text(parts.joined(separator: ", ")))
    }
    return lines
  }
}

extension PlanListing {
  /// The chain of each `apt:` entry: every document read, its verdict, and the files it adds.
  func repositoryLines() -> [String] {
    var lines: [String] = []
    var entry: (Int32, Int32)?
    for line in plan.repositoryChain {
      if entry.map({ $0 != (line.session, line.entry) }) ?? true {
        entry = (line.session, line.entry)
        let session = plan.manifest.sessions[Int(line.session)]
        if case .apt(let spec) = session.tasks[Int(line.entry)] {
          lines.append("repository \(redactor.url(spec.url)) (session \(session.name)):")
        }
      }
      var text = "    \(line.path): "
      if let failure = line.failure {
        text += "fails, \(failure)"
      } else if line.filesAdded > 0 {
        let files = "\(line.filesAdded) file\(line.filesAdded == 1 ? "" : "s")"
        text += "verified, names \(files) of \(line.bytesAdded) bytes"
      } else {
        text += "verified"
      }
      lines.append(text)
    }
    return lines
  }
}
