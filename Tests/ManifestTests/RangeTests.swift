import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLSupport

/// Numbers past the documented maximums are refused where they are written, before anything could
/// compute with them.
@Suite struct RangeTests {
  @Test(
    arguments: [
      ("timeouts: {request: 9223372036854776}", "6:25", "timeouts.request '9223372036854776' is too long"),
      ("timeouts: {request: 9223372036854775807ms}", "6:25", "at most 3650d"),
      ("timeouts: {resource: 3651d}", "6:26", "timeouts.resource '3651d' is too long"),
      ("timeouts: {request: 1e300s}", "6:25", "at most 3650d"),
      ("retry: {backoff: 87601h}", "6:22", "retry.backoff '87601h' is too long"),
      ("retry: {max_backoff: 99999999999999999999}", "6:26", "at most 3650d"),
      ("retry: {attempts: 1000001}", "6:23", "retry.attempts must be from 1 to 1000000, found 1000001"),
      ("retry: {attempts: 99999999999999999999}", "6:23", "retry.attempts must be from 1 to 1000000"),
      ("network: {max_concurrent: 4611686018427387904}", "6:31", "network.max_concurrent must be from 1 to 1000000"),
      ("network: {max_connections_per_host: 1000001}", "6:41", "network.max_connections_per_host must be from 1"),
      ("network: {rate_limit: 1025TB/s}", "6:27", "rates may be at most 1024TB/s"),
      ("network: {rate_limit: 99999999999999999999/s}", "6:27", "rates may be at most 1024TB/s"),
      ("cache: {memory: 1025TB}", "6:21", "cache.memory '1025TB' is too large: sizes may be at most 1024TB"),
      ("cache: {disk: 9999999999TB}", "6:19", "sizes may be at most 1024TB"),
      ("cache: {disk: 99999999999999999999}", "6:19", "sizes may be at most 1024TB"),
    ] as [(String, String, String)])
  func outOfRange(setting: String, position: String, message: String) {
    expectProblems(minimal(adding: setting), [Expected(position, message)])
  }

  @Test func theMaximumsThemselvesAreAccepted() throws {
    let manifest = try load(
      minimal(
        adding: """
          timeouts: {request: 3650d, resource: 87600h}
          retry: {attempts: 1000000, backoff: 3650d, max_backoff: 3650d}
          network: {max_concurrent: 1000000, max_connections_per_host: 1000000, rate_limit: 1024TB/s}
          cache: {memory: 1024TB, disk: 1099511627776KB}
          """))
    let session = try #require(manifest.session("main"))
    #expect(session.timeouts.request == Limits.interval)
    #expect(session.timeouts.resource == Limits.interval)
    #expect(session.retry.attempts == Limits.count)
    #expect(session.network.maxConcurrent == Limits.count)
    #expect(session.network.rateLimit == Limits.bytes)
    #expect(session.cache.disk == Limits.bytes)
  }

  @Test func taskSizesAndThresholdsAreRangeChecked() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/b.bin
              size: 2048TB
            - data: https://example.org/c
              become_download: {larger_than: 99999999999999999999}
      """,
      [
        Expected("6:15", "size '2048TB' is too large"),
        Expected("8:40", "become_download.larger_than '99999999999999999999' is too large"),
      ])
  }

  @Test func hugeVersionIsUnsupportedNotMalformed() {
    expectProblems(
      "version: 99999999999999999999\nsessions:\n  main:\n    tasks: []\n",
      [Expected("1:10", "version must be 1"), Expected("4:12", "has no tasks", severity: "warning")])
  }

  @Test(arguments: ["9223372036854776", "9223372036854775807", "99999999999999999999", "106751991167301d"])
  func durationsTooLongToCountAreNotParsed(text: String) {
    #expect(Interval.parse(text) == nil)
  }

  @Test func secondsSaturateInsteadOfOverflowing() {
    #expect(Interval.seconds(Int64.max).milliseconds == Int64.max)
    #expect(Interval.seconds(Int64.min).milliseconds == Int64.min)
    #expect(Interval.seconds(7).milliseconds == 7000)
  }
}
