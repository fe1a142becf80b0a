import Foundation
import Testing

@testable import BatchDL

/// Where a request's mirrors come from: the task's `mirrors:`, the session's prefix map, and the
/// union over tasks that share the request.
@Suite struct MirrorPlanTests {
  @Test func aDownloadHasItsMirrorsAndThoseOfTheSessionMapInOrder() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          mirrors:
            "https://ftp.example.org/pub/": ["https://m1.example.net/pub/", "http://m2.example.net/mirror/"]
          tasks:
            - download: https://ftp.example.org/pub/iso/a.iso
              mirrors: [https://backup.example.com/a.iso]
            - download: https://other.example.org/b.bin
      """)
    let a = try #require(planned.request("https://ftp.example.org/pub/iso/a.iso"))
    #expect(
      a.mirrors.map(planned.plan.text.string) == [
        "https://backup.example.com/a.iso", "https://m1.example.net/pub/iso/a.iso",
        "http://m2.example.net/mirror/iso/a.iso",
      ])
    let b = try #require(planned.request("https://other.example.org/b.bin"))
    #expect(b.mirrors.isEmpty)
    #expect(planned.text().contains("    mirror https://m1.example.net/pub/iso/a.iso\n"))
    #expect(planned.json().contains("\"mirrors\":[\"https://backup.example.com/a.iso\""))
  }

  @Test func tasksSharingARequestBringTheUnionOfTheirMirrors() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://h.test/a.bin
              to: one/a.bin
              mirrors: [https://m1.test/a.bin, https://m2.test/a.bin]
            - download: https://h.test/a.bin
              to: two/a.bin
              mirrors: [https://m2.test/a.bin, https://M3.test/a.bin]
      """)
    let request = try #require(planned.request("https://h.test/a.bin"))
    #expect(
      request.mirrors.map(planned.plan.text.string) == [
        "https://m1.test/a.bin", "https://m2.test/a.bin", "https://m3.test/a.bin",
      ])
  }

  @Test func fortyThousandMirrorsPlanInLinearTime() throws {
    // Each mirror was compared with every one before it: 800 million comparisons.
    let count = 40_000
    var yaml = "version: 1\nsessions:\n  s:\n    tasks:\n      - download: https://h.test/a.bin\n        mirrors:\n"
    for index in 0..<count { yaml += "          - https://m\(index).test/a.bin\n" }
    yaml += "          - https://m7.test/a.bin\n          - https://h.test/a.bin\n"
    // A second task sharing the request brings one more mirror and repeats one.
    yaml += "      - download: https://h.test/a.bin\n        to: two/a.bin\n"
    yaml += "        mirrors: [https://m39999.test/a.bin, https://extra.test/a.bin]\n"
    let planned = try planned(yaml)
    let request = try #require(planned.request("https://h.test/a.bin"))
    let mirrors = request.mirrors.map(planned.plan.text.string)
    #expect(mirrors.count == count + 1)
    #expect(mirrors.first == "https://m0.test/a.bin")
    #expect(mirrors.last == "https://extra.test/a.bin")
  }

  @Test func listLinesGetTheSessionMap() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          mirrors:
            "http://127.0.0.1:8080/": ["http://127.0.0.1:8081/"]
          tasks:
            - list: urls.txt
      """, files: ["urls.txt": "http://127.0.0.1:8080/d/a.bin\nhttp://elsewhere.test/b.bin\n"])
    #expect(
      try #require(planned.request("http://127.0.0.1:8080/d/a.bin")).mirrors.map(planned.plan.text.string) == [
        "http://127.0.0.1:8081/d/a.bin"
      ])
    #expect(try #require(planned.request("http://elsewhere.test/b.bin")).mirrors.isEmpty)
  }

  @Test func aManifestWithoutMirrorsListsAsBefore() throws {
    let planned = try planned(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://h.test/a.bin
      """)
    #expect(!planned.text().contains("mirror"))
    #expect(!planned.json().contains("mirrors"))
  }
}
