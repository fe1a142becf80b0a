import Foundation
import TestServer
import TestSupport
import Testing

/// `prune:` beside `index:`, against a real nginx with `autoindex on`: files removed upstream go,
/// a shrunken listing (an upstream in the middle of an update) passes `max_delete` and deletes
/// nothing, and a listing that cannot be read deletes nothing either.
@Suite(.serialized) struct PruneIndexTests {
  @Test func aListingDrivesPruneAndItsGuards() throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer(autoindex: [.init(location: "/release/", folder: "release")])
    defer { nginx.stop() }
    let names = (0..<10).map { "file-\($0).txt" }
    for name in names { nginx.put("release/" + name, Array("\(name)\n".utf8)) }
    fixture.trustCA(of: nginx)
    fixture.manifest(
      """
      version: 1
      sessions:
        mirror:
          dest: out
          tls: {ca_file: ca.pem}
          retry: {attempts: 1}
          prune: {max_delete: "50%"}
          tasks:
            - index: \(nginx.url("/release/"))
              to: release/
      """)
    var result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    for name in names { #expect(fixture.folder.read("out/release/" + name) == "\(name)\n") }

    // The listing shrinks to 2 of its 10 files: 8 would go, more than 50%.
    for name in names.dropFirst(2) { unlink(nginx.root + "/release/" + name) }
    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path)
    #expect(plan.stdout.contains("fail with prune-limit"), "\(plan.stdout)\(plan.stderr)")
    result = try fixture.run()
    #expect(result.status == 6, "\(result.stderr)")
    for name in names { #expect(fixture.folder.read("out/release/" + name) == "\(name)\n") }

    // Upstream is whole again but for one file: that one goes.
    for name in names.dropFirst(2).dropLast() { nginx.put("release/" + name, Array("\(name)\n".utf8)) }
    result = try fixture.run()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(fixture.folder.read("out/release/file-9.txt") == nil)
    let report =
      try JSONSerialization.jsonObject(with: Data((fixture.folder.read("report.json") ?? "").utf8)) as? [String: Any]
    #expect(report?["pruned"] as? [String] == ["out/release/file-9.txt"], "\(report ?? [:])")

    // The listing cannot be read now (404): the run falls back on its stored copy, which may be
    // stale, so nothing is deleted.
    try FileManager.default.removeItem(atPath: nginx.root + "/release")
    result = try fixture.run()
    let skipped =
      try JSONSerialization.jsonObject(with: Data((fixture.folder.read("report.json") ?? "").utf8)) as? [String: Any]
    let prune = (skipped?["prune"] as? [[String: Any]])?.first
    #expect(prune?["outcome"] as? String == "skipped", "\(skipped ?? [:])")
    #expect((prune?["reason"] as? String)?.contains("/release/") == true, "\(prune ?? [:])")
    for name in names.dropLast() { #expect(fixture.folder.read("out/release/" + name) == "\(name)\n") }
    #expect(result.stderr.contains("prune skipped"), "\(result.stderr)")
  }
}
