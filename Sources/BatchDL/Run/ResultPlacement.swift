import BatchDLPlan
import BatchDLSupport
import BatchDLTransfer
import Foundation

/// What a finished transfer's body becomes: checked against its tasks' expectations, then put in
/// place at each destination.
extension RunBookkeeper {
  /// Checks each task's expectations and puts its file in place: other destinations get copies,
  /// then the owner's partial file is renamed into place; the partial file never stays behind.
  func place(_ result: TransferResult, for tasks: SharingTasks, request: PlannedRequest) {
    var owner: (task: PlannedTask, path: String, outcome: TaskResult)?
    func record(
      _ task: PlannedTask, _ outcome: TaskResult, written: (size: Int64, modified: Int64)? = nil, at path: String? = nil
    ) {
      self.record(outcome)
      recorder.remember(task, outcome, request: request, head: result.head, written: written, at: path)
    }
    let described = describesTasks
    // The bytes placed are the bytes checked: the partial file must still be the one written and
    // hashed, unchanged. One put there meanwhile is not batchdl's: it is left as it is.
    if let source = result.file, let identity = result.fileIdentity, FileIdentity(path: source) != identity {
      let failure = TransferFailure(
        code: .write,
        message:
          "the partial file was replaced or changed after its bytes were checked (another process writing the same destination?); nothing was placed",
        attempts: result.attempts)
      for task in tasks { record(task, failed(task, failure, status: result.head.status)) }
      return
    }
    for (index, task) in tasks.enumerated() {
      var outcome = base(task, described: described)
      outcome.status = result.head.status
      outcome.httpVersion = result.head.version
      outcome.size = result.size
      outcome.sha256 = result.sha256
      outcome.attempts = result.attempts
      outcome.source = index == 0 ? "network" : "duplicate"
      outcome.resumedFrom = result.resumedFrom
      outcome.transferred = index == 0 ? result.transferred : 0
      outcome.sources = result.sources.map { SourceBytes(url: redactor.url($0.url), bytes: $0.bytes) }
      outcome.outcome = .completed
      if let failure = expectationProblem(task, result) {
        record(task, failed(task, failure, status: result.head.status))
        continue
      }
      guard let destination = plan.destination(of: task) else {
        record(task, outcome)
        continue
      }
      let path = plan.absolute(destination)
      if let source = result.file, source == plan.partialPath(of: path, session: Int(task.session)) {
        owner = (task, path, outcome)
        continue
      }
      do throws(TransferFailure) {
        let folder = try placer.prepare(path, for: task)
        var written: (size: Int64, modified: Int64)?
        let kept = keptTime(task, result)
        // The time goes on before the file is in place: a reader never sees it with another.
        if let source = result.file {
          try FilePlacer.copy(
            source, to: path, through: plan.partialPath(of: path, session: Int(task.session)), modified: kept)
        } else {
          written = try placer.write(result.body ?? [], to: path, folder: folder, naming: destination, modified: kept)
        }
        emit(.finished(task: outcome.id, to: outcome.to ?? ""))
        recorder.placed(task, request: request, at: path)
        record(task, outcome, written: written, at: path)
      } catch {
        record(task, failed(task, TransferFailure(code: error.code, message: error.message, attempts: result.attempts)))
      }
    }
    guard let source = result.file else { return }
    guard let (task, path, outcome) = owner else {
      unlink(source)
      return
    }
    do throws(TransferFailure) {
      try placer.prepare(path, for: task)
      // The time goes on the partial file: a reader never sees the file in place with another.
      if let seconds = keptTime(task, result) { _ = FileAccess.setModified(source, seconds: seconds) }
      guard rename(source, path) == 0 else {
        throw TransferFailure.system(errno: errno, doing: "rename the finished file into \(path)")
      }
      emit(.finished(task: outcome.id, to: outcome.to ?? ""))
      recorder.placed(task, request: request, at: path)
      record(task, outcome, at: path)
    } catch {
      unlink(source)
      record(task, failed(task, TransferFailure(code: error.code, message: error.message, attempts: result.attempts)))
    }
  }

  /// The modification time a placed file takes: its `Last-Modified`, when the task keeps it
  /// (`preserve_mtime`) and the server sent one that parses.
  private func keptTime(_ task: PlannedTask, _ result: TransferResult) -> Int64? {
    guard plan.preservesModificationTime(of: task), let text = result.head["last-modified"],
      let date = HTTPDate.parse(text)
    else { return nil }
    return Int64(date.timeIntervalSince1970.rounded(.down))
  }

  /// Why a task's expectations (`max_size`, `size:`, its digest) fail a complete body; its pieces were the
  /// engine's to check, by the same rule.
  func expectationProblem(_ task: PlannedTask, _ result: TransferResult) -> TransferFailure? {
    // A request shared with a task of a larger max_size: the body came whole, but not for this one.
    if let failure = tooLarge(task, size: result.size, attempts: result.attempts) { return failure }
    guard let expected = plan.expectation(of: task) else { return nil }
    if let failure = BodyCheck(size: expected.size, digest: expected.digest).failure(of: result, by: .placement) {
      return failure
    }
    // Every digest the checksum files give is checked, not only the one preferred.
    for digest in expected.otherDigests {
      if let failure = BodyCheck(digest: digest).failure(of: result, by: .placement) { return failure }
    }
    if let signature = expected.signature { return SidecarSignature.failure(of: result, signature) }
    return nil
  }

  /// `too-large` when a complete body of `size` bytes is longer than the task's `max_size`.
  func tooLarge(_ task: PlannedTask, size: Int64, attempts: Int) -> TransferFailure? {
    guard let limit = plan.maxSize(of: task), size > limit else { return nil }
    return TransferFailure(
      code: .tooLarge,
      message:
        "the response is \(size) bytes, more than max_size (\(ByteSize.format(limit)), \(limit) bytes); nothing was written to 'to'",
      attempts: attempts)
  }
}
