/// The order requests start in, and the shard each request belongs to.
extension PlanBuilder {
  /// Kahn's algorithm over `after:`; among ready requests, higher priority first, then round-robin
  /// across hosts so that one host's thousand files do not starve another's ten.
  package mutating func schedule() -> [Int32] {
    let count = requests.count
    var indegree = [Int32](repeating: 0, count: count)
    var dependents: [Int32: [Int32]] = [:]
    // By index rather than by element: each element would be a copy of the request.
    for index in requests.indices where !requests[index].dependencies.isEmpty {
      indegree[index] = Int32(requests[index].dependencies.count)
      for dependency in requests[index].dependencies { dependents[dependency, default: []].append(Int32(index)) }
    }
    var queues = [HostRoundRobin](repeating: HostRoundRobin(hostCount: hosts.count), count: 3)
    for index in requests.indices where indegree[index] == 0 {
      queues[requests[index].priority.rank].push(Int32(index), host: requests[index].host)
    }
    var order: [Int32] = []
    order.reserveCapacity(count)
    while true {
      guard let rank = queues.firstIndex(where: { !$0.isEmpty }), let next = queues[rank].pop() else { break }
      order.append(next)
      if dependents.isEmpty { continue }
      for dependent in dependents[next] ?? [] {
        indegree[Int(dependent)] -= 1
        if indegree[Int(dependent)] == 0 {
          let request = requests[Int(dependent)]
          queues[request.priority.rank].push(dependent, host: request.host)
        }
      }
    }
    if order.count < count, let stuck = indegree.firstIndex(where: { $0 > 0 }) {
      let task = tasks[Int(requests[stuck].firstTask)]
      diagnostics.error(
        mark(of: task),
        "after: requests wait for each other through tasks that share them (task '\(text.string(task.id))'); remove one of the references"
      )
    }
    return order
  }

  /// Requests joined by `after:` share a shard: the smallest key among those of them that wait for
  /// nothing decides it, so that adding a task `after:` existing ones never moves them.
  package mutating func assignShardKeys() {
    guard requests.contains(where: { !$0.dependencies.isEmpty }) || !publishGroups.isEmpty else { return }
    var parent = Array(0..<Int32(requests.count))
    func find(_ x: Int32) -> Int32 {
      var root = x
      while parent[Int(root)] != root { root = parent[Int(root)] }
      var node = x
      while parent[Int(node)] != root {
        let next = parent[Int(node)]
        parent[Int(node)] = root
        node = next
      }
      return root
    }
    for (index, request) in requests.enumerated() {
      // A mirrored checksum file waits for the files it covers, but does not pull them all into
      // its shard: each shard places it after its own files.
      let publishing = publishWaits[Int32(index)] ?? []
      for dependency in request.dependencies where !publishing.contains(dependency) {
        let a = find(Int32(index))
        let b = find(dependency)
        if a != b { parent[Int(a)] = b }
      }
    }
    // A publish group (an APT suite's index files and roots) is placed together: one shard.
    for group in publishGroups {
      for member in group.members.dropFirst() {
        let a = find(member)
        let b = find(group.members[0])
        if a != b { parent[Int(a)] = b }
      }
    }
    // Every group without a cycle has a request that waits for nothing; a cycle is an error anyway.
    var smallest: [Int32: (key: RequestKey, waits: Bool)] = [:]
    for index in requests.indices {
      let root = find(Int32(index))
      let candidate = (key: requests[index].key, waits: !requests[index].dependencies.isEmpty)
      if let current = smallest[root], current.waits == candidate.waits ? current.key <= candidate.key : !current.waits
      {
        continue
      }
      smallest[root] = candidate
    }
    for index in requests.indices {
      if let key = smallest[find(Int32(index))]?.key { requests[index].shardKey = key }
    }
  }
}

/// Ready requests of one priority: one FIFO per host, hosts served in turn.
private struct HostRoundRobin {
  /// Indexed by host (hosts are numbered densely from 0): no hashing per request.
  var perHost: [[Int32]]
  var heads: [Int]
  var rotation: [Int32] = []
  var rotationHead = 0

  init(hostCount: Int) {
    perHost = Array(repeating: [], count: hostCount)
    heads = Array(repeating: 0, count: hostCount)
  }

  var isEmpty: Bool { rotationHead >= rotation.count }

  mutating func push(_ request: Int32, host: Int32) {
    let queued = perHost[Int(host)].count - heads[Int(host)]
    perHost[Int(host)].append(request)
    if queued == 0 { rotation.append(host) }
  }

  mutating func pop() -> Int32? {
    guard rotationHead < rotation.count else { return nil }
    let host = Int(rotation[rotationHead])
    rotationHead += 1
    let head = heads[host]
    guard head < perHost[host].count else { return nil }
    let next = perHost[host][head]
    heads[host] = head + 1
    if head + 1 < perHost[host].count {
      rotation.append(Int32(host))
    } else {
      perHost[host] = []
      heads[host] = 0
    }
    if rotationHead > 4096 && rotationHead * 2 > rotation.count {
      rotation.removeFirst(rotationHead)
      rotationHead = 0
    }
    return next
  }
}
