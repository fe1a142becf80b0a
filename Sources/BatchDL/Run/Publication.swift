import BatchDLPlan
import BatchDLTransfer

/// Whether a download that mirrors a document (a checksum file, its signature, an index page) may
/// be placed: only when none of the files the document covers failed in this run, in whatever
/// session (`Plan.publishedAfter`). A checksum file is never published over a file that does not
/// match it; the copy in place stays.
enum Publication {
  /// The covered requests that failed, of those `request` is published after (empty: it may be
  /// placed).
  static func blockers(of request: Int32, plan: Plan, failed: Set<Int32>) -> [Int32] {
    guard let covered = plan.publishedAfter[request], !failed.isEmpty else { return [] }
    return covered.filter { failed.contains($0) }
  }

  /// Why `request` is not placed, or nil when it may be.
  static func refusal(of request: Int32, plan: Plan, failed: Set<Int32>, attempts: Int) -> TransferFailure? {
    let blockers = blockers(of: request, plan: plan, failed: failed)
    guard let first = blockers.first else { return nil }
    let task = plan.tasks[Int(plan.requests[Int(first)].firstTask)]
    let others = blockers.count - 1
    return TransferFailure(
      code: .dependency,
      message:
        "not published: a file it covers failed in this run (\(plan.id(of: task))\(others > 0 ? " and \(others) more" : "")); the copy in place stays",
      attempts: attempts)
  }
}
