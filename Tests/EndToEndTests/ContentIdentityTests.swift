import Foundation
import TestServer
import Testing

@Suite struct ContentIdentityTests {
  @Test func twoDownloadsOfOneContentAreFetchedOnce() throws {
    let fixture = try RunFixture()
    let body = FileResource.versionBytes(3, length: 50_000)
    fixture.server.route("/a/x.bin", .file(.version(3, length: 50_000)))
    fixture.server.route("/b/x.bin", .file(.version(3, length: 50_000)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/a/x.bin
              to: one/x.bin
              sha256: \(SHA256Digest.hex(body))
            - download: BASE/b/x.bin
              to: two/x.bin
              sha256: \(SHA256Digest.hex(body))
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("one/x.bin", body) && fixture.holds("two/x.bin", body))
    #expect(fixture.server.stats(for: "/a/x.bin").requests + fixture.server.stats(for: "/b/x.bin").requests == 1)
    let tasks = try fixture.tasks()
    #expect(tasks["two/x.bin"]?["source"] as? String == "duplicate")
    #expect(try fixture.summary()["requests"] as? Int == 1)
  }

  /// A wrong `size:` on the first of two tasks sharing a SHA-256 set both sources aside and failed
  /// both tasks; in either order, only the task with the wrong size fails.
  @Test(arguments: [true, false])
  func aWrongSizeOnOneOfTwoTasksOfOneContentFailsOnlyThatTask(wrongFirst: Bool) throws {
    let fixture = try RunFixture()
    let body = FileResource.versionBytes(3, length: 50_000)
    fixture.server.route("/a/x.bin", .file(.version(3, length: 50_000)))
    fixture.server.route("/b/x.bin", .file(.version(3, length: 50_000)))
    let sizes = wrongFirst ? (49_999, 50_000) : (50_000, 49_999)
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          tasks:
            - download: BASE/a/x.bin
              to: one/x.bin
              size: \(sizes.0)
              sha256: \(SHA256Digest.hex(body))
            - download: BASE/b/x.bin
              to: two/x.bin
              size: \(sizes.1)
              sha256: \(SHA256Digest.hex(body))
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    let (wrong, right) = wrongFirst ? ("one/x.bin", "two/x.bin") : ("two/x.bin", "one/x.bin")
    #expect(fixture.holds(right, body))
    #expect(!fixture.folder.exists(wrong))
    let tasks = try fixture.tasks()
    #expect(tasks[right]?["outcome"] as? String == "completed", "\(tasks)")
    #expect((tasks[wrong]?["error"] as? [String: Any])?["code"] as? String == "size-mismatch", "\(tasks)")
  }
}
