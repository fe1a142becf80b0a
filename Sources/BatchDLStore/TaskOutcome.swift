/// How a task ended.
public enum TaskOutcome: String, Sendable {
  case completed
  case unchanged
  case failed
  case deferred
  case cancelled
}
