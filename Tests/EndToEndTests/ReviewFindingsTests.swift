import Crypto
import Foundation
import TestServer
import TestSupport
import Testing

/// Defects found by a hostile review of the issue-36 fixes, where features meet. Each test runs
/// the built binary against the loopback test server and fails on the build it was found in.
@Suite(.serialized) struct ReviewFindingsTests {
  static func sha256(_ text: String) -> String { SHA256Digest.hex(Array(text.utf8)) }

  /// A bare-name entry (`README`, meaning `pub/README`) is given to the only covered file of that
  /// name (`pub/sub/README`, the top one not being covered), and content identity then joins it
  /// to the run's own download of `pub/README`, which expects that digest: `sub/README` is placed
  /// with the top-level README's bytes, exit 0.
  @Test func aBareNameEntryNeverPlacesAnotherFilesBytesThroughContentIdentity() throws {
    let fixture = try RunFixture()
    fixture.server.route("/pub/", HostileReviewTests.listing(["README", "sub/"]))
    fixture.server.route("/pub/sub/", HostileReviewTests.listing(["README"]))
    fixture.server.route("/pub/README", .text("top-level readme\n"))
    fixture.server.route("/pub/sub/README", .text("sub readme\n"))
    let top = Self.sha256("top-level readme\n")
    fixture.server.route("/pub/SHA256SUMS", .text("\(top)  README\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: out
          tasks:
            - download: BASE/pub/README
              to: top/README
              sha256: \(top)
            - index: BASE/pub/
              depth: 2
              include: ["sub/*"]
              to: m/
              checksums: BASE/pub/SHA256SUMS
      """)
    let outcome = try fixture.run()
    #expect(!fixture.holds("out/m/sub/README", Array("top-level readme\n".utf8)), "\(outcome.stdout)")
    if outcome.status == 0 {
      #expect(fixture.holds("out/m/sub/README", Array("sub readme\n".utf8)), "\(outcome.stdout)")
    }
  }

  /// `checksums:` names a URL that redirects to the checksum file the manifest mirrors: when a
  /// covered file fails its entry, the mirrored checksum file must not be placed (publish order
  /// and pins keyed by the first URL miss the download of the final one).
  @Test func aChecksumFileReachedThroughARedirectIsNotPublishedOverAFailedFile() throws {
    let fixture = try RunFixture()
    fixture.server.route("/rel/", HostileReviewTests.listing(["a.txt", "b.txt", "SHA256SUMS"]))
    fixture.server.route("/rel/a.txt", .text("a\n"))
    fixture.server.route("/rel/b.txt", .text("b served\n"))
    let sums = "\(Self.sha256("a\n"))  a.txt\n\(Self.sha256("b expected\n"))  b.txt\n"
    fixture.server.route("/rel/SHA256SUMS", .text(sums))
    fixture.server.route("/latest/SHA256SUMS", .redirect(status: 302, location: "/rel/SHA256SUMS"))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: out
          tasks:
            - index: BASE/rel/
              to: rel/
              exclude: ["SHA256SUMS"]
              checksums: BASE/latest/SHA256SUMS
            - download: BASE/rel/SHA256SUMS
              to: rel/SHA256SUMS
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/out/rel/b.txt"))
    #expect(
      !FileManager.default.fileExists(atPath: fixture.folder.path + "/out/rel/SHA256SUMS"),
      "a checksum file naming a file the mirror lacks was published: \(outcome.stdout)")
  }

  /// A state folder that cannot be created (its path is a file) exits 5 saying "nothing was
  /// sent", but the index page was fetched first: the preflight skips a state folder whose
  /// database does not exist yet.
  @Test func aStateFolderThatCannotBeCreatedSendsNothing() throws {
    let fixture = try RunFixture()
    fixture.server.route("/pub/", HostileReviewTests.listing(["a.bin"]))
    fixture.server.route("/pub/a.bin", .text("a\n"))
    fixture.folder.write("not-a-folder", "x\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: out
          tasks:
            - index: BASE/pub/
              to: m/
      """)
    let outcome = try fixture.run(["--state", "not-a-folder"])
    #expect(outcome.status == 5, "\(outcome.stderr)")
    #expect(fixture.server.requests.isEmpty, "\(fixture.server.requests.map(\.path))")
  }

  /// Ids under absolute `dest`s are the same on every machine, but not from night to night: a
  /// `README` that another session's list gains tonight takes the id `README`, so the unchanged
  /// `README` of session `b` becomes `b:README`, is fetched again, and `report diff` shows the
  /// other file as a checksum change of `README`.
  @Test func anotherSessionsNewFileDoesNotRenameAnUnchangedTask() throws {
    let fixture = try RunFixture()
    let outside = TemporaryDirectory()
    fixture.server.route("/a/x.txt", .text("x\n"))
    fixture.server.route("/a/README", .text("a readme\n"))
    fixture.server.route("/b/README", .text("b readme\n"))
    fixture.folder.write("a.list", fixture.server.url("/a/x.txt") + " x.txt\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        a:
          dest: \(outside.path)/A
          tasks:
            - list: a.list
              kind: download
        b:
          dest: \(outside.path)/B
          tasks:
            - download: BASE/b/README
              to: README
      """)
    let first = try fixture.run()
    #expect(first.status == 0, "\(first.stderr)")
    let before = try fixture.tasks()
    let bID = before.first { ($0.value["to"] as? String)?.hasSuffix("B/README") == true }?.key
    fixture.folder.write("first.json", fixture.folder.read("report.json") ?? "")
    fixture.folder.write(
      "a.list", fixture.server.url("/a/x.txt") + " x.txt\n" + fixture.server.url("/a/README") + " README\n")
    let second = try fixture.run()
    #expect(second.status == 0, "\(second.stderr)")
    let after = try fixture.tasks()
    let bIDAfter = after.first { ($0.value["to"] as? String)?.hasSuffix("B/README") == true }?.key
    #expect(bID != nil && bID == bIDAfter, "\(String(describing: bID)) → \(String(describing: bIDAfter))")
    #expect(fixture.server.requests(for: "/b/README").count == 1)
    let diff = try BinaryRunner.run(["report", "diff", "first.json", "report.json"], in: fixture.folder.path)
    #expect(!diff.stdout.contains("sha256"), "\(diff.stdout)")
  }

  /// A listing with `café.bin` in NFC and in NFD; on the second night the NFC one fails. `report
  /// diff` must report that regression (exit 1), not a checksum change of one merged id.
  @Test func reportDiffSeesAFailureOfTheComposedTwin() throws {
    let fixture = try RunFixture()
    let nfc = "caf\u{E9}.bin"
    let nfd = "cafe\u{301}.bin"
    let nfcPath = "/pub/caf%C3%A9.bin"
    let nfdPath = "/pub/cafe%CC%81.bin"
    fixture.server.route("/pub/", HostileReviewTests.listing(["caf%C3%A9.bin", "cafe%CC%81.bin"]))
    fixture.server.route(nfcPath, .text("composed\n"))
    fixture.server.route(nfdPath, .text("decomposed\n"))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          dest: out
          tasks:
            - index: BASE/pub/
              to: m/
      """)
    let first = try fixture.run()
    #expect(first.status == 0, "\(first.stderr)")
    #expect(fixture.holds("out/m/" + nfc, Array("composed\n".utf8)))
    #expect(fixture.holds("out/m/" + nfd, Array("decomposed\n".utf8)))
    fixture.folder.write("first.json", fixture.folder.read("report.json") ?? "")
    fixture.server.route(nfcPath, .status(404))
    let second = try fixture.run(["--refresh"])
    #expect(second.status == 1, "\(second.stderr)")
    // The report orders the twins by String comparison, which does not order them: each order of
    // the new report's tasks must give the regression.
    let data = Data((fixture.folder.read("report.json") ?? "").utf8)
    var object = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    for (name, reversed) in [("same.json", false), ("reversed.json", true)] {
      let tasks = object["tasks"] as? [[String: Any]] ?? []
      object["tasks"] = reversed ? Array(tasks.reversed()) : tasks
      let text = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
      fixture.folder.write(name, text)
      for old in ["first.json"] {
        let diff = try BinaryRunner.run(["report", "diff", old, name], in: fixture.folder.path)
        #expect(diff.status == 1, "\(name): \(diff.stdout)")
        #expect(diff.stdout.contains("regression: failure"), "\(name): \(diff.stdout)")
      }
    }
  }
}
