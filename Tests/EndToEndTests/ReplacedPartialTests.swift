import BatchDL
import Foundation
import TestServer
import Testing

/// The bytes placed are the bytes checked: a partial file that another process replaces while
/// the download writes into the one it opened is never renamed into place.
@Suite(.serialized) struct ReplacedPartialTests {
  @Test(arguments: [1, 3])
  func aPartialFileReplacedDuringTheDownloadIsNotPlaced(segments: Int) throws {
    let fixture = try RunFixture()
    let length = 2 << 20
    let body = FileResource.versionBytes(1, length: length)
    fixture.server.route(
      "/r.bin",
      .file(FileResource(body: body, etag: .strong("r"), trickle: Trickle(chunkBytes: 16 << 10, interval: 0.04))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          network: {segments: \(segments), min_segment_size: 256KB}
          tasks:
            - download: BASE/r.bin
              to: r.bin
              sha256: \(SHA256Digest.hex(body))
      """)
    let process = try fixture.start(["--report", "report.json"])
    let partial = fixture.folder.path + "/r.bin.batchdl-part"
    func written() -> Int { (try? FileManager.default.attributesOfItem(atPath: partial)[.size] as? Int) ?? 0 }
    let deadline = Date().addingTimeInterval(60)
    while Date() < deadline, written() < 100_000 { usleep(10_000) }
    guard written() >= 100_000 else {
      process.waitUntilExit()
      Issue.record("the download never wrote 100 KB into its partial file")
      return
    }
    // Another process puts its own file at the partial path.
    let foreign = fixture.folder.write("foreign", String(repeating: "x", count: 1000))
    #expect(rename(foreign, partial) == 0)
    process.waitUntilExit()
    #expect(process.terminationStatus == 1)
    #expect(!fixture.folder.exists("r.bin"), "the foreign file was placed")
    #expect(fixture.folder.read("r.bin.batchdl-part") == String(repeating: "x", count: 1000), "it is left as it is")
    let task = try fixture.tasks()["r.bin"]
    #expect((task?["error"] as? [String: Any])?["code"] as? String == "write", "\(task ?? [:])")
  }
}
