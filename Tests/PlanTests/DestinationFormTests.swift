import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLPlan
@testable import BatchDLSupport

/// The one normalization of a destination (`RelativeDestination`) and the one form the plan keeps
/// it in (`DestinationForm`).
@Suite struct DestinationFormTests {
  @Test func aWrittenDestinationIsNormalizedOrRefusedWithItsValue() throws {
    #expect(try RelativeDestination.parse("a//b/./c/").get().path == "a/b/c")
    #expect(try RelativeDestination.parse("a/..").get().isFolder)
    #expect(try RelativeDestination.parse(".").get() == .folder)
    for written in ["/abs", "../a", "", "a\u{1}b"] {
      guard case .failure(let problem) = RelativeDestination.parse(written) else {
        Issue.record("'\(written)' was taken")
        continue
      }
      #expect(problem.message.hasPrefix("to '\(ShownText.escaped(written, limit: 200))' "))
      #expect(problem.message.hasSuffix(problem.reason.message))
    }
    guard case .failure(let climbing) = RelativeDestination.parse("a/../../b") else {
      Issue.record("a path climbing out was taken")
      return
    }
    #expect(climbing.reason.climbsOut)
  }

  @Test func aNameAfterTheFolderPrefixIsTheDestinationTheFolderAndNameMake() throws {
    let form = DestinationForm(manifestDirectory: "/srv/m/./")
    let cases: [(dest: String, folder: String?)] = [
      ("", nil), ("", "x"), ("out", "x/y"), ("out/", nil), ("/srv/m", nil), ("/srv/m/sub", "x"), ("/srv", "m"),
      ("/srv/mx", nil), ("/elsewhere", "x"),
    ]
    for (dest, written) in cases {
      let folder = try written.map { try RelativeDestination.parse($0).get() } ?? .folder
      #expect(
        form.prefix(dest: dest, folder: folder) + "f.iso" == form.destination(dest: dest, folder.appending("f.iso")),
        "dest '\(dest)', folder '\(written ?? "")'")
    }
    #expect(form.destination(dest: "/srv/m/sub", .folder.appending("f")) == "sub/f")
    #expect(form.destination(dest: "/srv/mx", .folder.appending("f")) == "/srv/mx/f")
    #expect(DestinationForm().canonical("/srv/m/f") == "/srv/m/f")
  }
}
