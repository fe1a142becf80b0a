import Testing

@testable import BatchDL
@testable import BatchDLTransfer

/// Which job goes next, without sockets: the plan's order across queues, the global, session and
/// host caps, and HTTP/2 lifting the host cap.
@Suite struct AdmissionControlTests {
  /// Admission with queues for hosts a and b of session 0 and host a of session 1.
  static func control(global: Int = 10, host: Int = 2, session: Int = 10) -> (AdmissionControl, [Int]) {
    var control = AdmissionControl(globalLimit: global, connectionCap: host)
    let keys = [
      control.queue(TransferQueue(session: 0, host: "a", sessionLimit: session, hostLimit: host)),
      control.queue(TransferQueue(session: 0, host: "b", sessionLimit: session, hostLimit: host)),
      control.queue(TransferQueue(session: 1, host: "a", sessionLimit: session, hostLimit: host)),
    ]
    return (control, keys)
  }

  /// Takes every job the caps let go now, counting each as started.
  static func drain(_ control: inout AdmissionControl, hosts: [Int: (Int, String)]) -> [Int] {
    var taken: [Int] = []
    while let job = control.next() {
      taken.append(job)
      if let (session, host) = hosts[job] { control.started(session: session, host: host) }
    }
    return taken
  }

  @Test func jobsGoInThePlansOrderAcrossQueues() {
    var (control, keys) = Self.control()
    for (job, key) in [(3, keys[1]), (0, keys[0]), (2, keys[2]), (1, keys[1])] { control.push(job, queue: key) }
    #expect(Self.drain(&control, hosts: [:]) == [0, 1, 2, 3])
  }

  @Test func aHostAtItsCapHoldsItsQueueUntilATransferEnds() {
    var (control, keys) = Self.control(host: 2)
    for job in 0..<4 { control.push(job, queue: keys[0]) }
    control.push(4, queue: keys[1])
    let hosts = [0: (0, "a"), 1: (0, "a"), 2: (0, "a"), 3: (0, "a"), 4: (0, "b")]
    #expect(Self.drain(&control, hosts: hosts) == [0, 1, 4])
    #expect(control.hasWaiting)
    control.ended(session: 0, host: "a")
    #expect(Self.drain(&control, hosts: hosts) == [2])
    #expect(control.hostActive["a"] == 2)
  }

  @Test func theSessionCapCountsEveryHostOfTheSession() {
    var (control, keys) = Self.control(host: 5, session: 2)
    control.push(0, queue: keys[0])
    control.push(1, queue: keys[1])
    control.push(2, queue: keys[0])
    control.push(3, queue: keys[2])
    let hosts = [0: (0, "a"), 1: (0, "b"), 2: (0, "a"), 3: (1, "a")]
    #expect(Self.drain(&control, hosts: hosts) == [0, 1, 3])
    control.ended(session: 0, host: "b")
    #expect(Self.drain(&control, hosts: hosts) == [2])
  }

  @Test func theGlobalLimitCountsPiecesToo() {
    var (control, keys) = Self.control(global: 2, host: 5)
    for job in 0..<3 { control.push(job, queue: keys[0]) }
    control.started(session: 0, host: "b")
    #expect(Self.drain(&control, hosts: [0: (0, "a"), 1: (0, "a")]) == [0])
    #expect(!control.hasRoom(session: 0, sessionLimit: 10, host: "b", hostLimit: 5))
    control.ended(session: 0, host: "b")
    #expect(control.hasRoom(session: 0, sessionLimit: 10, host: "b", hostLimit: 5))
    let next = control.next()
    #expect(next == 1)
  }

  @Test func http2LiftsTheHostCapForThatSessionOnly() {
    var (control, keys) = Self.control(host: 1)
    for job in 0..<3 { control.push(job, queue: keys[0]) }
    for job in 3..<5 { control.push(job, queue: keys[2]) }
    let hosts = [0: (0, "a"), 1: (0, "a"), 2: (0, "a"), 3: (1, "a"), 4: (1, "a")]
    // The host's transfers count across sessions.
    #expect(Self.drain(&control, hosts: hosts) == [0])
    let first = control.multiplexed(session: 0, host: "a")
    let second = control.multiplexed(session: 0, host: "a")
    #expect(first && !second)
    #expect(control.multiplexedHosts == ["a"])
    #expect(Self.drain(&control, hosts: hosts) == [1, 2])
    // Session 1 is still held to the cap.
    #expect(control.hasWaiting)
    // A queue made later for that session and host starts without the cap.
    let later = control.queue(TransferQueue(session: 0, host: "a", sessionLimit: 10, hostLimit: 1))
    #expect(later == keys[0])
  }

  @Test func aSessionsTransfersShareOneRateBudget() {
    var (control, _) = Self.control()
    let first = control.bucket(session: 0, bytesPerSecond: 1000)
    #expect(control.bucket(session: 0, bytesPerSecond: 5) === first)
    #expect(control.bucket(session: 1, bytesPerSecond: 1000) !== first)
    #expect(Array(control.rateBuckets).count == 2)
  }

  @Test func aCancelledRunEndsEveryTransferAtOnce() {
    var (control, keys) = Self.control(global: 1)
    control.push(0, queue: keys[0])
    control.push(1, queue: keys[0])
    #expect(Self.drain(&control, hosts: [0: (0, "a")]) == [0])
    control.endedAll()
    #expect(control.running == 0)
    let next = control.next()
    #expect(next == 1)
  }
}
