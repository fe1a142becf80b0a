import Foundation
import TestServer
import TestSupport
import Testing

/// `preserve_mtime`: a placed file takes the server's `Last-Modified` (by default), whichever way
/// its bytes reached the disk, and a run that leaves a file unchanged leaves its time alone.
@Suite struct ModificationTimeTests {
  /// 2021-03-04 05:06:07 GMT.
  static let published = Date(timeIntervalSince1970: 1_614_834_367)

  static func modified(_ fixture: RunFixture, _ name: String) -> Int? {
    let attributes = try? FileManager.default.attributesOfItem(atPath: fixture.folder.path + "/" + name)
    return (attributes?[.modificationDate] as? Date).map { Int($0.timeIntervalSince1970) }
  }

  static func serve(_ fixture: RunFixture) {
    // A small body (kept in memory, linked into place), a large one (a partial file renamed into
    // place, and a copy for a second task of the same request), and one without Last-Modified.
    fixture.server.route(
      "/small.txt", .file(FileResource(body: Array("small".utf8), etag: .strong("s"), lastModified: published)))
    fixture.server.route(
      "/large.bin",
      .file(
        FileResource(
          body: FileResource.versionBytes(1, length: 300_000), etag: .strong("l"), lastModified: published)))
    fixture.server.route("/undated.txt", .file(FileResource(body: Array("undated".utf8), etag: .strong("u"))))
  }

  @Test func placedFilesTakeTheServersLastModified() throws {
    let fixture = try RunFixture()
    Self.serve(fixture)
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/small.txt
            - download: BASE/large.bin
            - download: BASE/large.bin
              to: copy/large.bin
            - download: BASE/undated.txt
            - download: BASE/small.txt
              to: own/small.txt
              preserve_mtime: false
      """)
    let started = Int(Date().timeIntervalSince1970) - 1
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    let expected = Int(Self.published.timeIntervalSince1970)
    #expect(Self.modified(fixture, "small.txt") == expected)
    #expect(Self.modified(fixture, "large.bin") == expected)
    #expect(Self.modified(fixture, "copy/large.bin") == expected)
    #expect((Self.modified(fixture, "undated.txt") ?? 0) >= started)
    #expect((Self.modified(fixture, "own/small.txt") ?? 0) >= started)

    // Unchanged: nothing is asked, nothing is touched, and the recorded times still match (a file
    // whose time differs from the record would be fetched again).
    fixture.server.clearLog()
    let again = try fixture.run()
    #expect(again.status == 0, "\(again.stderr)")
    #expect(fixture.server.requests(for: "/small.txt").isEmpty && fixture.server.requests(for: "/large.bin").isEmpty)
    #expect(Self.modified(fixture, "large.bin") == expected)
    let status = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path)
    #expect(status.status == 0, "\(status.stdout)\(status.stderr)")
  }

  @Test func aSessionCanKeepTheDownloadTime() throws {
    let fixture = try RunFixture()
    Self.serve(fixture)
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          preserve_mtime: false
          tasks:
            - download: BASE/large.bin
            - download: BASE/small.txt
              preserve_mtime: true
      """)
    let started = Int(Date().timeIntervalSince1970) - 1
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect((Self.modified(fixture, "large.bin") ?? 0) >= started)
    #expect(Self.modified(fixture, "small.txt") == Int(Self.published.timeIntervalSince1970))
  }

  @Test func aValueThatIsNoBooleanIsAnError() throws {
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          preserve_mtime: sometimes
          tasks:
            - download: BASE/small.txt
      """)
    let outcome = try BinaryRunner.run(["validate", "manifest.yaml"], in: fixture.folder.path)
    #expect(outcome.status == 2)
    #expect(outcome.stderr.contains("manifest.yaml:4:"), "\(outcome.stderr)")
    #expect(outcome.stderr.contains("preserve_mtime"), "\(outcome.stderr)")
  }
}
