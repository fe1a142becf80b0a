import Testing

@testable import BatchDL

/// Which partial file a checkpoint (or the record a run makes before the first byte) names that
/// prune removes (`StalePartials.decide`).
@Suite struct StalePartialsTests {
  static let roots = ["/srv/pub", "/srv/.partial"]

  struct Case: Sendable, CustomStringConvertible {
    var description: String
    var partial: String
    var planned: String??
    var expected: StalePartials.Removal?
  }

  static let cases: [Case] = [
    Case(
      description: "no task fetches it any more, beside its file", partial: "/srv/pub/a.iso.batchdl-part",
      planned: .none,
      expected: .init(root: "/srv/pub", relative: "a.iso.batchdl-part", forget: true)),
    Case(
      description: "no task fetches it any more, in partial_dir",
      partial: "/srv/.partial/0123456789abcdef-a.iso.batchdl-part", planned: .none,
      expected: .init(root: "/srv/.partial", relative: "0123456789abcdef-a.iso.batchdl-part", forget: true)),
    Case(
      description: "deep below dest", partial: "/srv/pub/x/y/a.iso.batchdl-part", planned: .none,
      expected: .init(root: "/srv/pub", relative: "x/y/a.iso.batchdl-part", forget: true)),
    Case(
      description: "the plan writes that very file", partial: "/srv/pub/a.iso.batchdl-part",
      planned: .some("/srv/pub/a.iso.batchdl-part"), expected: nil),
    Case(
      description: "the plan writes it elsewhere now (partial_dir set): the file goes, the record stays",
      partial: "/srv/pub/a.iso.batchdl-part", planned: .some("/srv/.partial/0123456789abcdef-a.iso.batchdl-part"),
      expected: .init(root: "/srv/pub", relative: "a.iso.batchdl-part", forget: false)),
    Case(
      description: "planned without a partial file", partial: "/srv/pub/a.iso.batchdl-part", planned: .some(nil),
      expected: .init(root: "/srv/pub", relative: "a.iso.batchdl-part", forget: false)),
    Case(
      description: "outside the session's folders (another session's)", partial: "/srv/other/a.iso.batchdl-part",
      planned: .none, expected: nil),
    Case(
      description: "a sibling folder that shares the prefix", partial: "/srv/pub2/a.iso.batchdl-part",
      planned: .none, expected: nil),
    Case(
      description: "not a partial file (a damaged record)", partial: "/srv/pub/a.iso", planned: .none,
      expected: nil),
    Case(
      description: "the suffix alone, as a folder", partial: "/srv/pub/", planned: .none, expected: nil),
    Case(
      description: "the root itself", partial: "/srv/pub", planned: .none, expected: nil),
    Case(
      description: "NFD name against a planned NFC one is another file",
      partial: "/srv/pub/cafe\u{301}.batchdl-part", planned: .some("/srv/pub/caf\u{E9}.batchdl-part"),
      expected: .init(root: "/srv/pub", relative: "cafe\u{301}.batchdl-part", forget: false)),
  ]

  @Test(arguments: cases)
  func decides(_ item: Case) {
    #expect(StalePartials.decide(partial: item.partial, planned: item.planned, roots: Self.roots) == item.expected)
  }
}
