import BatchDLPlan
import BatchDLStore

/// The sessions' HTTP caches, which decide whether a data task needs a request at all, and keep
/// the responses that may answer the next run. The run's bookkeeping owns them (relay thread).
final class SessionCaches {
  private let plan: Plan
  private let state: StateFolder
  /// Opened on first use, per session index.
  private var caches: [Int: HTTPCache] = [:]

  init(plan: Plan, state: StateFolder) {
    self.plan = plan
    self.state = state
  }

  /// Closes the caches' databases.
  func close() {
    caches.removeAll()
  }

  /// The HTTP cache of a request's session, when the request can use one: only data tasks, a GET
  /// without a body, and no task that may become a download.
  func cache(for request: PlannedRequest) -> HTTPCache? {
    let tasks = plan.tasks(of: request)
    guard request.method == "GET", tasks.allSatisfy({ $0.kind == .data && plan.becomeDownload(of: $0) == nil }) else {
      return nil
    }
    if case .task(let spec) = plan.entry(of: tasks.firstTask), spec.body != nil || spec.bodyFile != nil { return nil }
    let index = Int(request.session)
    if let cache = caches[index] { return cache }
    let session = plan.manifest.sessions[index]
    let cache = HTTPCache(folder: state.cache(session: session.name), settings: session.cache)
    caches[index] = cache
    return cache
  }
}
