import Testing

@testable import BatchDL
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// A job's life without sockets: each event in, the actions out, as the engine would carry them out.
@Suite struct JobLifeTests {
  static let policy = RetryPolicy(attempts: 3, backoff: .seconds(1), maxBackoff: .seconds(10))

  /// A life whose backoffs take no jitter (half the doubled backoff), `attempts` tries already made.
  static func life(
    attempts: Int = 1, resource: Interval? = nil, spentBefore: Int64 = 0, mirrors: [String] = [],
    pieces: Bool = false, connectivity: Bool = false
  ) -> JobLife {
    var rules = JobLife.Rules(retry: policy, resourceLimit: resource)
    rules.spentBefore = spentBefore
    rules.checksPieces = pieces
    rules.waitsForConnectivity = connectivity
    rules.jitter = { _ in 0 }
    var life = JobLife(rules: rules)
    life.firstURL = "https://a.test/f"
    if !mirrors.isEmpty {
      life.sources = SourceList(
        [TransferSource(url: "https://a.test/f", hostKey: "a.test")]
          + mirrors.map { TransferSource(url: $0, hostKey: $0) })
    }
    for _ in 0..<attempts { _ = life.turnCame(now: 0) }
    return life
  }

  static func result(size: Int64 = 10) -> TransferResult {
    TransferResult(
      head: ResponseHead(), size: size, sha256: "", file: "/tmp/f.batchdl-part", body: nil, becameDownload: false,
      attempts: 1, effectiveURL: "https://a.test/f")
  }

  static func failure(_ code: FailureCode, status: Int? = nil) -> TransferFailure {
    TransferFailure(code: code, message: "\(code)", status: status)
  }

  static let etagResume = TransferSpec.Resume(offset: 100, validator: .etag("\"v1\""), total: 1000)
  static let dateResume = TransferSpec.Resume(offset: 100, validator: .date("Mon"), total: 1000)

  /// The actions, one line each: what a table compares.
  static func lines(_ actions: [JobLife.Action]) -> [String] {
    actions.map { action in
      switch action {
      case .sourceFailed(let url, let failure): return "source-failed \(url) \(failure.code)"
      case .piecesFailed(let pieces, let urls, _): return "pieces-failed \(pieces) \(urls)"
      case .willRetry(let delay, let failure): return "will-retry \(delay.milliseconds) \(failure.code)"
      case .send(let budget, let interface):
        return "send budget=\(budget.map { "\($0.milliseconds)" } ?? "-") interface=\(interface ?? "-")"
      case .resumeSegments: return "resume-segments"
      case .askPolicyAgain(let at): return "ask-policy-again \(at)"
      case .follow(let location, let status): return "follow \(status) \(location)"
      case .sendAgain(let fromStart): return fromStart ? "send-again from-start" : "send-again"
      case .restartWhole: return "restart-whole"
      case .check: return "check"
      case .retry(let at, let resume): return "retry at=\(at) resume=\(resume.map { "\($0.offset)" } ?? "-")"
      case .switchSource(let next, let resume, let extents):
        return
          "switch \(next.url) resume=\(resume.map { "\($0.offset)" } ?? "-") extents=\(extents.map { "\($0.count)" } ?? "kept")"
      case .repair(let repair):
        return
          "repair from=\(repair.source?.url ?? "-") kept=\(repair.kept.map { "\($0.start)..<\($0.end)" }) resume=\(repair.resume.offset)"
      case .keepPartial: return "keep-partial"
      case .complete(.success): return "complete success"
      case .complete(.failure(let failure)): return "complete \(failure.code) attempts=\(failure.attempts)"
      }
    }
  }

  // MARK: - Its turn

  @Test(
    arguments: [
      // policy, resource (ms), spent before (ms), segments on disk → actions
      (nil, nil, 0, false, ["send budget=- interface=-"]),
      (Admission.go(interface: "eth1"), 5000, 1000, false, ["send budget=4000 interface=eth1"]),
      (nil, 5000, 5000, false, ["complete timeout attempts=0"]),
      (Admission.wait(reason: "no route"), nil, 0, false, ["ask-policy-again 1000"]),
      (Admission.wait(reason: "no route"), 2000, 2000, false, ["complete policy attempts=0"]),
      (Admission.defer(reason: "off-window"), nil, 0, false, ["complete policy attempts=0"]),
      (nil, nil, 0, true, ["resume-segments"]),
    ] as [(Admission?, Int64?, Int64, Bool, [String])])
  func turnCame(policy: Admission?, resource: Int64?, spentBefore: Int64, onDisk: Bool, expected: [String]) {
    var life = Self.life(attempts: 0, resource: resource.map(Interval.init(milliseconds:)), spentBefore: spentBefore)
    #expect(Self.lines(life.turnCame(now: 0, policy: policy, segmentsOnDisk: onDisk)) == expected)
  }

  @Test func aRefusedJobFailsWithoutAnAttempt() {
    var life = Self.life(attempts: 0)
    let actions = life.turnCame(now: 0, refused: Self.failure(.unsafePath))
    #expect(Self.lines(actions) == ["complete unsafe-path attempts=0"])
    #expect(life.attempts == 0)
  }

  @Test func segmentsOnDiskGoAsOneStreamOnceSegmentsAreOffUnlessRepairing() {
    var life = Self.life(attempts: 0)
    life.segmentsOff = true
    #expect(Self.lines(life.turnCame(now: 0, segmentsOnDisk: true)) == ["send budget=- interface=-"])
    life.repairing = true
    #expect(Self.lines(life.turnCame(now: 0, segmentsOnDisk: true)) == ["resume-segments"])
  }

  // MARK: - An attempt ended

  struct Ending: CustomStringConvertible, Sendable {
    var name: String
    var attempts = 1
    var mirrors: [String] = []
    var failure: TransferFailure?
    var resume: TransferSpec.Resume?
    var wroteFile = false
    var multiplexed = false
    var responseComplete = false
    var bodyBytes: Int64 = 0
    var retryAfter: Int64 = 0
    var cancelled = false
    var resource: Int64?
    var expected: [String]
    var description: String { name }
  }

  static let endings: [Ending] = [
    Ending(name: "success", expected: ["complete success"]),
    Ending(
      name: "a 503 with tries left waits the backoff and continues from the written bytes",
      failure: failure(.http(503), status: 503), resume: etagResume,
      expected: ["will-retry 500 http-503", "retry at=1500 resume=100"]),
    Ending(
      name: "the backoff doubles with each try on the source", attempts: 2, failure: failure(.timeout),
      expected: ["will-retry 1000 timeout", "retry at=2000 resume=-"]),
    Ending(
      name: "Retry-After is the least wait", failure: failure(.http(429), status: 429), retryAfter: 7,
      expected: ["will-retry 7000 http-429", "retry at=8000 resume=-"]),
    Ending(
      name: "no tries left: the failure, and the written bytes kept for the next run", attempts: 3,
      failure: failure(.network), resume: etagResume, wroteFile: true,
      expected: ["keep-partial", "complete network attempts=0"]),
    Ending(
      name: "no time left in timeouts.resource for the backoff", failure: failure(.timeout), resource: 1200,
      expected: ["complete timeout attempts=0"]),
    Ending(
      name: "a 404 is not tried again", failure: failure(.http(404), status: 404),
      expected: ["complete http-404 attempts=0"]),
    Ending(
      name: "a stream lost with its HTTP/2 connection before any response goes again free",
      failure: failure(.network), multiplexed: true, expected: ["send-again"]),
    Ending(
      name: "a stream lost after its response began is an attempt", failure: failure(.network),
      multiplexed: true, responseComplete: true, expected: ["will-retry 500 network", "retry at=1500 resume=-"]),
    Ending(
      name: "a server that cannot continue the partial file: from byte 0 at once",
      failure: failure(.resumeRestart), expected: ["send-again from-start"]),
    Ending(
      name: "a mirror's turn comes at once, keeping bytes under a strong ETag", mirrors: ["https://b.test/f"],
      failure: failure(.http(503), status: 503), resume: etagResume,
      expected: ["source-failed https://a.test/f http-503", "switch https://b.test/f resume=100 extents=kept"]),
    Ending(
      name: "bytes under a date are not carried to another source", mirrors: ["https://b.test/f"],
      failure: failure(.timeout), resume: dateResume,
      expected: ["source-failed https://a.test/f timeout", "switch https://b.test/f resume=- extents=kept"]),
    Ending(
      name: "bytes that failed the digest are never carried", mirrors: ["https://b.test/f"],
      failure: failure(.checksumMismatch), resume: etagResume,
      expected: ["source-failed https://a.test/f checksum-mismatch", "switch https://b.test/f resume=- extents=kept"]),
    Ending(
      name: "a failure of the task's own does not move to a mirror", mirrors: ["https://b.test/f"],
      failure: failure(.write), expected: ["complete write attempts=0"]),
    Ending(
      name: "too large: no retry, no partial kept for the next run", failure: failure(.tooLarge),
      resume: etagResume, wroteFile: true, expected: ["complete too-large attempts=0"]),
    Ending(
      name: "too large is the file's, not the source's: no mirror is asked", mirrors: ["https://b.test/f"],
      failure: failure(.tooLarge), resume: etagResume, wroteFile: true, expected: ["complete too-large attempts=0"]),
    Ending(
      name: "a cancelled run ends the job as it is", mirrors: ["https://b.test/f"], failure: failure(.cancelled),
      cancelled: true, expected: ["complete cancelled attempts=0"]),
  ]

  @Test(arguments: endings)
  func attemptEnded(_ ending: Ending) {
    var life = Self.life(
      attempts: ending.attempts, resource: ending.resource.map(Interval.init(milliseconds:)), mirrors: ending.mirrors)
    var end = JobLife.AttemptEnd(ending.failure.map { .failure($0) } ?? .success(Self.result()))
    end.resumePoint = ending.resume
    end.wroteFile = ending.wroteFile
    end.multiplexed = ending.multiplexed
    end.responseComplete = ending.responseComplete
    end.bodyBytes = ending.bodyBytes
    end.retryAfterSeconds = ending.retryAfter
    end.cancelled = ending.cancelled
    let actions = Self.lines(life.attemptEnded(end, now: 1000))
    let expected = ending.mirrors.isEmpty || ending.failure != nil ? ending.expected : ["check"]
    #expect(actions == expected, "\(ending.name)")
  }

  @Test func theLastSourceFailingFailsTheTaskWithEachSourcesError() {
    var life = Self.life(mirrors: ["https://b.test/f"])
    var end = JobLife.AttemptEnd(.failure(Self.failure(.http(404), status: 404)))
    #expect(
      Self.lines(life.attemptEnded(end, now: 0)) == [
        "source-failed https://a.test/f http-404", "switch https://b.test/f resume=- extents=kept",
      ])
    _ = life.turnCame(now: 0)
    end.outcome = .failure(Self.failure(.connect))
    // The mirror has the retries of its own: two more tries before it fails too.
    #expect(Self.lines(life.attemptEnded(end, now: 0)) == ["will-retry 500 connect", "retry at=500 resume=-"])
    _ = life.turnCame(now: 0)
    _ = life.attemptEnded(end, now: 0)
    _ = life.turnCame(now: 0)
    let last = life.attemptEnded(end, now: 0)
    #expect(
      Self.lines(last) == ["source-failed https://b.test/f connect", "complete all-sources-failed attempts=4"])
    guard case .complete(.failure(let failure)) = last.last else { return }
    #expect(failure.sources.map(\.url) == ["https://a.test/f", "https://b.test/f"])
  }

  @Test func connectionLossesGoAgainFreeTenTimesThenCountAsAttempts() {
    var life = Self.life()
    var end = JobLife.AttemptEnd(.failure(Self.failure(.network)))
    end.multiplexed = true
    for _ in 0..<JobLife.connectionLossLimit {
      #expect(Self.lines(life.attemptEnded(end, now: 0)) == ["send-again"])
      _ = life.turnCame(now: 0)
    }
    #expect(life.attempts == 1)
    #expect(Self.lines(life.attemptEnded(end, now: 0)) == ["will-retry 500 network", "retry at=500 resume=-"])
  }

  @Test func waitingForConnectivityRetriesPastTheAttemptsWithinTheBudget() {
    var life = Self.life(attempts: 3, connectivity: true)
    let end = JobLife.AttemptEnd(.failure(Self.failure(.dns)))
    #expect(Self.lines(life.attemptEnded(end, now: 1000)) == ["will-retry 2000 dns", "retry at=3000 resume=-"])
    // Not past ten minutes without a resource limit.
    #expect(Self.lines(life.attemptEnded(end, now: 600_000)) == ["complete dns attempts=0"])
  }

  @Test func redirectsAreFollowedUpToTheLimitWithoutAnAttemptCharged() {
    var life = Self.life()
    var end = JobLife.AttemptEnd(.success(Self.result()))
    end.redirect = ("https://c.test/f", 302)
    for _ in 0..<JobLife.redirectLimit {
      #expect(Self.lines(life.attemptEnded(end, now: 0)) == ["follow 302 https://c.test/f"])
      _ = life.turnCame(now: 0)
    }
    #expect(life.attempts == 1)
    #expect(Self.lines(life.attemptEnded(end, now: 0)) == ["complete too-many-redirects attempts=1"])
  }

  // MARK: - The body checked

  @Test func aJoinedFileWhoseDigestFailsIsFetchedWholeOnceThenTheSourceIsBlamed() {
    var life = Self.life(mirrors: ["https://b.test/f"])
    life.received(10, from: 1)
    var result = Self.result()
    result.resumedFrom = 5
    let end = JobLife.AttemptEnd(.success(result))
    let problem = Self.failure(.checksumMismatch)
    #expect(
      Self.lines(life.contentChecked(result, pieces: .unchecked, problem: problem, end: end, now: 0)) == [
        "send-again from-start"
      ])
    #expect(
      Self.lines(life.contentChecked(result, pieces: .unchecked, problem: problem, end: end, now: 0)) == [
        "source-failed https://a.test/f checksum-mismatch", "switch https://b.test/f resume=- extents=kept",
      ])
  }

  @Test func aSegmentedFileWhoseDigestFailsIsFetchedAgainWholeAsOneStreamOnce() {
    var life = Self.life()
    let problem = Self.failure(.checksumMismatch)
    #expect(
      Self.lines(life.contentChecked(Self.result(), pieces: .unchecked, problem: problem, end: nil, now: 0)) == [
        "restart-whole"
      ])
    #expect(life.segmentsOff)
    #expect(
      Self.lines(life.contentChecked(Self.result(), pieces: .unchecked, problem: problem, end: nil, now: 0)) == [
        "complete checksum-mismatch attempts=1"
      ])
  }

  @Test func aBodyThatPassesIsPlaced() {
    var life = Self.life(pieces: true)
    #expect(
      Self.lines(life.contentChecked(Self.result(), pieces: .verified, problem: nil, end: nil, now: 0)) == [
        "complete success"
      ])
    #expect(!life.repairing)
  }

  static func bad(_ blame: [(ByteExtent, Set<Int>)]) -> PieceVerdict {
    .bad(
      PieceVerdict.BadPieces(
        pieces: Array(0..<blame.count), blame: blame.map { (extent: $0.0, sources: $0.1) },
        failure: failure(.checksumMismatch), validator: .digest))
  }

  @Test func badPiecesAreRepairedFromASourceThatDidNotSendThem() {
    var life = Self.life(mirrors: ["https://b.test/f"], pieces: true)
    let verdict = Self.bad([(ByteExtent(start: 0, end: 4), [0])])
    let actions = life.contentChecked(Self.result(size: 10), pieces: verdict, problem: nil, end: nil, now: 0)
    #expect(
      Self.lines(actions) == [
        "pieces-failed [0] [\"https://a.test/f\"]", "source-failed https://a.test/f checksum-mismatch",
        "repair from=https://b.test/f kept=[\"4..<10\"] resume=0",
      ])
    #expect(life.repairing)
  }

  @Test func aSourceThatSentEveryBadPieceIsNotSetAsideWhenNoneIsLeft() {
    var life = Self.life(pieces: true)
    let verdict = Self.bad([(ByteExtent(start: 4, end: 6), [0])])
    let actions = life.contentChecked(Self.result(size: 10), pieces: verdict, problem: nil, end: nil, now: 0)
    #expect(
      Self.lines(actions) == [
        "pieces-failed [0] [\"https://a.test/f\"]", "repair from=- kept=[\"0..<4\", \"6..<10\"] resume=4",
      ])
  }

  @Test func repairsStopAfterOneMoreThanTheSources() {
    var life = Self.life(pieces: true)
    let verdict = Self.bad([(ByteExtent(start: 0, end: 4), [0])])
    for _ in 0..<2 { _ = life.contentChecked(Self.result(), pieces: verdict, problem: nil, end: nil, now: 0) }
    let last = life.contentChecked(Self.result(), pieces: verdict, problem: nil, end: nil, now: 0)
    #expect(Self.lines(last).last == "complete checksum-mismatch attempts=1")
    guard case .complete(.failure(let failure)) = last.last else { return }
    #expect(failure.message.hasSuffix(", still after 2 repairs"))
  }

  // MARK: - Segments

  @Test(
    arguments: [
      // ranged, plain GET, total, validated, on disk, minimum → segments
      (true, true, 100, true, 0, 50, true),
      (true, true, 99, true, 0, 50, false),
      (true, true, 150, true, 60, 50, false),
      (false, true, 1000, true, 0, 50, false),
      (true, false, 1000, true, 0, 50, false),
      (true, true, nil, true, 0, 50, false),
      (true, true, 1000, false, 0, 50, false),
    ] as [(Bool, Bool, Int64?, Bool, Int64, Int64, Bool)])
  func mayUseSegments(
    ranged: Bool, plainGet: Bool, total: Int64?, validated: Bool, onDisk: Int64, minimum: Int64, expected: Bool
  ) {
    var life = Self.life()
    #expect(
      life.mayUseSegments(
        ranged: ranged, plainGet: plainGet, total: total, validated: validated, onDisk: onDisk, minimum: minimum)
        == expected)
    #expect(life.segmentsOff == !expected)
    // Once off, off for the job's life.
    let again = life.mayUseSegments(ranged: true, plainGet: true, total: 1000, validated: true, onDisk: 0, minimum: 1)
    #expect(again == expected)
  }

  struct PieceCase: CustomStringConvertible, Sendable {
    var name: String
    var end: JobLife.PieceEnd
    var expected: JobLife.PieceStep
    var description: String { name }
  }

  static func piece(_ change: (inout JobLife.PieceEnd) -> Void) -> JobLife.PieceEnd {
    var end = JobLife.PieceEnd()
    change(&end)
    return end
  }

  static let pieceCases: [PieceCase] = [
    PieceCase(name: "a piece that ended well", end: piece { _ in }, expected: .goOn),
    PieceCase(
      name: "the first source answers a range with the whole file", end: piece { $0.answeredWhole = true },
      expected: .oneStream),
    PieceCase(
      name: "a mirror answers a range with the whole file",
      end: piece {
        $0.answeredWhole = true
        $0.source = 1
      }, expected: .dropSource(nil)),
    PieceCase(
      name: "the first source sends other bytes than asked", end: piece { $0.failure = failure(.rangeMismatch) },
      expected: .oneStream),
    PieceCase(
      name: "a mirror's 403 to a range sets it aside while another source serves",
      end: piece {
        $0.source = 1
        $0.hasOtherSource = true
        $0.failure = failure(.http(403), status: 403)
      }, expected: .dropSource(failure(.http(403), status: 403))),
    PieceCase(
      name: "a piece of a file past max_size fails the download",
      end: piece {
        $0.failure = failure(.tooLarge)
        $0.hasOtherSource = true
      }, expected: .fail(TransferFailure(code: .tooLarge, message: "too-large", attempts: 1))),
    PieceCase(
      name: "a 503 with tries left waits the backoff",
      end: piece { $0.failure = failure(.http(503), status: 503) },
      expected: .again(failures: 1, notBefore: 1500)),
    PieceCase(
      name: "a piece that moved bytes goes again at once",
      end: piece {
        $0.failure = failure(.network)
        $0.progressed = true
        $0.failures = 2
      }, expected: .again(failures: 2, notBefore: 1000)),
    PieceCase(
      name: "no tries left fails the download",
      end: piece {
        $0.failure = failure(.network)
        $0.failures = 2
      }, expected: .fail(TransferFailure(code: .network, message: "network", attempts: 1))),
    PieceCase(
      name: "a 404 of the first source with no other fails the download",
      end: piece { $0.failure = failure(.http(404), status: 404) },
      expected: .fail(TransferFailure(code: .http(404), message: "http-404", status: 404, attempts: 1))),
    PieceCase(
      name: "a source that redirects is followed",
      end: piece {
        $0.redirects = 1
        $0.redirect = .success(HeaderOriginTests.spec(url: "https://c.test/f", origin: nil))
      }, expected: .follow(url: "https://c.test/f", headers: [])),
    PieceCase(
      name: "a source that redirects more than ten times fails",
      end: piece {
        $0.redirects = 11
        $0.redirect = .success(HeaderOriginTests.spec(url: "https://c.test/f", origin: nil))
      }, expected: .fail(TransferFailure(code: .tooManyRedirects, message: "more than 10 redirects", attempts: 1))),
  ]

  @Test(arguments: pieceCases)
  func pieceEnded(_ testCase: PieceCase) {
    let life = Self.life()
    #expect(life.pieceEnded(testCase.end, now: 1000) == testCase.expected, "\(testCase.name)")
  }

  @Test func aSegmentedDownloadThatFailsGoesOnFromTheNextSourceKeepingPiecesUnderAStrongETag() {
    var life = Self.life(mirrors: ["https://b.test/f"])
    let extents = [ByteExtent(start: 0, end: 100), ByteExtent(start: 500, end: 600)]
    #expect(
      Self.lines(
        life.segmentsFailed(
          Self.failure(.timeout), source: 0, kept: Self.etagResume, extents: extents, cancelled: false)
      ) == ["source-failed https://a.test/f timeout", "switch https://b.test/f resume=100 extents=2"])
    var other = Self.life(mirrors: ["https://b.test/f"])
    #expect(
      Self.lines(
        other.segmentsFailed(
          Self.failure(.timeout), source: 0, kept: Self.dateResume, extents: extents, cancelled: false)
      ) == ["source-failed https://a.test/f timeout", "switch https://b.test/f resume=- extents=0"])
    var alone = Self.life()
    #expect(
      Self.lines(
        alone.segmentsFailed(
          Self.failure(.timeout), source: 0, kept: Self.etagResume, extents: extents, cancelled: false)
      ) == ["complete timeout attempts=1"])
  }
}
