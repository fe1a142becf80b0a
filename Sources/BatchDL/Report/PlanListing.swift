/// Prints a plan for people (`batchdl plan`) or machines (`batchdl plan --json`).
public struct PlanListing {
  public let plan: Plan
  /// Only this shard's requests, when set.
  public var shard: Shard?
  /// Annotate every request with its shard among this many, when set (and no `shard`).
  public var shardCount: Int?
  private let redactor: Redactor

  public init(plan: Plan, shard: Shard? = nil, shardCount: Int? = nil) {
    self.plan = plan
    self.shard = shard
    self.shardCount = shard?.count ?? shardCount
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
    if plan.mergedDuplicates > 0 { header += ", \(plan.mergedDuplicates) repeated task\(plan.mergedDuplicates == 1 ? "" : "s") merged" }
    out.write(header + "\n")
    for index in plan.order {
      let request = plan.requests[Int(index)]
      guard included(request) else { continue }
      var line = "#\(position[Int(index)])  \(request.method) \(redactor.url(plan.url(of: request)))"
      var notes = ["session \(sessionName(request.session))"]
      if request.priority != .normal { notes.append("\(request.priority.rawValue) priority") }
      if let count = shardCount { notes.append("shard \(plan.shard(of: request, count: count))/\(count)") }
      if !request.dependencies.isEmpty {
        let after = request.dependencies.map { position[Int($0)] }.sorted().map { "#\($0)" }
        notes.append("after " + after.joined(separator: ", "))
      }
      line += "  (" + notes.joined(separator: ", ") + ")\n"
      out.write(line)
      for task in plan.tasks(of: request) {
        var taskLine = "    \(task.kind.rawValue)"
        let id = redactor.text(plan.id(of: task))
        if let to = plan.destination(of: task) {
          taskLine += " → \(redactor.text(to))"
          if id != to { taskLine += "  [id \(id)]" }
        } else {
          taskLine += "  [id \(id)]"
        }
        out.write(taskLine + "\n")
      }
    }
  }

  /// The JSON listing: `{"format": "batchdl-plan/1", "manifest", "requests": [...], "summary"}`,
  /// keys sorted, requests in scheduled order.
  public func writeJSON(to out: inout some TextOutputStream) {
    let position = positions()
    var head = "{\"format\":\"batchdl-plan/1\",\"manifest\":"
    JSON.quote(plan.manifest.path, into: &head)
    head += ",\"requests\":["
    out.write(head)
    var first = true
    var requestCount = 0
    var taskCount = 0
    for index in plan.order {
      let request = plan.requests[Int(index)]
      guard included(request) else { continue }
      requestCount += 1
      taskCount += Int(request.taskCount)
      var fields: [String: JSON] = [
        "position": .int(Int(position[Int(index)])),
        "key": .string(request.key.description),
        "method": .string(request.method),
        "url": .string(redactor.url(plan.url(of: request))),
        "host": .string(plan.hosts[Int(request.host)]),
        "session": .string(sessionName(request.session)),
        "priority": .string(request.priority.rawValue),
        "after": .array(request.dependencies.map { Int(position[Int($0)]) }.sorted().map { .int($0) }),
        "tasks": .array(
          plan.tasks(of: request).map { task in
            var entry: [String: JSON] = [
              "id": .string(redactor.text(plan.id(of: task))),
              "kind": .string(task.kind.rawValue),
            ]
            if let to = plan.destination(of: task) { entry["to"] = .string(redactor.text(to)) }
            return .object(entry)
          }),
      ]
      if let count = shardCount { fields["shard"] = .int(plan.shard(of: request, count: count)) }
      var text = first ? "" : ","
      first = false
      JSON.object(fields).write(to: &text)
      out.write(text)
    }
    var summary: [String: JSON] = [
      "tasks": .int(taskCount), "requests": .int(requestCount), "hosts": .int(plan.hosts.count),
      "sessions": .int(plan.manifest.sessions.count), "merged_duplicates": .int(plan.mergedDuplicates),
    ]
    if let shard { summary["shard"] = .string(shard.description) }
    out.write("],\"summary\":" + JSON.object(summary).text + "}\n")
  }
}
