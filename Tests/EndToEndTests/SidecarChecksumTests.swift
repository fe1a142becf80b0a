import Crypto
import Foundation
import TestServer
import TestSupport
import Testing

/// Issue 38, items 1 and 2: `unlisted:` beside `checksums:` (fail, fetch, skip) and sidecar
/// checksum files and signatures (`checksums: sidecar`, `signature: sidecar`), run end to end.
@Suite(.serialized) struct SidecarChecksumTests {
  static func sha256(_ text: String) -> String { SHA256Digest.hex(Array(text.utf8)) }

  static func report(_ fixture: RunFixture) throws -> [String: Any] {
    let data = Data((fixture.folder.read("report.json") ?? "").utf8)
    return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
  }

  /// Item 1 on an `index:` entry: `SHA256SUMS` lists `a.txt` only; `b.txt` gets what `unlisted:`
  /// says. With `fail` (the default) its hint is one an index can follow (no `sha256:`).
  @Test(arguments: ["fail", "fetch", "skip", "default"])
  func aFileTheChecksumFileDoesNotListGetsWhatUnlistedSays(_ value: String) throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer(autoindex: [.init(location: "/pub/", folder: "pub")])
    defer { nginx.stop() }
    nginx.put("pub/a.txt", Array("alpha\n".utf8))
    nginx.put("pub/b.txt", Array("beta\n".utf8))
    nginx.put("pub/SHA256SUMS", Array("\(Self.sha256("alpha\n"))  a.txt\n".utf8))
    fixture.trustCA(of: nginx)
    fixture.manifest(
      """
      version: 1
      sessions:
        mirror:
          dest: out
          tls: {ca_file: ca.pem}
          tasks:
            - index: \(nginx.url("/pub/"))
              exclude: [SHA256SUMS]
              checksums: \(nginx.url("/pub/SHA256SUMS"))
      \(value == "default" ? "" : "        unlisted: \(value)")
      """)
    let outcome = try fixture.run()
    let tasks = try fixture.tasks()
    #expect(fixture.holds("out/a.txt", Array("alpha\n".utf8)))
    #expect(tasks["out/a.txt"]?["verified"] == nil, "\(tasks)")
    switch value {
    case "fetch":
      #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
      #expect(fixture.holds("out/b.txt", Array("beta\n".utf8)))
      #expect(tasks["out/b.txt"]?["outcome"] as? String == "completed", "\(tasks)")
      #expect(tasks["out/b.txt"]?["verified"] as? Bool == false, "\(tasks)")
      // `plan` says so before the run, from the stored copy.
      let plan = try BinaryRunner.run(["plan", "manifest.yaml", "--offline"], in: fixture.folder.path)
      let line = plan.stdout.split(separator: "\n").first { $0.contains("/pub/b.txt") } ?? ""
      #expect(line.contains("no upstream digest (unlisted: fetch)"), "\(plan.stdout)\(plan.stderr)")
    case "skip":
      #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
      #expect(tasks["out/b.txt"] == nil, "\(tasks)")
      #expect(nginx.requests(for: "/pub/b.txt").isEmpty)
      #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/out/b.txt"))
    default:
      #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)")
      let error = tasks["out/b.txt"]?["error"] as? [String: Any]
      #expect(error?["code"] as? String == "checksum-missing", "\(tasks)")
      let message = error?["message"] as? String ?? ""
      #expect(message.contains("unlisted: fetch") && message.contains("unlisted: skip"), "\(message)")
      #expect(!message.contains("sha256: to the task"), "\(message)")
      #expect(!outcome.stderr.contains("sha256: to the task"), "\(outcome.stderr)")
      #expect(nginx.requests(for: "/pub/b.txt").isEmpty)
    }
  }

  /// `unlisted:` takes fail, fetch or skip, reported where it is written.
  @Test func anUnknownUnlistedValueIsAManifestError() throws {
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          checksums: BASE/SHA256SUMS
          unlisted: fecth
          tasks:
            - download: BASE/a.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 2, "\(outcome.stdout)\(outcome.stderr)")
    #expect(outcome.stderr.contains("manifest.yaml:5:"), "\(outcome.stderr)")
    #expect(outcome.stderr.contains("did you mean 'fetch'"), "\(outcome.stderr)")
  }

  /// Item 2, the issue's trial: a tree of 150 files, 30 of them `.sha256` sidecars of the 120
  /// others. Each of the 30 covered files is checked against its own sidecar; the 90 without one
  /// are fetched (`unlisted: fetch`) and marked unverified; the sidecars are mirrored too. The
  /// listing says which sidecars exist: no `.sha512` is asked for. A second night asks for each
  /// sidecar conditionally (304).
  @Test func aTreeWithSidecarsIsCheckedFileByFile() throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer(autoindex: [.init(location: "/pub/", folder: "pub")])
    defer { nginx.stop() }
    for number in 0..<120 {
      let folder = number < 60 ? "pub/iso" : "pub/src"
      let text = "file \(number)\n"
      nginx.put("\(folder)/f\(number).bin", Array(text.utf8))
      if number % 4 == 0 {
        // GNU, BSD and bare-hash forms.
        let sidecar: String
        switch number % 3 {
        case 0: sidecar = "\(Self.sha256(text))  f\(number).bin\n"
        case 1: sidecar = "SHA256 (f\(number).bin) = \(Self.sha256(text))\n"
        default: sidecar = "\(Self.sha256(text))\n"
        }
        nginx.put("\(folder)/f\(number).bin.sha256", Array(sidecar.utf8))
      }
    }
    fixture.trustCA(of: nginx)
    fixture.manifest(
      """
      version: 1
      sessions:
        mirror:
          dest: out
          tls: {ca_file: ca.pem}
          tasks:
            - index: \(nginx.url("/pub/"))
              depth: 2
              checksums: sidecar
              unlisted: fetch
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
    let tasks = try fixture.tasks()
    #expect(tasks.count == 150, "\(tasks.keys.sorted())")
    var verified = 0
    var unverified = 0
    for number in 0..<120 {
      let id = "out/\(number < 60 ? "iso" : "src")/f\(number).bin"
      #expect(tasks[id]?["outcome"] as? String == "completed", "\(id): \(tasks[id] ?? [:])")
      if tasks[id]?["verified"] as? Bool == false { unverified += 1 } else { verified += 1 }
    }
    #expect(verified == 30 && unverified == 90)
    #expect(nginx.requests().allSatisfy { !$0.uri.hasSuffix(".sha512") })
    let descriptors = try Self.report(fixture)["descriptors"] as? [[String: Any]] ?? []
    #expect(descriptors.filter { ($0["url"] as? String ?? "").hasSuffix(".sha256") }.count == 30, "\(descriptors)")

    let again = try fixture.run()
    #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
    let second = try Self.report(fixture)["descriptors"] as? [[String: Any]] ?? []
    let sidecars = second.filter { ($0["url"] as? String ?? "").hasSuffix(".sha256") }
    #expect(sidecars.count == 30 && sidecars.allSatisfy { $0["outcome"] as? String == "not-modified" }, "\(second)")
  }

  /// A sidecar whose hash is not the file's: `checksum-mismatch`, nothing placed. A file with no
  /// `.sha256` (404) is checked with its `.sha512` (BSD form).
  @Test func aWrongSidecarPlacesNothing() throws {
    let fixture = try RunFixture()
    fixture.server.route("/pub/a.bin", .file(.version(1, length: 1000)))
    fixture.server.route(
      "/pub/a.bin.sha256", .file(FileResource(body: Array("\(Self.sha256("something else"))  a.bin\n".utf8))))
    fixture.server.route("/pub/b.bin", .file(.version(2, length: 1000)))
    let two = FileResource.versionBytes(2, length: 1000)
    fixture.server.route(
      "/pub/b.bin.sha512", .file(FileResource(body: Array("SHA512 (b.bin) = \(SHA512Hex.hex(two))\n".utf8))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          checksums: sidecar
          tasks:
            - download: BASE/pub/a.bin
            - download: BASE/pub/b.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)")
    let tasks = try fixture.tasks()
    #expect((tasks["a.bin"]?["error"] as? [String: Any])?["code"] as? String == "checksum-mismatch", "\(tasks)")
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/a.bin"))
    #expect(fixture.holds("b.bin", two), "\(tasks)")
    #expect(tasks["b.bin"]?["verified"] == nil)
  }

  /// A download without a sidecar (`.sha256` and `.sha512` both 404) gets what `unlisted:` says.
  @Test(arguments: ["fail", "fetch", "skip"])
  func aMissingSidecarFollowsUnlisted(_ value: String) throws {
    let fixture = try RunFixture()
    fixture.server.route("/pub/a.bin", .file(.version(1, length: 1000)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          checksums: sidecar
          unlisted: \(value)
          tasks:
            - download: BASE/pub/a.bin
      """)
    let outcome = try fixture.run()
    let tasks = try fixture.tasks()
    #expect(!fixture.server.requests(for: "/pub/a.bin.sha256").isEmpty)
    #expect(!fixture.server.requests(for: "/pub/a.bin.sha512").isEmpty)
    switch value {
    case "fetch":
      #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
      #expect(fixture.holds("a.bin", FileResource.versionBytes(1, length: 1000)))
      #expect(tasks["a.bin"]?["verified"] as? Bool == false, "\(tasks)")
      // Offline, with no sidecar stored, `plan` says the file is not checked.
      let plan = try BinaryRunner.run(["plan", "manifest.yaml", "--offline"], in: fixture.folder.path)
      #expect(plan.stderr.contains("no stored copy of the sidecar checksum files"), "\(plan.stdout)\(plan.stderr)")
    case "skip":
      #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
      #expect(tasks["a.bin"] == nil, "\(tasks)")
      #expect(fixture.server.requests(for: "/pub/a.bin").isEmpty)
    default:
      #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)")
      let error = tasks["a.bin"]?["error"] as? [String: Any]
      #expect(error?["code"] as? String == "checksum-missing", "\(tasks)")
      let message = error?["message"] as? String ?? ""
      #expect(message.contains("sha256:") && message.contains("unlisted: fetch"), "\(message)")
      #expect(fixture.server.requests(for: "/pub/a.bin").isEmpty)
    }
  }

  /// `signature: sidecar`: `a.bin.asc` made by the keyring's key lets `a.bin` in; `b.bin.asc` made
  /// by another key fails `b.bin` with `signature` after its download, and nothing is placed.
  @Test func aDetachedSidecarSignatureIsCheckedBeforePlacement() throws {
    let keys = try OpenPGPKeys()
    let fixture = try RunFixture()
    let textOne = String(repeating: "release one\n", count: 100)
    let textTwo = String(repeating: "release two\n", count: 100)
    let one = Array(textOne.utf8)
    let two = Array(textTwo.utf8)
    for (name, bytes) in [("a.bin", one), ("b.bin", two)] {
      fixture.server.route("/pub/\(name)", .file(FileResource(body: bytes)))
      fixture.server.route(
        "/pub/\(name).sha256", .file(FileResource(body: Array("\(SHA256Digest.hex(bytes))  \(name)\n".utf8))))
    }
    let good = try keys.signDetached("a.bin", textOne, extra: ["--armor"])
    let bad = try keys.signDetached("b.bin", textTwo, as: [OpenPGPKeys.other], extra: ["--armor"])
    fixture.server.route(
      "/pub/a.bin.asc", .file(FileResource(body: Array(FileManager.default.contents(atPath: good.signature)!))))
    fixture.server.route(
      "/pub/b.bin.asc", .file(FileResource(body: Array(FileManager.default.contents(atPath: bad.signature)!))))
    _ = try? FileManager.default.copyItem(atPath: keys.keyring, toPath: fixture.folder.path + "/release.gpg")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          checksums: sidecar
          signature: sidecar
          keyring: release.gpg
          tasks:
            - download: BASE/pub/a.bin
            - download: BASE/pub/b.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)")
    let tasks = try fixture.tasks()
    #expect(fixture.holds("a.bin", one), "\(tasks)")
    #expect((tasks["b.bin"]?["error"] as? [String: Any])?["code"] as? String == "signature", "\(tasks)")
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/b.bin"))
    #expect(fixture.server.requests(for: "/pub/a.bin.sig").isEmpty)
  }
}

/// SHA-512 in hexadecimal, for sidecars that give it.
enum SHA512Hex {
  static func hex(_ bytes: [UInt8]) -> String { SHA512.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }
}
