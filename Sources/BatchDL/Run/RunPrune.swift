import BatchDLManifest
import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import Foundation

/// `prune:` at the end of a run, once every file is in place: for each session of the run that
/// prunes, the `PrunePlan` (the same decision `plan` lists) is carried out, unless the run was
/// interrupted, `--no-prune` was given, or a task or descriptor of the session failed.
extension RunBookkeeper {
  /// Files of the pruning sessions' tasks that the state folder's results say batchdl placed
  /// (completed or unchanged, still of the recorded size and time) but that have no `placed`
  /// record: those placed before the state kept them (schema 5), or before `prune:` was set.
  /// Only tasks the plan names are adopted, so nothing is deleted on their account in this run;
  /// once adopted, a file is pruned when a later manifest no longer names it.
  private func adoptPlacedBefore(sessions: [Int], known: [PlacedFile]) -> [PlacedFile] {
    guard !prior.results.isEmpty else { return [] }
    let recorded = Set(known.map { ByteString($0.path) })
    var adopted: [PlacedFile] = []
    var seen = Set<ByteString>()
    for task in plan.tasks where !task.to.isNone && sessions.contains(Int(task.session)) {
      let destination = plan.text.string(task.to)
      let name = ByteString(destination)
      guard !recorded.contains(name), !seen.contains(name),
        let entry = prior.results.entry(for: task, in: plan),
        entry.outcome == .completed || entry.outcome == .unchanged,
        let identity = FileIdentity(path: plan.absolute(destination)),
        identity.size == entry.fileSize, identity.modified == entry.fileModified
      else { continue }
      seen.insert(name)
      adopted.append(
        PlacedFile(session: plan.manifest.sessions[Int(task.session)].name, path: destination, identity: identity))
    }
    return adopted
  }

  /// Removes the partial files under `root` (the session's `dest`) or in the session's
  /// `partial_dir:` of requests the plan no longer makes (a download interrupted on a night before
  /// upstream dropped its file), or that the plan now keeps elsewhere (`partial_dir:` set or
  /// changed), with their checkpoints: they are batchdl's own files, and no later run would resume
  /// them.
  private func removeStalePartials(root: String, session: Int) {
    guard !prior.checkpoints.isEmpty else { return }
    var current: [String: String?] = [:]
    for request in plan.requests { current[request.key.description] = plan.partialPath(of: request) }
    let roots = [root] + (plan.partialFolder(session: session).map { [$0] } ?? [])
    var removed: [String] = []
    for (key, point) in prior.checkpoints {
      let partial = FileAccess.normalize(plan.absolute(point.partial))
      guard let removal = StalePartials.decide(partial: partial, planned: current[key], roots: roots) else { continue }
      if PruneFiles.removePartial(root: removal.root, relative: removal.relative) {
        display.note("pruned the partial file \(redactor.text(partial)) (no task fetches it there any more)")
      }
      if removal.forget { removed.append(key) }
    }
    recorder.forget(checkpoints: removed)
  }

  /// Removes the partial files of a destination prune removed (`relative` below `root`, the
  /// session's `dest`): `NAME.batchdl-part` beside it, and its `DIGEST-NAME.batchdl-part` in the
  /// session's `partial_dir:`, when they are regular files (no link followed). No task names that
  /// destination any more and none may name a partial file, so they are the manifest's own,
  /// left by a download of it that was stopped, perhaps by a release that kept no record of it.
  private func removePartials(ofPruned relative: String, root: String, session: Int) {
    let destination = FileAccess.normalize(root + "/" + relative)
    var found: [(root: String, relative: String)] = [(root, relative + PartialFile.suffix)]
    if let folder = plan.partialFolder(session: session) {
      let partial = plan.partialPath(of: destination, session: session)
      let prefix = Array((folder == "/" ? "/" : folder + "/").utf8)
      let bytes = Array(partial.utf8)
      if bytes.count > prefix.count, bytes.starts(with: prefix) {
        found.append((folder, String(decoding: bytes[prefix.count...], as: UTF8.self)))
      }
    }
    for (top, name) in found where PruneFiles.removePartial(root: top, relative: name) {
      display.note("pruned the partial file \(redactor.text(top + "/" + name)) (no task fetches it there any more)")
    }
  }

  /// Prunes the sessions of the run that ask for it; returns what each did, in manifest order.
  func prune(cancelled: Bool) -> [PruneOutcome] {
    let indices = plan.manifest.sessions.indices.filter { index in
      let session = plan.manifest.sessions[index]
      return session.prune != nil && session.kind != .ephemeral && (options.sessions?.contains(session.name) ?? true)
    }
    guard !indices.isEmpty else { return [] }
    var records = recorder.placedFiles()
    if let known = records {
      let adopted = adoptPlacedBefore(sessions: indices, known: known)
      recorder.record(placed: adopted)
      records = known + adopted
    }
    let reserved = ReservedPaths(manifest: plan.manifest, stateFolder: state.path)
    var outcomes: [PruneOutcome] = []
    for index in indices {
      let name = plan.manifest.sessions[index].name
      var outcome = PruneOutcome(session: name, outcome: .skipped)
      let why: String?
      if options.noPrune {
        why = "--no-prune"
      } else if cancelled {
        why = "the run was interrupted"
      } else if records == nil {
        why = "the state folder's records of placed files cannot be read"
      } else {
        why = PruneDecisions.failures(of: index, plan: plan, summary: summaries[index])
      }
      if let why {
        outcome.reason = why
        if !options.noPrune { display.problem("warning: session \(name): prune skipped: \(why); nothing was deleted") }
        outcomes.append(outcome)
        continue
      }
      guard
        let decision = PruneDecisions.decide(
          session: index, plan: plan, records: records ?? [], reserved: reserved, maxDelete: options.maxDelete)
      else {
        continue
      }
      for left in decision.refused {
        display.problem(
          "warning: session \(name): prune leaves \(redactor.text(left.path)) alone: \(left.why) (the state folder records it; was it edited?)"
        )
      }
      if decision.exceedsLimit {
        outcome.outcome = .refused
        outcome.reason = redactor.text(decision.limitMessage)
        outcome.wouldDelete = decision.deletions.count
        outcome.pending = decision.deletions.map { redactor.text($0.path) }
        display.problem("error: \(outcome.reason ?? "")")
        outcomes.append(outcome)
        continue
      }
      var forgotten = decision.gone
      for left in decision.changed {
        display.problem("warning: session \(name): prune leaves \(redactor.text(left.path)): \(left.why)")
        forgotten.append(left.path)
      }
      outcome.outcome = .pruned
      for deletion in decision.deletions {
        // Its partial files first, so that a folder they alone kept goes with the file.
        removePartials(ofPruned: deletion.relative, root: decision.root, session: index)
        switch PruneFiles.remove(root: decision.root, relative: deletion.relative, record: deletion.record) {
        case .placed:
          outcome.deleted.append(redactor.text(deletion.path))
          emit(.pruned(session: name, path: redactor.text(deletion.path)))
          // One line per file deleted, as per task that changed (not with --quiet).
          display.note("pruned \(redactor.text(deletion.path))")
          forgotten.append(deletion.path)
        case .missing:
          forgotten.append(deletion.path)
        case .changed(let why):
          display.problem("warning: session \(name): prune leaves \(redactor.text(deletion.path)): \(why)")
          forgotten.append(deletion.path)
        }
      }
      removeStalePartials(root: decision.root, session: index)
      outcome.deleted.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
      // With --quiet (a cron job's mail), the per-file lines above are not printed: one line
      // says what was deleted.
      if options.quiet && !outcome.deleted.isEmpty {
        let count = outcome.deleted.count
        display.notice(
          "session \(name): pruned \(count) file\(count == 1 ? "" : "s") no task names any more: \(PrunePlan.firstNames(outcome.deleted))"
        )
      }
      recorder.forget(placed: forgotten)
      outcomes.append(outcome)
    }
    eventLog?.flush()
    return outcomes
  }
}

/// The prune decisions `run` and `plan` share.
public enum PruneDecisions {
  /// The `PrunePlan` of each session of `plan` that prunes, as a run with no failure would carry it
  /// out now (`batchdl plan`).
  /// `maxDelete`: `plan --max-delete`, as `run --max-delete` replaces each `prune.max_delete`.
  public static func prunePlans(
    plan: Plan, records: [PlacedFile], stateFolder: String?, maxDelete: PruneLimit? = nil
  ) -> [PrunePlan] {
    let reserved = ReservedPaths(manifest: plan.manifest, stateFolder: stateFolder)
    return plan.manifest.sessions.indices.compactMap { index in
      plan.manifest.sessions[index].kind == .ephemeral
        ? nil
        : decide(
          session: index, plan: plan, records: records, reserved: reserved,
          blocked: failures(of: index, plan: plan, summary: nil), maxDelete: maxDelete)
    }
  }

  /// Whether a document fetched before planning says what upstream holds now: fetched, or
  /// confirmed by a 304. A stored copy of a URL's document (the server could not be reached) may
  /// be stale; a local checksum file is read as it is.
  static func isCurrent(_ document: PlannedDescriptor) -> Bool {
    switch document.outcome {
    case .fetched, .notModified: return true
    case .storedCopy: return !(document.url.hasPrefix("http://") || document.url.hasPrefix("https://"))
    case .failed, .missing: return false
    }
  }

  /// The `PrunePlan` of session `index`, its files looked at on disk: what `run` carries out and
  /// `plan` lists. `maxDelete` (`--max-delete`) replaces the session's `prune.max_delete`.
  package static func decide(
    session index: Int, plan: Plan, records: [PlacedFile], reserved: ReservedPaths, blocked: String? = nil,
    maxDelete: PruneLimit? = nil
  ) -> PrunePlan? {
    var decision = PrunePlan.decide(session: index, plan: plan, records: records, blocked: blocked, reserved: reserved)
    {
      root, relative, record in
      PruneFiles.inspect(root: root, relative: relative, record: record)
    }
    if let maxDelete { decision?.override(limit: maxDelete) }
    return decision
  }

  /// Why session `index` must not prune after this run: tasks of it that failed or were cancelled,
  /// or documents it fetched before planning that failed (their files are missing from the plan,
  /// not gone upstream); nil when nothing did.
  package static func failures(of index: Int, plan: Plan, summary: RunSummary?) -> String? {
    let documents = plan.descriptors.filter { Int($0.session) == index && !isCurrent($0) }
    if let document = documents.first {
      return
        "the document \(document.url) was not fetched (\(document.outcome.rawValue)), so the plan may lack files it lists"
    }
    if plan.refusedFiles.contains(where: { Int($0.task.session) == index }) {
      return "files of a document the session fetched were left out"
    }
    let failed = (summary?.failed ?? 0) + (summary?.cancelled ?? 0)
    guard failed > 0 else { return nil }
    return "\(failed) of its task\(failed == 1 ? "" : "s") failed or did not finish in this run"
  }
}
