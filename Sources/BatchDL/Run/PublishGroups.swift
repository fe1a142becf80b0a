import BatchDLPlan
import BatchDLSupport
import BatchDLTransfer
import Foundation

/// Publish groups (`Plan.publishGroups`: an APT suite's index files and roots): the results of a
/// group's requests are held, not placed, until every member of the group has its outcome; then
/// all are placed in order and the group's stale roots removed, or, when one failed, none is and
/// the copies in place stay. A mirror never publishes part of a suite.
extension RunBookkeeper {
  /// Notes, before the engine starts, the members of each group that run (the others are
  /// unchanged, or fail before they are sent), and fails the groups that are withheld or have a
  /// member that fails before it is sent.
  func prepareGroups(jobs: Set<Int32>, blocked: [Int32: TransferFailure]) {
    for (number, group) in plan.publishGroups.enumerated() {
      let id = Int32(number)
      groupWaiting[id] = Set(group.members.filter { jobs.contains($0) })
      if group.withheld {
        groupFailure[id] = "a file of the suite was left out of the plan"
      } else if let member = group.members.first(where: { blocked[$0] != nil }) {
        groupFailure[id] = "\(memberName(member)) failed"
      }
    }
  }

  /// Whether `request` is a member of a publish group; then its result is the group's to place.
  func publishGroup(of request: Int32) -> Int32? { plan.publishGroupOfRequest[request] }

  /// A member's transfer came whole and checked: held (or failed at once when its group has).
  func hold(_ result: TransferResult, for tasks: SharingTasks, request: PlannedRequest, index: Int32, group: Int32) {
    // Checked now, as placing it would: a member with other bytes fails its group before any
    // member is placed.
    if let failure = tasks.lazy.compactMap({ self.expectationProblem($0, result) }).first {
      discard(result, tasks: tasks, request: request, failure: failure, status: result.head.status)
      memberFailed(index, group: group)
      return
    }
    if let why = groupFailure[group] {
      refuse(result, tasks: tasks, request: request, because: why)
    } else {
      heldResults[group, default: []].append(HeldResult(result: result, tasks: tasks, request: request, index: index))
    }
    memberDone(index, group: group)
  }

  /// A member that needs nothing placed (a 304) is done.
  func memberDone(_ index: Int32, group: Int32) {
    groupWaiting[group]?.remove(index)
    publishIfComplete(group)
  }

  /// A member failed: nothing of the group is placed.
  func memberFailed(_ index: Int32, group: Int32) {
    if groupFailure[group] == nil { groupFailure[group] = "\(memberName(index)) failed" }
    for held in heldResults[group] ?? [] {
      refuse(held.result, tasks: held.tasks, request: held.request, because: groupFailure[group] ?? "")
    }
    heldResults[group] = nil
    groupWaiting[group]?.remove(index)
  }

  /// At the end of the run: what groups still hold is not placed (a member never ended).
  func abandonGroups() {
    for group in heldResults.keys.sorted() where !(heldResults[group]?.isEmpty ?? true) {
      if groupFailure[group] == nil { groupFailure[group] = "the run ended before the whole suite had come" }
      for held in heldResults[group] ?? [] {
        refuse(held.result, tasks: held.tasks, request: held.request, because: groupFailure[group] ?? "")
      }
      heldResults[group] = nil
    }
  }

  private func publishIfComplete(_ group: Int32) {
    guard groupWaiting[group]?.isEmpty ?? true, groupFailure[group] == nil else { return }
    let held = heldResults[group] ?? []
    heldResults[group] = nil
    groupWaiting[group] = nil
    let order = Dictionary(
      plan.publishGroups[Int(group)].members.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    for item in held.sorted(by: { (order[$0.index] ?? 0) < (order[$1.index] ?? 0) }) {
      place(item.result, for: item.tasks, request: item.request)
      recorder.finished(item.request)
    }
    // Roots upstream no longer publishes go: they would name other files than the new ones.
    for removal in plan.publishGroups[Int(group)].removals {
      let path = plan.absolute(removal)
      var info = stat()
      if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, unlink(path) == 0 {
        display.note("removed \(redactor.text(removal)) (upstream no longer publishes it)")
      }
    }
    retire(plan.publishGroups[Int(group)].retired)
  }

  /// Removes the copies at `destinations` that an earlier run of this manifest placed and no task
  /// of the plan names, when they are still what was placed (a user's file is never touched).
  private func retire(_ destinations: [String]) {
    guard !destinations.isEmpty, let records = recorder.placedFiles() else { return }
    let placed = Dictionary(records.map { (ByteString($0.path), $0) }, uniquingKeysWith: { first, _ in first })
    let candidates = destinations.filter { placed[ByteString($0)] != nil }
    guard !candidates.isEmpty else { return }
    let named = Set(plan.tasks.compactMap { $0.to.isNone ? nil : ByteString(plan.text.string($0.to)) })
    var forgotten: [String] = []
    for destination in candidates where !named.contains(ByteString(destination)) {
      guard let record = placed[ByteString(destination)] else { continue }
      let path = plan.absolute(destination)
      guard let identity = FileIdentity(path: path), identity.size == record.size,
        identity.modified == record.modified, identity.inode == record.inode
      else { continue }
      if unlink(path) == 0 {
        forgotten.append(destination)
        display.note("removed \(redactor.text(destination)) (no longer mirrored; it would not match the new Release)")
      }
    }
    recorder.forget(placed: forgotten)
  }

  private func refuse(_ result: TransferResult, tasks: SharingTasks, request: PlannedRequest, because why: String) {
    let failure = TransferFailure(
      code: .dependency, message: "not published: \(why); the copies in place stay", attempts: result.attempts)
    discard(result, tasks: tasks, request: request, failure: failure)
  }

  /// A transfer that came but is not placed: its tasks fail with `failure`, its partial file goes.
  func discard(
    _ result: TransferResult, tasks: SharingTasks, request: PlannedRequest, failure: TransferFailure,
    status: Int? = nil
  ) {
    for task in tasks {
      let outcome = failed(task, failure, status: status)
      record(outcome)
      recorder.remember(task, outcome, request: request, head: nil)
    }
    if let file = result.file { unlink(file) }
    recorder.finished(request)
  }

  private func memberName(_ request: Int32) -> String {
    let task = plan.tasks[Int(plan.requests[Int(request)].firstTask)]
    return redactor.text(plan.id(of: task))
  }
}

/// A group member's transfer, held until its group is complete.
struct HeldResult {
  var result: TransferResult
  var tasks: SharingTasks
  var request: PlannedRequest
  var index: Int32
}
