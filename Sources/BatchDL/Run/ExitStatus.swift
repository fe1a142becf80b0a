/// The exit codes scripts and cron jobs rely on (MANIFEST.md).
public enum ExitStatus: Int32, Sendable {
  /// Every task completed, unchanged or deferred by policy.
  case success = 0
  /// One or more tasks failed.
  case taskFailed = 1
  /// Invalid manifest or usage.
  case invalid = 2
  /// Interrupted by a signal after checkpointing.
  case interrupted = 3
  /// Another run holds the state folder's lock.
  case locked = 4
  /// The state folder cannot be used: its database is damaged, or its disk is full (nothing ran).
  case stateUnusable = 5
  /// A session's `prune:` would have deleted more files than its `max_delete` allows: nothing was
  /// deleted (`prune-limit`). A failed task takes precedence (1).
  case pruneLimit = 6
}
