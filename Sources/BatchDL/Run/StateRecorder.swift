import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
import Foundation

/// Records what a run did in the state folder, for the next run: checkpoints as transfers reach
/// the disk, each task's result (with its file's size and time), the time spent against
/// `timeouts.resource`, and the removal of a finished request's checkpoint and budget. Results,
/// removals and budgets are written in batches, at most four times a second and at the end.
/// Ephemeral sessions record nothing. Used by one thread at a time (the relay's while the engine
/// runs).
final class StateRecorder {
  private let plan: Plan
  private let redactor: Redactor
  private var store: StateStore?
  private var prior = PriorState()
  private var warn: (String) -> Void = { _ in }
  /// Why the last flush could not record what the run did (the state folder's disk is full), or
  /// nil when everything so far is recorded: a run that ends so exits 5 (`RunVerdict`).
  private(set) var unrecorded: String?
  private var pendingResults = ResultBatch()
  private var pendingRemovals: [String] = []
  /// Requests whose records of their partial files (`recordStarts`) go at the next flush.
  private var pendingPartials: [String] = []
  private var pendingBudgets: [(key: String, spent: Int64, attempts: Int)] = []
  /// Files placed since the last flush, with their identity (what `prune:` may remove later).
  private var pendingPlaced: [PlacedFile] = []
  private var lastFlush = Engine.now()
  /// Requests (by key) whose checkpoints were recorded in this run.
  private var checkpointed: Set<String> = []
  /// Requests (by key) whose partial files this run recorded before sending them (`recordStarts`).
  private var started: Set<RequestKey> = []

  /// By session index: whether its placed files are recorded (it prunes, or mirrors a
  /// repository), decided once rather than per file.
  private let recordsPlaced: [Bool]

  init(plan: Plan, redactor: Redactor) {
    self.plan = plan
    self.redactor = redactor
    recordsPlaced = plan.manifest.sessions.map { $0.prune != nil || Self.mirrorsRepository($0) }
  }

  /// Starts recording into `store`, whose earlier contents are `prior`; `warn` says what could not
  /// be recorded.
  func open(_ store: StateStore?, prior: PriorState, warn: @escaping (String) -> Void) {
    self.store = store
    self.prior = prior
    self.warn = warn
  }

  /// Closes the database (its write-ahead log folded back in).
  func close() {
    store = nil
  }

  /// Whether a request's outcome is recorded: a state folder is open and its session is not ephemeral.
  func persists(_ request: PlannedRequest) -> Bool {
    store != nil && plan.manifest.sessions[Int(request.session)].kind != .ephemeral
  }

  /// Whether a checkpoint (an earlier run's or this one's) can continue the request's partial file.
  func hasCheckpoint(_ request: PlannedRequest) -> Bool {
    // Most runs have none: the key's text is only made to look one up.
    guard !prior.checkpoints.isEmpty || !checkpointed.isEmpty else { return false }
    let key = request.key.description
    return prior.checkpoints[key]?.holdsBytes == true || checkpointed.contains(key)
  }

  /// Records the partial file of each of `requests` (about to be sent) in the state folder before
  /// its first byte is written, as a checkpoint of no bytes, in one transaction: a run killed
  /// before its first checkpoint, or a download whose server gives no validator (never
  /// checkpointed), still leaves a record of each partial file batchdl made, so that prune removes
  /// it once no task names it (`RunBookkeeper.removeStalePartials`). A request that has a
  /// checkpoint already keeps it, unless it names another partial file (`partial_dir:` changed)
  /// that is gone. The record goes when the request finishes.
  func recordStarts(_ requests: [PlannedRequest]) {
    guard let store else { return }
    var partials: [(key: String, path: String)] = []
    var replaced: [Checkpoint] = []
    for request in requests where persists(request) {
      guard let partial = plan.partialPath(of: request) else { continue }
      let key = request.key.description
      if let point = prior.checkpoints[key] {
        // An earlier run's record of another partial file gives way only once that file is gone:
        // while it is there, prune needs the record to remove it.
        guard !point.partial.utf8.elementsEqual(partial.utf8), Self.isGone(point.partial) else { continue }
        replaced.append(
          Checkpoint(key: key, partial: partial, url: "", etag: nil, lastModified: nil, total: nil, durable: 0))
        continue
      }
      guard started.insert(request.key).inserted else { continue }
      partials.append((key, partial))
    }
    do {
      try store.record(partials: partials)
      try store.update(checkpoints: replaced)
    } catch {
      started.removeAll()
      warn("warning: cannot record the partial files of this run in the state folder: \(error)")
    }
  }

  /// Whether nothing is at `path` (a link counts as something).
  private static func isGone(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) != 0 && (errno == ENOENT || errno == ENOTDIR)
  }

  /// A request ended without writing its partial file (a `304`): this run's record of that file
  /// goes, and an earlier run's checkpoint stays.
  func notWritten(_ request: PlannedRequest) {
    guard started.contains(request.key) else { return }
    let key = request.key.description
    if !checkpointed.contains(key) { pendingPartials.append(key) }
  }

  /// Records checkpoints at once (they are what a kill leaves to resume from).
  func record(_ checkpoints: [(request: PlannedRequest, point: TransferCheckpoint)]) {
    guard let store else { return }
    var points: [Checkpoint] = []
    for (request, point) in checkpoints {
      let key = request.key.description
      checkpointed.insert(key)
      guard persists(request) else { continue }
      points.append(
        Checkpoint(
          key: key, partial: point.path, url: redactor.url(point.effectiveURL), etag: point.etag,
          lastModified: point.lastModified, total: point.total, durable: point.durable, extents: point.extents))
    }
    do {
      try store.update(checkpoints: points)
    } catch {
      warn("warning: cannot record checkpoints: \(error)")
    }
  }

  /// When results recorded now were checked with the server (seconds since the epoch).
  private let now = Int64(Date().timeIntervalSince1970)

  /// Remembers a task's result for the next run. `written`: the file's size and time as the run
  /// wrote it, when known (else they are read back); `path`: its absolute destination, when the
  /// caller has it at hand.
  func remember(
    _ task: PlannedTask, _ result: TaskResult, request: PlannedRequest, head: ResponseHead?,
    written: (size: Int64, modified: Int64)? = nil, at path: String? = nil
  ) {
    guard persists(request) else { return }
    let destination = path ?? plan.absoluteDestination(of: task)
    let completed = result.outcome == .completed
    let info = completed ? written ?? destination.flatMap(FileAccess.status) : nil
    let etag = head?.strongETag
    let lastModified = head?["last-modified"]
    // A completed task keeps the validators of its last result when the response has none.
    let previous = completed && (etag == nil || lastModified == nil) ? prior.results.entry(for: task, in: plan) : nil
    // The row's text goes into the batch's buffer: no String is made for the id and the key.
    let row = ResultBatch.Row(
      taskID: plan.text.withBytes(task.id) { pendingResults.text($0) }, requestKey: pendingResults.text(request.key),
      destination: pendingResults.text(destination), outcome: pendingResults.text(result.outcome.rawValue),
      status: result.status.map { Int64($0) }, size: result.size, sha256: pendingResults.text(result.sha256),
      etag: pendingResults.text(etag ?? previous.flatMap(prior.results.etag(of:))),
      lastModified: pendingResults.text(lastModified ?? previous.flatMap(prior.results.lastModified(of:))),
      fileSize: info?.size, fileModified: info?.modified, errorCode: pendingResults.text(result.error?.code),
      errorMessage: pendingResults.text(result.error?.message), checked: head == nil ? nil : now)
    pendingResults.append(row)
  }

  /// A task's file was confirmed unchanged by the server (a `304`): its recorded result stands, as
  /// checked now.
  func rechecked(_ task: PlannedTask, request: PlannedRequest) {
    guard persists(request), let entry = prior.results.entry(for: task, in: plan) else { return }
    var stored = prior.results.stored(entry)
    stored.taskID = plan.id(of: task)
    stored.checked = now
    pendingResults.append(stored)
  }

  /// A task's file was put in place at `path` (absolute): in a session with `prune:`, it is
  /// recorded as batchdl's, by its destination in the plan's form and its identity now, so that
  /// prune may remove it once no task names it (and only while it is still that file). Other
  /// sessions record nothing (a run of small files pays no row for it): when they start pruning,
  /// the files their tasks name are adopted from their results (`RunBookkeeper.prune`).
  func placed(_ task: PlannedTask, request: PlannedRequest, at path: String) {
    // Kept for prune, and for a repository's publication (which retires its index files no
    // longer mirrored, `PublishGroup.retired`).
    guard recordsPlaced[Int(task.session)], persists(request),
      let destination = plan.destination(of: task), let identity = FileIdentity(path: path)
    else { return }
    pendingPlaced.append(
      PlacedFile(session: plan.manifest.sessions[Int(task.session)].name, path: destination, identity: identity))
  }

  /// Whether `session` has an `apt:` entry.
  static func mirrorsRepository(_ session: Session) -> Bool {
    session.tasks.contains { entry in
      if case .apt = entry { return true }
      return false
    }
  }

  /// The files the state records as placed by this manifest's runs (this one's once flushed); nil
  /// without a state folder or when it cannot be read (said through `warn`).
  func placedFiles() -> [PlacedFile]? {
    guard let store else { return nil }
    do {
      return try store.placed()
    } catch {
      warn("warning: cannot read the files placed by earlier runs from the state folder: \(error)")
      return nil
    }
  }

  /// Records files placed at once (files an earlier run placed, adopted by prune).
  func record(placed files: [PlacedFile]) {
    guard let store, !files.isEmpty else { return }
    do {
      try store.update(placed: files)
    } catch {
      warn("warning: cannot record placed files in the state folder: \(error)")
    }
  }

  /// Forgets the records of files pruned, gone or no longer batchdl's.
  func forget(placed paths: [String]) {
    guard let store, !paths.isEmpty else { return }
    do {
      try store.update(placed: [], forgetting: paths)
    } catch {
      warn("warning: cannot record pruned files in the state folder: \(error)")
    }
  }

  /// Forgets the checkpoints (and budgets) of requests whose partial files prune removed.
  func forget(checkpoints keys: [String]) {
    guard let store, !keys.isEmpty else { return }
    do {
      try store.update(checkpoints: [], removing: keys)
      try store.save(budgets: [], removing: keys)
    } catch {
      warn("warning: cannot record pruned partial files in the state folder: \(error)")
    }
  }

  /// Records the time a request that did not finish has spent, across runs (ms).
  func spent(_ milliseconds: Int64, attempts: Int, on request: PlannedRequest) {
    guard persists(request) else { return }
    pendingBudgets.append((request.key.description, milliseconds, attempts))
  }

  /// A request finished: its checkpoint and budget go (only a request that has some has rows to
  /// remove, and most have none).
  func finished(_ request: PlannedRequest) {
    if !prior.checkpoints.isEmpty || !prior.budgets.isEmpty || !checkpointed.isEmpty {
      let key = request.key.description
      if prior.checkpoints[key] != nil || prior.budgets[key] != nil || checkpointed.contains(key) {
        pendingRemovals.append(key)
        return
      }
    }
    // Only this run's record of its partial file: one row to delete, nothing else to look at (the
    // key's text is made only then).
    if started.contains(request.key) { pendingPartials.append(request.key.description) }
  }

  /// Writes results, removed checkpoints and budgets: at most four times a second, unless `force`.
  func flush(force: Bool = false) {
    guard let store, force || Engine.now() &- lastFlush >= 250 else { return }
    lastFlush = Engine.now()
    do {
      try store.save(results: pendingResults)
      try store.update(checkpoints: [], removing: pendingRemovals)
      try store.forget(partials: pendingPartials)
      try store.save(budgets: pendingBudgets, removing: pendingRemovals)
      try store.update(placed: pendingPlaced)
      unrecorded = nil
    } catch {
      // Kept for the next flush (space may come back before the run ends): a result dropped here
      // would send its file again next run. Said once; the run's verdict reports what remains.
      if unrecorded == nil { warn("warning: cannot record results in the state folder: \(error); retrying") }
      unrecorded = "\(error)"
      return
    }
    pendingResults.removeAll()
    pendingRemovals.removeAll(keepingCapacity: true)
    pendingPartials.removeAll(keepingCapacity: true)
    pendingBudgets.removeAll(keepingCapacity: true)
    pendingPlaced.removeAll(keepingCapacity: true)
  }
}
