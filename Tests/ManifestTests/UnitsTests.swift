import Testing

@testable import BatchDL
@testable import BatchDLSupport
@testable import BatchDLTransfer

/// Size, duration and time-window parsing.
@Suite struct UnitsTests {
  @Test(
    arguments: [
      ("0", 0), ("123", 123), ("7B", 7), (" 7B ", 7), ("10KB", 10_240), ("10 KB", 10_240), ("20MB", 20 << 20),
      ("1GB", 1 << 30), ("2TB", 2 << 40), ("4KiB", 4096), ("3MiB", 3 << 20), ("1GiB", 1 << 30), ("1TiB", 1 << 40),
      ("1K", 1024), ("3M", 3 << 20), ("1G", 1 << 30), ("1T", 1 << 40), ("1.5KB", 1536), ("0.5MB", 512 << 10),
      ("+5", 5),
    ] as [(String, Int64)])
  func byteSizes(text: String, bytes: Int64) {
    #expect(ByteSize.parse(text) == bytes)
  }

  @Test(arguments: [
    "", " ", "abc", "10XB", "-5", "-1KB", "-0.5MB", "1.5", "1.5B", "KB", "MB", "10kb", "10 K B", "1e3", "1e3KB",
    "9999999999TB", "99999999999999999999", "nanKB", "inf.KB", "10KB/s", "0x10",
  ])
  func badByteSizes(text: String) {
    #expect(ByteSize.parse(text) == nil)
  }

  @Test(
    arguments: [(0, "0"), (1536, "1536"), (10 << 20, "10MB"), (1024, "1KB"), (3 << 30, "3GB"), (1 << 40, "1TB")]
      as [(Int64, String)])
  func byteSizeFormat(bytes: Int64, text: String) {
    #expect(ByteSize.format(bytes) == text)
    #expect(ByteSize.parse(text) == bytes)
  }

  @Test(
    arguments: [
      ("500ms", 500), ("30s", 30_000), ("5m", 300_000), ("2h", 7_200_000), ("7d", 604_800_000), ("10", 10_000),
      ("0", 0), ("0s", 0), ("1.5s", 1500), ("1.5m", 90_000), ("0.5h", 1_800_000), (" 5m ", 300_000),
      ("5 m", 300_000), ("30 s", 30_000), ("500 ms", 500),
    ] as [(String, Int64)])
  func intervals(text: String, milliseconds: Int64) {
    #expect(Interval.parse(text)?.milliseconds == milliseconds)
  }

  @Test(arguments: [
    "", "abc", "-5s", "-1", "-0.5m", "s", "ms", "5mm", "5x", "1h30m", "5 minutes", "ten s", "1e400s", "nans",
    "9999999999999999d", "5s s",
  ])
  func badIntervals(text: String) {
    #expect(Interval.parse(text) == nil)
  }

  @Test(
    arguments: [
      (500, "500ms"), (1000, "1s"), (90_000, "90s"), (120_000, "2m"), (3_600_000, "1h"), (86_400_000, "1d"),
      (1500, "1500ms"), (0, "0ms"),
    ] as [(Int64, String)])
  func intervalDescription(milliseconds: Int64, text: String) {
    #expect(Interval(milliseconds: milliseconds).description == text)
    #expect(Interval.parse(text)?.milliseconds == milliseconds)
  }

  @Test func timeWindows() throws {
    let night = try #require(TimeWindow.parse("01:00-05:00"))
    #expect(night == TimeWindow(start: 60, end: 300))
    #expect(night.contains(minute: 60) && night.contains(minute: 299))
    #expect(!night.contains(minute: 300) && !night.contains(minute: 59))
    let across = try #require(TimeWindow.parse("22:30-06:00"))
    #expect(across.contains(minute: 23 * 60) && across.contains(minute: 0) && across.contains(minute: 359))
    #expect(!across.contains(minute: 360) && !across.contains(minute: 12 * 60))
    #expect(across.description == "22:30-06:00")
    #expect(TimeWindow.parse("0:00-24:00") == TimeWindow(start: 0, end: 1440))
    #expect(TimeWindow.parse(" 01:00-05:00 ") != nil)
    #expect(TimeWindow.parse("01:00 - 05:00") == TimeWindow(start: 60, end: 300))
    for bad in [
      "", "01:00", "01:00-01:00", "25:00-01:00", "24:01-01:00", "01:60-02:00", "0100-0500", "1-5",
      "01:00-05:00-06:00", "a:bc-de:fg", "01:0-02:00",
    ] {
      #expect(TimeWindow.parse(bad) == nil, "\(bad)")
    }
  }
}
