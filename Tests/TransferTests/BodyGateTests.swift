import Testing

@testable import BatchDL
@testable import BatchDLTransfer

/// The gate's table: every response a server can give to a request with or without a range, and
/// what may be written of its body.
@Suite struct BodyGateTests {
  typealias Admission = BodyGate.Admission

  func head(_ status: Int, _ fields: [(String, String)] = []) -> ResponseHead {
    var head = ResponseHead()
    head.status = status
    head.fields = fields.map { ($0.0.lowercased(), $0.1) }
    return head
  }

  func range(_ value: String, length: Int64? = nil) -> [(String, String)] {
    var fields = [("content-range", value)]
    if let length { fields.append(("content-length", String(length))) }
    return fields
  }

  static let whole = BodyGate()
  static let resumed = BodyGate(asked: .init(start: 600_000, end: nil, total: 1_000_000))
  static let resumedUnknownTotal = BodyGate(asked: .init(start: 600_000, end: nil, total: nil))
  static let segment = BodyGate(asked: .init(start: 100, end: 199, total: 1000))
  static let byTag = BodyGate(asked: .init(start: 600, end: nil, total: 1000), ifRange: "\"v1\"")
  static let byDate = BodyGate(
    asked: .init(start: 600, end: nil, total: 1000), ifRange: "Tue, 10 Nov 2026 08:00:00 GMT")
  static let tail = [("content-range", "bytes 600-999/1000")]

  struct Row: CustomTestStringConvertible, Sendable {
    var name: String
    var gate: BodyGate
    var status: Int
    var fields: [(String, String)]
    /// The admission, or the failure code.
    var expected: Result<Admission, Code>
    var testDescription: String { name }

    struct Code: Error, Equatable, Sendable {
      var code: String
      init(_ code: String) { self.code = code }
    }
  }

  static let rows: [Row] = [
    Row(
      name: "200 without range", gate: whole, status: 200, fields: [("content-length", "10")],
      expected: .success(.whole(length: 10))),
    Row(name: "200 chunked", gate: whole, status: 200, fields: [], expected: .success(.whole(length: nil))),
    Row(
      name: "206 to no range, a middle part", gate: whole, status: 206,
      fields: [("content-range", "bytes 50000-99999/100000")], expected: .failure(.init("range-mismatch"))),
    Row(
      name: "206 to no range, no Content-Range", gate: whole, status: 206, fields: [("content-length", "5")],
      expected: .failure(.init("range-mismatch"))),
    Row(
      name: "206 to no range, a prefix", gate: whole, status: 206, fields: [("content-range", "bytes 0-49999/100000")],
      expected: .failure(.init("range-mismatch"))),
    Row(
      name: "206 to no range, unknown total", gate: whole, status: 206, fields: [("content-range", "bytes 0-99/*")],
      expected: .failure(.init("range-mismatch"))),
    Row(
      name: "206 to no range, the whole file", gate: whole, status: 206,
      fields: [("content-range", "bytes 0-99999/100000")], expected: .success(.whole(length: 100_000))),
    Row(
      name: "206 with a Content-Length other than its range", gate: whole, status: 206,
      fields: [("content-range", "bytes 0-99/100"), ("content-length", "50")],
      expected: .failure(.init("range-mismatch"))),
    Row(
      name: "206 with an end before its start", gate: resumed, status: 206,
      fields: [("content-range", "bytes 600000-5/1000000")], expected: .failure(.init("range-mismatch"))),
    Row(
      name: "206 with an end past its total", gate: resumed, status: 206,
      fields: [("content-range", "bytes 600000-1000000/1000000")], expected: .failure(.init("range-mismatch"))),
    Row(
      name: "206 with a garbled Content-Range", gate: resumed, status: 206,
      fields: [("content-range", "bytes=600000-")],
      expected: .failure(.init("range-mismatch"))),
    Row(
      name: "206 with a content encoding", gate: resumed, status: 206,
      fields: [("content-range", "bytes 600000-999999/1000000"), ("content-encoding", "gzip")],
      expected: .failure(.init("range-mismatch"))),
    Row(
      name: "resume answered from the asked byte", gate: resumed, status: 206,
      fields: [("content-range", "bytes 600000-999999/1000000")],
      expected: .success(.range(start: 600_000, end: 999_999, total: 1_000_000))),
    Row(
      name: "resume answered short", gate: resumed, status: 206,
      fields: [("content-range", "bytes 600000-799999/1000000")],
      expected: .success(.range(start: 600_000, end: 799_999, total: 1_000_000))),
    Row(
      name: "resume answered from another byte", gate: resumed, status: 206,
      fields: [("content-range", "bytes 500000-999999/1000000")], expected: .failure(.init("resume-restart"))),
    Row(
      name: "resume answered with another total", gate: resumed, status: 206,
      fields: [("content-range", "bytes 600000-1199999/1200000")], expected: .failure(.init("resume-restart"))),
    Row(
      name: "resume answered with an unknown total", gate: resumed, status: 206,
      fields: [("content-range", "bytes 600000-999999/*")],
      expected: .success(.range(start: 600_000, end: 999_999, total: 1_000_000))),
    Row(
      name: "resume of unknown total, unknown again", gate: resumedUnknownTotal, status: 206,
      fields: [("content-range", "bytes 600000-999999/*")],
      expected: .success(.range(start: 600_000, end: 999_999, total: nil))),
    Row(
      name: "resume answered with 200", gate: resumed, status: 200, fields: [("content-length", "1000000")],
      expected: .success(.whole(length: 1_000_000))),
    Row(
      name: "resume at the total answered 416", gate: BodyGate(asked: .init(start: 1000, end: nil, total: 1000)),
      status: 416, fields: [("content-range", "bytes */1000")], expected: .success(.alreadyComplete(total: 1000))),
    Row(
      name: "resume at the total answered 416 of another length",
      gate: BodyGate(asked: .init(start: 1000, end: nil, total: 1000)), status: 416,
      fields: [("content-range", "bytes */2000")], expected: .failure(.init("resume-restart"))),
    Row(
      name: "resume short of the total answered 416", gate: resumed, status: 416, fields: [],
      expected: .failure(.init("resume-restart"))),
    Row(name: "416 to no range", gate: whole, status: 416, fields: [], expected: .success(.error)),
    Row(
      name: "segment answered exactly", gate: segment, status: 206, fields: [("content-range", "bytes 100-199/1000")],
      expected: .success(.range(start: 100, end: 199, total: 1000))),
    Row(
      name: "segment answered past its end", gate: segment, status: 206,
      fields: [("content-range", "bytes 100-299/1000")],
      expected: .failure(.init("range-mismatch"))),
    Row(name: "404", gate: whole, status: 404, fields: [], expected: .success(.error)),
    Row(name: "304 unasked", gate: whole, status: 304, fields: [], expected: .success(.error)),
    Row(
      name: "304 asked", gate: BodyGate(conditional: true), status: 304, fields: [], expected: .success(.notModified)),
    // The validator a 206 carries must be the one its If-Range named.
    Row(
      name: "206 with the ETag asked for", gate: byTag, status: 206, fields: tail + [("etag", "\"v1\"")],
      expected: .success(.range(start: 600, end: 999, total: 1000))),
    Row(
      name: "206 with another ETag", gate: byTag, status: 206, fields: tail + [("etag", "\"v2\"")],
      expected: .failure(.init("resume-restart"))),
    Row(
      name: "206 with a weak ETag", gate: byTag, status: 206, fields: tail + [("etag", "W/\"v1\"")],
      expected: .failure(.init("resume-restart"))),
    Row(
      name: "206 without an ETag", gate: byTag, status: 206, fields: tail, expected: .failure(.init("resume-restart"))),
    Row(
      name: "206 with the date asked for", gate: byDate, status: 206,
      fields: tail + [("last-modified", "Tue, 10 Nov 2026 08:00:00 GMT")],
      expected: .success(.range(start: 600, end: 999, total: 1000))),
    Row(
      name: "206 with another date", gate: byDate, status: 206,
      fields: tail + [("last-modified", "Tue, 10 Nov 2026 08:00:01 GMT")],
      expected: .failure(.init("resume-restart"))),
    Row(
      name: "206 with only an ETag to a date", gate: byDate, status: 206, fields: tail + [("etag", "\"v1\"")],
      expected: .failure(.init("resume-restart"))),
    Row(
      name: "200 to an If-Range: the whole new file", gate: byTag, status: 200,
      fields: [("content-length", "1000"), ("etag", "\"v2\"")], expected: .success(.whole(length: 1000))),
    Row(
      name: "206 guarded by a digest carries any ETag", gate: BodyGate(asked: .init(start: 600, end: nil, total: 1000)),
      status: 206, fields: tail + [("etag", "\"mirror\"")],
      expected: .success(.range(start: 600, end: 999, total: 1000))),
  ]

  /// Which validator a response gives for a later `If-Range`: strong ETags, and dates only when
  /// strong (a second or more before the response's `Date`).
  @Test(
    arguments: [
      ([("etag", "\"v1\""), ("last-modified", "Tue, 10 Nov 2026 08:00:00 GMT")], "\"v1\""),
      ([("etag", "W/\"v1\""), ("last-modified", "Tue, 10 Nov 2026 08:00:00 GMT")], nil),
      (
        [("last-modified", "Tue, 10 Nov 2026 08:00:00 GMT"), ("date", "Tue, 10 Nov 2026 08:00:01 GMT")],
        "Tue, 10 Nov 2026 08:00:00 GMT"
      ),
      ([("last-modified", "Tue, 10 Nov 2026 08:00:00 GMT"), ("date", "Tue, 10 Nov 2026 08:00:00 GMT")], nil),
      ([("last-modified", "Tue, 10 Nov 2026 08:00:00 GMT")], nil),
      ([("last-modified", "yesterday"), ("date", "Tue, 10 Nov 2026 08:00:01 GMT")], nil),
      ([("etag", "\"v1\""), ("content-encoding", "gzip")], nil),
    ] as [([(String, String)], String?)])
  func aRangeValidatorIsStrong(fields: [(String, String)], expected: String?) {
    #expect(ResumeValidator(rangeOf: head(200, fields))?.ifRange == expected)
  }

  /// The kinds of validator, and how the state folder keeps them.
  @Test func aValidatorIsOfAKindNotASpelling() {
    #expect(ResumeValidator(rangeOf: head(200, [("etag", "\"v1\"")])) == .etag("\"v1\""))
    let date = "Tue, 10 Nov 2026 08:00:00 GMT"
    #expect(
      ResumeValidator(rangeOf: head(200, [("last-modified", date), ("date", "Tue, 10 Nov 2026 08:00:05 GMT")]))
        == .date(date))
    for validator in [ResumeValidator.etag("\"v1\""), .date(date), .digest] {
      #expect(ResumeValidator(stored: validator.stored) == validator)
    }
    #expect(ResumeValidator.digest.ifRange == nil)
    #expect(ResumeValidator.etag("\"a\"").carriesAcrossSources && !ResumeValidator.date(date).carriesAcrossSources)
  }

  @Test(arguments: rows) func admits(_ row: Row) {
    let result = row.gate.admit(head(row.status, row.fields))
    switch (result, row.expected) {
    case (.success(let got), .success(let want)):
      #expect(got == want)
    case (.failure(let got), .failure(let want)):
      #expect(got.code.rawValue == want.code, "\(got.message)")
    default:
      Issue.record("got \(result), expected \(row.expected)")
    }
  }

  @Test func aWholeBodyMustHaveItsDeclaredLength() {
    #expect(Self.whole.verify(.whole(length: 10), received: 10) == nil)
    #expect(Self.whole.verify(.whole(length: 10), received: 9)?.code.rawValue == "network")
    #expect(Self.whole.verify(.whole(length: nil), received: 9) == nil)
    #expect(BodyGate(isHead: true).verify(.whole(length: 10), received: 0) == nil)
  }

  @Test func aRangeMustBeCompleteAndReachTheEndOfTheFile() {
    let full = Admission.range(start: 600_000, end: 999_999, total: 1_000_000)
    #expect(Self.resumed.verify(full, received: 400_000) == nil)
    #expect(Self.resumed.verify(full, received: 399_999)?.code.rawValue == "network")
    let short = Admission.range(start: 600_000, end: 799_999, total: 1_000_000)
    #expect(Self.resumed.verify(short, received: 200_000)?.code.rawValue == "incomplete")
    let unknown = Admission.range(start: 600_000, end: 799_999, total: nil)
    #expect(Self.resumedUnknownTotal.verify(unknown, received: 200_000)?.code.rawValue == "incomplete")
    // A segment is complete when its own range is.
    #expect(Self.segment.verify(.range(start: 100, end: 199, total: 1000), received: 100) == nil)
    // A segment answered with fewer bytes than it asked for is continued, never complete.
    #expect(Self.segment.verify(.range(start: 100, end: 149, total: 1000), received: 50)?.code.rawValue == "incomplete")
  }

  // MARK: - max_size

  static let capped = BodyGate(maxSize: 1000)
  static let cappedResume = BodyGate(asked: .init(start: 600, end: nil, total: nil), maxSize: 1000)

  static let maxSizeRows: [Row] = [
    Row(
      name: "a declared length within max_size", gate: capped, status: 200, fields: [("content-length", "1000")],
      expected: .success(.whole(length: 1000))),
    Row(
      name: "a declared length past max_size", gate: capped, status: 200, fields: [("content-length", "1001")],
      expected: .failure(.init("too-large"))),
    Row(
      name: "no length: judged as it streams", gate: capped, status: 200, fields: [],
      expected: .success(.whole(length: nil))),
    Row(
      name: "a whole-file 206 past max_size", gate: capped, status: 206,
      fields: [("content-range", "bytes 0-1999/2000")], expected: .failure(.init("too-large"))),
    Row(
      name: "a resumed file whose total passes max_size", gate: cappedResume, status: 206,
      fields: [("content-range", "bytes 600-1499/1500")], expected: .failure(.init("too-large"))),
    Row(
      name: "a resumed file without a total whose range passes max_size", gate: cappedResume, status: 206,
      fields: [("content-range", "bytes 600-1199/*")], expected: .failure(.init("too-large"))),
    Row(
      name: "a resumed file within max_size", gate: cappedResume, status: 206,
      fields: [("content-range", "bytes 600-999/1000")], expected: .success(.range(start: 600, end: 999, total: 1000))),
    Row(
      name: "a recorded total past max_size, answered 416",
      gate: BodyGate(asked: .init(start: 1500, end: nil, total: 1500), maxSize: 1000), status: 416, fields: [],
      expected: .failure(.init("too-large"))),
    Row(
      name: "an error page is not judged by max_size", gate: capped, status: 404, fields: [("content-length", "5000")],
      expected: .success(.error)),
    Row(
      name: "a HEAD's length is not a body", gate: BodyGate(isHead: true, maxSize: 1000), status: 200,
      fields: [("content-length", "5000")], expected: .success(.whole(length: 5000))),
    Row(
      name: "a 304 is not judged by max_size", gate: BodyGate(conditional: true, maxSize: 1000), status: 304,
      fields: [("content-length", "5000")], expected: .success(.notModified)),
  ]

  @Test(arguments: maxSizeRows) func admitsWithinMaxSize(_ row: Row) {
    admits(row)
  }

  @Test func aBodyThatStreamsPastMaxSizeStopsAtTheByteThatCrossesIt() {
    #expect(Self.capped.overflow(at: 0, adding: 1000) == nil)
    #expect(Self.capped.overflow(at: 999, adding: 1) == nil)
    let failure = Self.capped.overflow(at: 1000, adding: 1)
    #expect(failure?.code == .tooLarge)
    #expect(failure?.message.contains("max_size") == true, "\(failure?.message ?? "")")
    #expect(failure?.message.contains("nothing was kept") == true)
    // Kept bytes of a resumed file count: the position is in the whole representation.
    #expect(Self.capped.overflow(at: 900, adding: 101)?.code == .tooLarge)
    // Without max_size nothing is too large.
    #expect(Self.whole.overflow(at: 1 << 40, adding: 1 << 20) == nil)
  }

  @Test func tooLargeKeepsNothingAndIsNotTriedAgain() {
    let failure = Self.capped.tooLarge("the response declares 2000 bytes")
    #expect(failure.code.discardsPartial)
    #expect(!FailureClassifier.isRetryable(failure))
    #expect(!FailureClassifier.isSourceFailure(failure))
    #expect(!FailureCode.bodyTooLarge.discardsPartial && !FailureCode.checksumMismatch.discardsPartial)
  }

  @Test func aDecodedBodyIsNotHeldToItsEncodedLength() {
    let gate = BodyGate(decodes: true)
    let admitted = gate.admit(head(200, [("content-length", "10"), ("content-encoding", "gzip")]))
    #expect((try? admitted.get()) == .whole(length: nil))
    let raw = Self.whole.admit(head(200, [("content-length", "10"), ("content-encoding", "gzip")]))
    #expect((try? raw.get()) == .whole(length: 10))
  }
}
