import TestSupport
import Testing

@testable import BatchDLManifest
@testable import BatchDLPlan
@testable import BatchDLSupport

/// The size a listing gives a file is what the plan expects it to be, not a pin
/// (`Plan.expectedSize`), and where each session keeps its partial files (`partial_dir:`).
@Suite struct ListedSizeTests {
  @Test func aListedSizeIsExpectedButNotPinnedAndARoundedOneIsNotForPreallocation() throws {
    let plan = try IndexExpansionTests().plan([
      ("", IndexExpansionTests.page("/pub/", [("a.iso", "100"), ("b.iso", "1.2M"), ("sub/", "-")])),
      ("sub", IndexExpansionTests.page("/pub/sub/", [("c.iso", "-")])),
    ])
    var found: [String: ExpectedSize?] = [:]
    var preallocated: [String: Int64?] = [:]
    for task in plan.tasks {
      let name = plan.destination(of: task) ?? ""
      found[name] = plan.expectedSize(of: task)
      preallocated[name] = plan.listedSize(of: plan.requests[Int(task.request)])
    }
    #expect(found["mirror/a.iso"] == ExpectedSize(bytes: 100, isPinned: false, isExact: true), "\(found)")
    #expect(found["mirror/b.iso"]??.isExact == false, "\(found)")
    #expect(found["mirror/b.iso"]??.bytes ?? 0 > 1_000_000, "\(found)")
    #expect(found["mirror/sub/c.iso"] == .some(nil), "\(found)")
    #expect(preallocated["mirror/a.iso"] == 100)
    #expect(preallocated["mirror/b.iso"] == .some(nil), "a rounded size is not reserved")
  }

  @Test func partialFilesGoBesideTheDestinationOrIntoPartialDirUnderNamesThatNeverCollide() {
    let table: [(destination: String, folder: String?, expected: String)] = [
      ("/srv/m/pub/a.iso", nil, "/srv/m/pub/a.iso.batchdl-part"),
      (
        "/srv/m/pub/a.iso", "/srv/m/.partial",
        "/srv/m/.partial/e050b7349ea0b28c-a.iso.batchdl-part"
      ),
    ]
    for row in table {
      #expect(PartialFile.path(of: row.destination, in: row.folder) == row.expected, "\(row)")
    }
    let one = PartialFile.path(of: "/srv/m/pub/x/a.iso", in: "/p")
    let two = PartialFile.path(of: "/srv/m/pub/y/a.iso", in: "/p")
    #expect(one != two)
    #expect(one.hasPrefix("/p/") && two.hasPrefix("/p/"))
    let long = "/d/" + String(repeating: "n", count: 250)
    let name = FileAccess.name(of: PartialFile.path(of: long, in: "/p"))
    #expect(name.utf8.count <= 255 && name.hasSuffix(PartialFile.suffix), "\(name)")
  }

  @Test func partialDirIsRelativeToDestOrAbsolute() throws {
    let table: [(dest: String, partial: String, expected: String)] = [
      ("/srv/mirror/pub", "../.partial", "/srv/mirror/.partial"),
      ("/srv/mirror/pub", ".partial", "/srv/mirror/pub/.partial"),
      ("/srv/mirror/pub", "/var/tmp/partial", "/var/tmp/partial"),
    ]
    for row in table {
      #expect(ManifestDecoder.partialFolder(row.partial, root: row.dest) == row.expected, "\(row)")
    }
  }

  @Test func partialDirMustShareDestsFilesystem() {
    #expect(
      ManifestDecoder.sameFilesystemProblem(
        partialDir: "p", dest: "d", destDevice: 1, folderDevice: 1, destFound: "/d", folderFound: "/d/p") == nil)
    let problem = ManifestDecoder.sameFilesystemProblem(
      partialDir: "/dev/shm/p", dest: "pub", destDevice: 1, folderDevice: 2, destFound: "/m/pub",
      folderFound: "/dev/shm")
    #expect(problem?.contains("another filesystem") == true, "\(problem ?? "")")
    #expect(problem?.contains("/dev/shm") == true, "\(problem ?? "")")
  }
}
