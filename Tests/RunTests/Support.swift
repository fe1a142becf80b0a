import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLPlan

/// Plans `yaml` in a new folder; fails the test when it does not plan.
func planned(_ yaml: String, files: [String: String] = [:]) throws -> (folder: TemporaryDirectory, plan: Plan) {
  let (folder, result) = ManifestFixture.plan(yaml, files: files)
  return (folder, try result.get())
}

/// The request whose first task has id `id`.
func request(_ plan: Plan, id: String) throws -> PlannedRequest {
  try #require(plan.requests.first { plan.id(of: plan.tasks[Int($0.firstTask)]) == id })
}
