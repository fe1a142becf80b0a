import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLTransfer

@Suite struct DiscretionaryTests {
  let utc = TimeZone(identifier: "UTC") ?? .current

  func at(_ hour: Int, _ minute: Int) -> Date {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = utc
    let components = DateComponents(year: 2024, month: 3, day: 9, hour: hour, minute: minute)
    return calendar.date(from: components) ?? Date(timeIntervalSince1970: 0)
  }

  func policy() -> NetworkPolicy {
    let routes = finder(ipv4: cellularDefault, names: ["example.org": ["8.8.8.8"], "intranet.example": ["10.1.2.3"]])
    return NetworkPolicy(routes: routes, environment: [:], timeZone: utc)
  }

  @Test func insideTheWindowItRuns() throws {
    let night = try #require(TimeWindow.parse("01:00-05:00"))
    let session = settings(discretionary: true, window: night)
    #expect(policy().decide(host: "example.org", port: 443, settings: session, now: at(3, 30)) == .allowed(bindTo: nil))
    #expect(policy().decide(host: "example.org", port: 443, settings: session, now: at(1, 0)) == .allowed(bindTo: nil))
  }

  @Test func outsideTheWindowItIsDeferred() throws {
    let night = try #require(TimeWindow.parse("01:00-05:00"))
    let session = settings(waits: true, discretionary: true, window: night)
    #expect(
      policy().decide(host: "example.org", port: 443, settings: session, now: at(14, 5))
        == .defer(reason: "the session is discretionary and it is 14:05 local time, outside network.window 01:00-05:00")
    )
    #expect(policy().decide(host: "example.org", port: 443, settings: session, now: at(5, 0)).reason != nil)
  }

  @Test func aWindowAcrossMidnight() throws {
    let late = try #require(TimeWindow.parse("23:00-02:00"))
    let session = settings(discretionary: true, window: late)
    for (hour, minute) in [(23, 0), (23, 59), (0, 0), (1, 59)] {
      #expect(
        policy().decide(host: "example.org", port: 443, settings: session, now: at(hour, minute))
          == .allowed(bindTo: nil))
    }
    for (hour, minute) in [(2, 0), (12, 0), (22, 59)] {
      guard case .defer = policy().decide(host: "example.org", port: 443, settings: session, now: at(hour, minute))
      else {
        Issue.record("\(hour):\(minute) is outside 23:00-02:00")
        continue
      }
    }
  }

  @Test func theWindowIsReadInLocalTime() throws {
    let policy = NetworkPolicy(routes: finder(ipv4: cellularDefault), environment: [:])
    let now = Date()
    let parts = Calendar.current.dateComponents([.hour, .minute], from: now)
    #expect(policy.minuteOfDay(now) == (parts.hour ?? 0) * 60 + (parts.minute ?? 0))
  }

  @Test func aDiscretionaryTaskDefersRatherThanWaitOnADisallowedRoute() throws {
    let night = try #require(TimeWindow.parse("01:00-05:00"))
    let session = settings(cellular: false, waits: true, discretionary: true, window: night)
    let decision = policy().decide(host: "example.org", port: 443, settings: session, now: at(2, 0))
    guard case .defer(let reason) = decision else {
      Issue.record("expected defer, got \(decision)")
      return
    }
    #expect(reason.hasPrefix("the only route to example.org is through wwan0, a cellular interface"))
    #expect(reason.contains("discretionary"))
    #expect(
      policy().decide(host: "intranet.example", port: 443, settings: session, now: at(2, 0)) == .allowed(bindTo: nil))
  }

  @Test func withoutAWindowADiscretionaryTaskRunsAnyTime() {
    let session = settings(discretionary: true)
    #expect(policy().decide(host: "example.org", port: 443, settings: session, now: at(13, 0)) == .allowed(bindTo: nil))
  }
}
