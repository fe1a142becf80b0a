import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import BatchDLTransfer
import Foundation

/// Turns the plan's requests into the engine's jobs: each request's transfer (headers, body, where
/// the body goes, timeouts, caps, cookies), what a resume or a revalidation adds from the state
/// folder, and the network policy's gate. It is the engine's `TransferJobSource`: the engine asks
/// for a job's transfer when the job's turn comes, on its own thread, and the builder is the
/// engine's alone once the run has handed it over.
final class JobBuilder: TransferJobSource {
  private let plan: Plan
  private let state: StateFolder
  private let redactor: Redactor
  private let prior: PriorState
  /// The request of each job, and what it needs.
  private let requests: [Int32]
  private let actions: [RequestAction]
  /// The jobs each job waits for.
  private let waits: [[Int]]
  /// Cached responses being revalidated, by request index.
  private let revalidating: [Int32: CachedResponse]
  /// Makes the folders of destinations (its own record of the folders made and checked).
  private let placer: FilePlacer

  init(
    plan: Plan, state: StateFolder, redactor: Redactor, prior: PriorState = PriorState(), requests: [Int32] = [],
    actions: [RequestAction] = [], waits: [[Int]] = [], revalidating: [Int32: CachedResponse] = [:]
  ) {
    self.plan = plan
    self.state = state
    self.redactor = redactor
    self.prior = prior
    self.requests = requests
    self.actions = actions
    self.waits = waits
    self.revalidating = revalidating
    placer = FilePlacer(plan: plan, stateFolder: state.path)
  }

  /// The global cap when `--jobs` is not given: the largest session `max_concurrent`.
  static func globalLimit(of plan: Plan) -> Int {
    plan.manifest.sessions.map(\.network.maxConcurrent).max() ?? 16
  }

  // MARK: - TransferJobSource

  var count: Int { requests.count }

  func queue(of job: Int) -> TransferQueue {
    let request = plan.requests[Int(requests[job])]
    let network = plan.session(of: request).network
    return TransferQueue(
      session: Int(request.session), host: plan.hosts[Int(request.host)], sessionLimit: network.maxConcurrent,
      hostLimit: network.maxConnectionsPerHost)
  }

  func dependencies(of job: Int) -> [Int] { waits[job] }

  func makeJob(_ job: Int) -> TransferJob {
    let index = requests[job]
    return self.job(
      for: plan.requests[Int(index)], action: actions[job], cached: revalidating[index], prior: prior,
      dependencies: waits[job], placer: placer)
  }

  /// The engine's job for a request that needs sending: its transfer, continued from a checkpoint
  /// (`resume`) or made conditional (`revalidate`, on the cached response or the last result),
  /// with the time earlier runs spent on it; a destination whose folder cannot be made or leads
  /// out of `dest` fails the job before anything is sent.
  func job(
    for request: PlannedRequest, action: RequestAction?, cached: CachedResponse?, prior: PriorState,
    dependencies: [Int], placer: FilePlacer
  ) -> TransferJob {
    // The spec is made inside the job and changed there: a TransferSpec copied costs a dozen
    // reference counts, and every file's job passes here.
    var owner: (task: PlannedTask, path: String)?
    var job = TransferJob(spec: spec(for: request, owner: &owner), dependencies: dependencies)
    if let owner {
      do throws(TransferFailure) {
        try placer.prepare(owner.path, for: owner.task)
        try placer.preparePartialFolder(for: owner.task)
      } catch {
        job.failure = error
      }
    }
    let spentBefore = prior.budgets[request.key.description]?.spent ?? 0
    switch action {
    case .resume?:
      if let point = prior.resumePoint(for: request, in: plan), let validator = point.validator {
        job.spec.resume = .init(
          offset: point.durable, validator: ResumeValidator(stored: validator), total: point.total)
        job.spec.extents = point.extents
      }
      job.spec.spentBefore = spentBefore
    case .revalidate?:
      if let cached {
        job.spec.conditional = .init(etag: cached.etag, lastModified: cached.lastModified)
      } else {
        let stored = plan.tasks(of: request).compactMap { prior.results[plan.id(of: $0)] }.first
        job.spec.conditional = .init(etag: stored?.etag, lastModified: stored?.lastModified)
      }
    default:
      job.spec.spentBefore = spentBefore
    }
    job.admission = admission(for: request)
    return job
  }

  /// The request's transfer; `owner` gets the task whose destination its body goes to (with that
  /// destination's absolute path), when it goes to a file.
  func spec(for request: PlannedRequest) -> (TransferSpec, owner: (task: PlannedTask, path: String)?) {
    var owner: (task: PlannedTask, path: String)?
    let spec = spec(for: request, owner: &owner)
    return (spec, owner)
  }

  private func spec(for request: PlannedRequest, owner: inout (task: PlannedTask, path: String)?) -> TransferSpec {
    var spec = sessionSpecs[Int(request.session)]
    let tasks = plan.tasks(of: request)
    var entryHeaders: [Header] = []
    /// Mirrors' own headers, by normalized URL.
    var mirrorHeaders: [String: [Header]] = [:]
    switch plan.entry(of: tasks.firstTask) {
    case .task(let task):
      entryHeaders = task.headers
      for mirror in task.mirrors where !mirror.headers.isEmpty {
        if let url = try? mirrorNormalizer.normalize(mirror.url).get() { mirrorHeaders[url.text] = mirror.headers }
      }
      // The task's own credentials replace its session's (an `auth:` its `aws_sigv4:` too).
      if task.auth != nil || task.awsSigV4 != nil {
        spec.access.auth = task.auth
        spec.access.awsSigV4 = task.awsSigV4
      }
      if let text = task.body {
        spec.body = .bytes(Array(text.utf8))
      } else if let file = task.bodyFile ?? task.from {
        spec.body = .file(plan.absolute(file))
      } else if !task.form.isEmpty {
        spec.body = .form(task.form.map { .init(name: $0.name, value: $0.value, file: $0.file.map(plan.absolute)) })
      }
    case .list(let list): entryHeaders = list.headers
    case .metalink(let metalink): entryHeaders = metalink.headers
    case .index(let index): entryHeaders = index.headers
    case .apt(let apt): entryHeaders = apt.headers
    }
    if !entryHeaders.isEmpty {
      setHeaders(plan.session(of: request).headers.merged(with: entryHeaders), of: &spec)
    }
    // A mirror's own headers are secrets of its origin when they are secrets at all.
    for headers in mirrorHeaders.values { spec.originOnlyHeaders.formUnion(redactor.originOnly(headers)) }
    let target: TransferSpec.Target
    let ownerTask = plan.owner(of: request)
    if let task = ownerTask, let path = plan.absoluteDestination(of: task) {
      owner = (task, path)
      let partial = plan.partialPath(of: path, session: Int(task.session))
      if let rule = plan.becomeDownload(of: task) {
        target = .memory(
          limit: Runner.dataMemoryLimit,
          spill: .init(contentTypes: rule.contentTypes, largerThan: rule.largerThan, path: partial))
      } else {
        target = .file(partial)
      }
    } else {
      target = .memory(limit: Runner.dataMemoryLimit, spill: nil)
    }
    spec.method = request.method
    spec.url = plan.url(of: request)
    if !spec.originOnlyHeaders.isEmpty || spec.access.carriesCredentials {
      // A document fetched from the network names the file's sources: the headers stay with the
      // document's origin. Else with the URL the manifest (or its list or local document) gives.
      if case .metalink(let metalink) = plan.entry(of: tasks.firstTask), metalink.isURL {
        spec.headerOrigin = Origin(url: metalink.document) ?? .nowhere
      } else if case .index(let index) = plan.entry(of: tasks.firstTask) {
        spec.headerOrigin = Origin(url: index.url) ?? .nowhere
      } else if case .apt(let apt) = plan.entry(of: tasks.firstTask) {
        spec.headerOrigin = Origin(url: apt.url) ?? .nowhere
      } else {
        spec.headerOrigin = Origin(url: spec.url)
      }
    }
    spec.target = target
    // The transfer stops at the largest `max_size` of its tasks; each task is held to its own when
    // the body is placed.
    spec.maxSize = plan.maxSize(of: request)
    spec.hostKey = plan.hosts[Int(request.host)]
    spec.decodeContent = tasks.allSatisfy { $0.kind == .data }
    if !request.mirrors.isEmpty {
      spec.mirrors = request.mirrors.map { ref in
        let url = plan.text.string(ref)
        let host =
          URLNormalizer.alreadyNormal(url)?.authority ?? (try? mirrorNormalizer.normalize(url).get())?.authority
        return TransferSource(
          url: url, hostKey: host ?? url,
          headers: mirrorHeaders[url]?.map { "\($0.name): \($0.value)" } ?? [])
      }
    }
    // A source whose bytes disagree with what the owner task expects is set aside; pieces are
    // checked against a file of the expected size (the digests fit no other).
    if let owner = ownerTask, let expected = plan.expectation(of: owner),
      !request.mirrors.isEmpty || expected.pieces != nil
    {
      // Tasks of one content (one SHA-256) may disagree on the size: the digest judges the
      // sources then, and each task's own size fails only that task.
      let sizes = Set(plan.tasks(of: request).map { plan.expectation(of: $0)?.size })
      spec.expectedSize = sizes.count == 1 ? expected.size : nil
      spec.expectedDigest = expected.digest
      spec.pieces = expected.pieces.map {
        PieceDigests(length: $0.length, algorithm: $0.algorithm, hashes: $0.hashes)
      }
    }
    // A file completed from kept bytes is checked in the engine against the digest its tasks
    // expect (all of them the same one), so that one whose joined bytes fail is fetched again whole
    // before it fails (docs/sources.md); a body fetched whole is left to the placement's check.
    if spec.expectedDigest == nil, let owner = ownerTask, let digest = plan.expectation(of: owner)?.digest,
      plan.tasks(of: request).allSatisfy({ plan.expectation(of: $0)?.digest == digest })
    {
      spec.expectedDigest = digest
    }
    spec.listedSize = plan.listedSize(of: request)
    if let owner = ownerTask, case .task(let task) = plan.entry(of: owner) {
      spec.segments = task.segments ?? spec.segments
      if spec.segments > 1 {
        // A file joined from segments is checked against what the task expects, and fetched
        // again as one stream when it fails.
        spec.expectedSize = task.size
        spec.expectedDigest = plan.expectation(of: owner)?.digest
      }
    }
    return spec
  }

  /// Each session's part of its transfers (headers, timeouts, retries, caps, cookie jar), made
  /// once per session rather than for every request: a list of 10,000 files has one session.
  private lazy var sessionSpecs: [TransferSpec] = plan.manifest.sessions.indices.map { index in
    let session = plan.manifest.sessions[index]
    var spec = TransferSpec(
      method: "GET", url: "", headers: [], body: .none, target: .memory(limit: Runner.dataMemoryLimit, spill: nil),
      requestTimeout: session.timeouts.request, resourceTimeout: session.timeouts.resource, retry: session.retry,
      rateLimit: session.network.rateLimit, hostKey: "", hostLimit: session.network.maxConnectionsPerHost,
      sessionKey: index, sessionLimit: session.network.maxConcurrent, insecure: session.insecure)
    setHeaders(session.headers, of: &spec)
    spec.minSegmentSize = session.network.minSegmentSize
    spec.segments = session.network.segments
    spec.cookieJar = cookieJars[index]
    spec.waitsForConnectivity = session.network.waitsForConnectivity
    spec.tls = session.tls
    spec.httpVersion = session.network.httpVersion
    spec.access = session.access
    return spec
  }

  /// Sets the headers a transfer sends, and which of them never go to another origin.
  private func setHeaders(_ headers: [Header], of spec: inout TransferSpec) {
    spec.headers = headers.map { "\($0.name): \($0.value)" }
    spec.originOnlyHeaders = redactor.originOnly(headers)
  }

  /// Each session's cookie jar: empty for an ephemeral session (cookies in memory only).
  private lazy var cookieJars: [String] = plan.manifest.sessions.map {
    guard $0.kind != .ephemeral else { return "" }
    let jar = state.cookieJar(session: $0.name)
    state.adoptLegacyCookieJar(session: $0.name)
    return jar
  }

  /// The network policy's gate for a request (nil when its session restricts nothing).
  func admission(for request: PlannedRequest) -> (@Sendable () -> Admission)? {
    let settings = plan.session(of: request).network
    let unrestricted =
      settings.allowsCellular && settings.allowsExpensive && settings.allowsConstrained && !settings.discretionary
    guard !unrestricted else { return nil }
    let policy = networkPolicy
    let url = plan.url(of: request)
    return {
      switch policy.decide(url: url, settings: settings, now: Date()) {
      case .allowed(let interface): return .go(interface: interface)
      case .wait(let reason): return .wait(reason: reason)
      case .defer(let reason): return .defer(reason: reason)
      case .unreachable: return .go(interface: nil)  // libcurl reports it, and retries decide
      }
    }
  }

  private let networkPolicy = NetworkPolicy()
  /// For the hosts of mirrors that are not in normal form already (planned URLs nearly always are).
  private let mirrorNormalizer = URLNormalizer()
}
