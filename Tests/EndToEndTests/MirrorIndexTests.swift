import Crypto
import Foundation
import TestServer
import TestSupport
import Testing

/// `index:` and `checksums:` run against a real nginx with `autoindex on` over HTTPS: the listing
/// is crawled, every file is checked against the checksum file, the mirrored checksum file is
/// placed last, and an unchanged re-run sends only the descriptors' conditional requests.
@Suite(.serialized) struct MirrorIndexTests {
  static let tree: [String: String] = [
    "release/a.txt": "alpha\n",
    "release/sub/b.txt": "bravo bravo\n",
    "release/sub/deeper/c.txt": "charlie charlie charlie\n",
    "release/sub/with space.txt": "spaced\n",
  ]

  static func sums(_ files: [String: String], folder: String = "release/", wrong: String? = nil) -> String {
    files.keys.sorted().map { path in
      let relative = String(path.dropFirst(folder.count))
      let hash =
        relative == wrong ? String(repeating: "0", count: 64) : SHA256Digest.hex(Array((files[path] ?? "").utf8))
      return "\(hash)  \(relative)\n"
    }.joined()
  }

  static func serve(_ files: [String: String], on nginx: NginxServer, sums: String? = nil) {
    for (path, text) in files { nginx.put(path, Array(text.utf8)) }
    nginx.put("release/SHA256SUMS", Array((sums ?? Self.sums(files)).utf8))
  }

  static func manifest(
    _ fixture: RunFixture, _ nginx: NginxServer, extra: String = "", session: String = "", depth: Int = 3
  ) {
    fixture.trustCA(of: nginx)
    fixture.manifest(
      """
      version: 1
      sessions:
        mirror:
          dest: out
          tls: {ca_file: ca.pem}
      \(session)
          tasks:
            - index: \(nginx.url("/release/"))
              depth: \(depth)
              to: release/
              checksums: \(nginx.url("/release/SHA256SUMS"))
      \(extra)
      """)
  }

  @Test func anIndexMirrorsTheTreeAndPlacesTheChecksumFileLast() throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer(autoindex: [.init(location: "/release/", folder: "release")])
    defer { nginx.stop() }
    Self.serve(Self.tree, on: nginx)
    Self.manifest(fixture, nginx)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    for (path, text) in Self.tree {
      #expect(fixture.holds("out/" + path, Array(text.utf8)), "\(path)")
    }
    #expect(fixture.holds("out/release/SHA256SUMS", Array(Self.sums(Self.tree).utf8)))
    let tasks = try fixture.tasks()
    #expect(tasks["out/release/sub/deeper/c.txt"]?["outcome"] as? String == "completed", "\(tasks)")
    // The mirrored checksum file is fetched after every file it lists is in place.
    let fileRequests = nginx.requests().filter { !$0.uri.hasSuffix("/") }
    let sumsAt = fileRequests.lastIndex { $0.uri == "/release/SHA256SUMS" }
    #expect(sumsAt == fileRequests.count - 1, "\(fileRequests.map(\.uri))")
    // The report lists the folder pages and the checksum file as descriptors.
    let report =
      try JSONSerialization.jsonObject(with: Data((fixture.folder.read("report.json") ?? "").utf8)) as? [String: Any]
    let descriptors = (report?["descriptors"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String }
    #expect(descriptors.contains(nginx.url("/release/sub/deeper/")), "\(descriptors)")
    #expect(descriptors.contains(nginx.url("/release/SHA256SUMS")), "\(descriptors)")

    // Unchanged: only the descriptors' requests, the checksum file's conditional (304). nginx's
    // autoindex pages carry no validator, so they come whole; no file is asked for.
    let before = nginx.requests().count
    let again = try fixture.run()
    #expect(again.status == 0, "\(again.stderr)")
    let rerun = Array(nginx.requests().dropFirst(before))
    let shown = rerun.map { "\($0.uri) \($0.status)" }
    #expect(
      Set(rerun.map(\.uri)) == ["/release/", "/release/sub/", "/release/sub/deeper/", "/release/SHA256SUMS"], "\(shown)"
    )
    #expect(rerun.count == 4, "\(shown)")
    #expect(rerun.first { $0.uri == "/release/SHA256SUMS" }?.status == 304, "\(shown)")
    #expect(try fixture.tasks().values.allSatisfy { $0["outcome"] as? String == "unchanged" })
  }

  @Test func aFileWhoseListingChangedIsFetchedAgainWithoutRefresh() throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer(autoindex: [.init(location: "/release/", folder: "release")])
    defer { nginx.stop() }
    Self.serve(Self.tree, on: nginx)
    Self.manifest(fixture, nginx)
    #expect(try fixture.run().status == 0)
    var changed = Self.tree
    changed["release/sub/b.txt"] = "bravo, version two, longer\n"
    Self.serve(changed, on: nginx)
    // nginx's validators are the mtime (to the second) and size: a later mtime, as a real update has.
    for path in ["release/sub/b.txt", "release/SHA256SUMS", "release/sub"] {
      var times = [timespec(tv_sec: time(nil) + 60, tv_nsec: 0), timespec(tv_sec: time(nil) + 60, tv_nsec: 0)]
      utimensat(AT_FDCWD, nginx.root + "/" + path, &times, 0)
    }
    let before = nginx.requests().count
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("out/release/sub/b.txt", Array(changed["release/sub/b.txt"]!.utf8)))
    #expect(fixture.holds("out/release/SHA256SUMS", Array(Self.sums(changed).utf8)))
    let fetched = nginx.requests().dropFirst(before).filter { $0.status == 200 && !$0.uri.hasSuffix("/") }.map(\.uri)
    #expect(Set(fetched) == ["/release/sub/b.txt", "/release/SHA256SUMS"], "\(fetched)")
  }

  @Test func aFileTheChecksumFileDoesNotListFailsAndTheChecksumFileIsNotPlaced() throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer(autoindex: [.init(location: "/release/", folder: "release")])
    defer { nginx.stop() }
    Self.serve(Self.tree, on: nginx)
    nginx.put("release/extra.txt", Array("not listed\n".utf8))
    Self.manifest(fixture, nginx)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    let tasks = try fixture.tasks()
    let error = tasks["out/release/extra.txt"]?["error"] as? [String: Any]
    #expect(error?["code"] as? String == "checksum-missing", "\(tasks)")
    let message = error?["message"] as? String ?? ""
    #expect(message.contains("extra.txt"), "\(message)")
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/out/release/extra.txt"))
    #expect(nginx.requests(for: "/release/extra.txt").isEmpty)
    // The others are checked and placed; the checksum file waits for every file it covers.
    #expect(fixture.holds("out/release/a.txt", Array("alpha\n".utf8)))
    let sums = tasks["out/release/SHA256SUMS"]?["error"] as? [String: Any]
    #expect(sums?["code"] as? String == "dependency", "\(tasks["out/release/SHA256SUMS"] ?? [:])")
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/out/release/SHA256SUMS"))
  }

  @Test func aFileWhoseBytesDisagreeWithTheChecksumFileIsNotPlaced() throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer(autoindex: [.init(location: "/release/", folder: "release")])
    defer { nginx.stop() }
    Self.serve(Self.tree, on: nginx, sums: Self.sums(Self.tree, wrong: "sub/b.txt"))
    Self.manifest(fixture, nginx)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    let tasks = try fixture.tasks()
    let error = tasks["out/release/sub/b.txt"]?["error"] as? [String: Any]
    #expect(error?["code"] as? String == "checksum-mismatch", "\(tasks)")
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/out/release/sub/b.txt"))
    #expect(fixture.holds("out/release/a.txt", Array("alpha\n".utf8)))
  }

  @Test func includeExcludeAndDepthChooseTheFiles() throws {
    let fixture = try RunFixture()
    let nginx = try NginxServer(autoindex: [.init(location: "/release/", folder: "release", format: .json)])
    defer { nginx.stop() }
    Self.serve(Self.tree, on: nginx)
    fixture.trustCA(of: nginx)
    fixture.manifest(
      """
      version: 1
      sessions:
        mirror:
          dest: out
          tls: {ca_file: ca.pem}
          tasks:
            - index: \(nginx.url("/release"))
              depth: 2
              include: ["*.txt"]
              exclude: ["with space.txt"]
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("out/a.txt", Array("alpha\n".utf8)))
    #expect(fixture.holds("out/sub/b.txt", Array("bravo bravo\n".utf8)))
    // depth 2: the folder and the folders it lists, not deeper.
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/out/sub/deeper/c.txt"))
    #expect(nginx.requests(for: "/release/sub/deeper/").isEmpty)
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/out/sub/with space.txt"))
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/out/SHA256SUMS"))
  }

  @Test func aListingThatCannotBeFetchedFailsOnlyItsEntry() throws {
    let fixture = try RunFixture()
    fixture.server.route("/ok.bin", .file(.version(1, length: 1000)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          tasks:
            - index: BASE/missing/
              to: m/
            - download: BASE/ok.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(fixture.holds("ok.bin", FileResource.versionBytes(1, length: 1000)))
    let tasks = try fixture.tasks()
    let failed = tasks.values.first { ($0["error"] as? [String: Any])?["code"] as? String == "descriptor" }
    #expect(failed != nil, "\(tasks)")
  }

  @Test func aChecksumFileThatCannotBeFetchedFailsTheFilesItCoversAndWritesNothing() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: 1000)))
    fixture.server.route("/b.bin", .file(.version(2, length: 1000)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          tasks:
            - download: BASE/a.bin
              checksums: BASE/SHA256SUMS
            - download: BASE/b.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    let tasks = try fixture.tasks()
    #expect((tasks["a.bin"]?["error"] as? [String: Any])?["code"] as? String == "descriptor", "\(tasks)")
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/a.bin"))
    #expect(fixture.server.requests.filter { $0.path == "/a.bin" }.isEmpty)
    #expect(fixture.holds("b.bin", FileResource.versionBytes(2, length: 1000)))
  }

  @Test func aLocalChecksumFileMatchesAListsFilesByDestination() throws {
    let fixture = try RunFixture()
    let one = FileResource.versionBytes(1, length: 1000)
    let two = FileResource.versionBytes(2, length: 1000)
    fixture.server.route("/x/a.bin", .file(.version(1, length: 1000)))
    fixture.server.route("/y/b.bin", .file(.version(2, length: 1000)))
    fixture.folder.write(
      "urls.txt",
      "BASE/x/a.bin pkg/a.bin\nBASE/y/b.bin pkg/b.bin\n".replacingOccurrences(
        of: "BASE", with: fixture.server.baseURL))
    // BSD tags, one SHA-512 and one SHA-256, by path relative to the session's dest.
    let sha512 = SHA512.hash(data: two).map { String(format: "%02x", $0) }.joined()
    fixture.folder.write(
      "SUMS", "SHA256 (pkg/a.bin) = \(SHA256Digest.hex(one))\nSHA512 (pkg/b.bin) = \(sha512)\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - list: urls.txt
              checksums: SUMS
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("pkg/a.bin", one))
    #expect(fixture.holds("pkg/b.bin", two))
    // A wrong SHA-512 fails the file.
    fixture.folder.write(
      "SUMS",
      "SHA256 (pkg/a.bin) = \(SHA256Digest.hex(one))\nSHA512 (pkg/b.bin) = \(String(repeating: "1", count: 128))\n")
    let again = try fixture.run()
    #expect(again.status == 1, "\(again.stderr)")
    let tasks = try fixture.tasks()
    #expect((tasks["pkg/b.bin"]?["error"] as? [String: Any])?["code"] as? String == "checksum-mismatch", "\(tasks)")
    #expect(fixture.holds("pkg/b.bin", two), "the file placed earlier stays")
  }

  @Test func aSignedChecksumFileIsCheckedWithGpgvAndABadSignatureFailsEveryFile() throws {
    let keys = try OpenPGPKeys()
    let fixture = try RunFixture()
    let one = FileResource.versionBytes(1, length: 1000)
    fixture.server.route("/pub/a.bin", .file(.version(1, length: 1000)))
    let sums = "\(SHA256Digest.hex(one))  a.bin\n"
    let signed = try keys.signDetached("SHA256SUMS", sums)
    fixture.server.route("/pub/SHA256SUMS", .file(FileResource(body: Array(sums.utf8))))
    fixture.server.route(
      "/pub/SHA256SUMS.sig", .file(FileResource(body: Array(FileManager.default.contents(atPath: signed.signature)!))))
    _ = try? FileManager.default.copyItem(atPath: keys.keyring, toPath: fixture.folder.path + "/release.gpg")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          checksums: BASE/pub/SHA256SUMS
          signature: BASE/pub/SHA256SUMS.sig
          keyring: release.gpg
          tasks:
            - download: BASE/pub/a.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("a.bin", one))

    // The same signature over other bytes: every file it covers fails, nothing is written.
    let tampered = "\(SHA256Digest.hex(FileResource.versionBytes(2, length: 1000)))  a.bin\n"
    fixture.server.route("/pub/SHA256SUMS", .file(FileResource(body: Array(tampered.utf8))))
    fixture.server.route("/pub/a.bin", .file(.version(2, length: 1000)))
    try? FileManager.default.removeItem(atPath: fixture.folder.path + "/a.bin")
    let bad = try fixture.run()
    #expect(bad.status == 1, "\(bad.stderr)")
    let tasks = try fixture.tasks()
    let error = tasks["a.bin"]?["error"] as? [String: Any]
    #expect(error?["code"] as? String == "signature", "\(tasks)")
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/a.bin"))

    // Signed by a key the keyring does not hold.
    let other = try keys.signDetached("OTHERSUMS", tampered, as: [OpenPGPKeys.other])
    fixture.server.route(
      "/pub/SHA256SUMS.sig", .file(FileResource(body: Array(FileManager.default.contents(atPath: other.signature)!))))
    let unknown = try fixture.run()
    #expect(unknown.status == 1)
    let again = try fixture.tasks()
    #expect((again["a.bin"]?["error"] as? [String: Any])?["code"] as? String == "signature", "\(again)")
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/a.bin"))
  }

  @Test func aClearSignedChecksumFileIsReadOnlyForWhatItsSignatureCovers() throws {
    let keys = try OpenPGPKeys()
    let fixture = try RunFixture()
    let one = FileResource.versionBytes(1, length: 1000)
    fixture.server.route("/pub/a.bin", .file(.version(1, length: 1000)))
    fixture.server.route("/pub/b.bin", .file(.version(2, length: 1000)))
    let clear = try keys.clearSign("SHA256SUMS", "\(SHA256Digest.hex(one))  a.bin\n")
    // A line outside the signed message is not believed.
    let extended = clear + "\(SHA256Digest.hex(FileResource.versionBytes(2, length: 1000)))  b.bin\n"
    fixture.server.route("/pub/SHA256SUMS.asc", .file(FileResource(body: Array(extended.utf8))))
    _ = try? FileManager.default.copyItem(atPath: keys.keyring, toPath: fixture.folder.path + "/release.gpg")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          checksums: BASE/pub/SHA256SUMS.asc
          keyring: release.gpg
          tasks:
            - download: BASE/pub/a.bin
            - download: BASE/pub/b.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(fixture.holds("a.bin", one))
    let tasks = try fixture.tasks()
    #expect((tasks["b.bin"]?["error"] as? [String: Any])?["code"] as? String == "checksum-missing", "\(tasks)")
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/b.bin"))
  }

  @Test func checksumsKeysAreCheckedWhereTheyAreWritten() throws {
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/a.bin
              checksums: [BASE/A.SUMS, BASE/B.SUMS]
              signature: BASE/A.SUMS.sig
              keyring: k.gpg
            - download: BASE/b.bin
              checksums: BASE/SUMS
              signature: BASE/SUMS.sig
            - index: BASE/pub/
              depth: 0
              include: ["**/*.iso"]
            - index: ftp://example.org/pub/
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 2, "\(outcome.stderr)")
    #expect(
      outcome.stderr.contains("manifest.yaml:7:20: error: signature: signs one checksum file"), "\(outcome.stderr)")
    #expect(outcome.stderr.contains("manifest.yaml:11:20: error: a signature is checked against a keyring"))
    #expect(outcome.stderr.contains("manifest.yaml:13:16: error: depth must be from 1"))
    #expect(outcome.stderr.contains("manifest.yaml:14:19: error: include pattern '**/*.iso' uses '**'"))
    #expect(outcome.stderr.contains("manifest.yaml:15:16: error: index takes the http or https URL"))
  }
}

/// Listings and checksum files from the network are hostile: they never choose a path outside
/// `to:`, never name batchdl's own files, and never send a secret to another origin.
@Suite(.serialized) struct HostileIndexTests {
  static func page(_ links: [String]) -> String {
    "<html><head><title>Index of /pub/</title></head><body><h1>Index of /pub/</h1><hr><pre>"
      + "<a href=\"../\">../</a>\n"
      + links.map { "<a href=\"\($0)\">\($0)</a>                01-Jan-2026 00:00     1000\n" }.joined()
      + "</pre><hr></body></html>\n"
  }

  @Test func linksThatLeaveTheFolderOrNameBatchdlsFilesAreNeverFetchedNorWritten() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    other.route("/steal", .file(.version(9, length: 10)))
    fixture.server.route("/pub/good.bin", .file(.version(1, length: 1000)))
    fixture.server.route("/secret.bin", .file(.version(3, length: 1000)))
    fixture.server.route("/pub/manifest.yaml", .file(.version(4, length: 1000)))
    fixture.server.route(
      "/pub/",
      .file(
        FileResource(
          text: Self.page([
            "good.bin", "../secret.bin", "/secret.bin", "%2e%2e/secret.bin", "..%2fsecret.bin",
            other.url("/steal"), "?C=N;O=D", "manifest.yaml", ".batchdl/state.db",
          ]), contentType: "text/html")))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          headers: {Authorization: "Bearer ${TOKEN}"}
          tasks:
            - index: BASE/pub/
      """)
    let outcome = try fixture.run(environment: ["TOKEN": "sekrit-token"])
    #expect(fixture.holds("good.bin", FileResource.versionBytes(1, length: 1000)), "\(outcome.stderr)")
    // Nothing outside the folder is asked for, and the other host sees nothing at all.
    let paths = fixture.server.requests.map(\.path)
    #expect(!paths.contains("/secret.bin"), "\(paths)")
    #expect(other.requests.isEmpty)
    // A listed name that is the manifest is refused, not written over it.
    let manifest = fixture.folder.read("manifest.yaml") ?? ""
    #expect(manifest.contains("index: "), "the manifest was overwritten")
    #expect(!paths.contains("/pub/manifest.yaml"), "\(paths)")
    #expect(!fixture.files().contains { $0.contains("secret") || $0.contains("steal") }, "\(fixture.files())")
    #expect(!outcome.stderr.contains("sekrit-token") && !(fixture.folder.read("report.json") ?? "").contains("sekrit"))
    let tasks = try fixture.tasks()
    let refused = tasks.values.filter { ($0["error"] as? [String: Any])?["code"] as? String == "unsafe-path" }
    #expect(!refused.isEmpty, "\(tasks.keys.sorted())")
    #expect(outcome.status == 1, "\(outcome.stderr)")
  }

  @Test func aListingWhoseNamesClashFailsOnlyThoseFilesNotTheManifest() throws {
    // `d` is a file and a folder; `x.bin` is what another task of the manifest writes.
    let fixture = try RunFixture()
    fixture.server.route(
      "/pub/", .file(FileResource(text: Self.page(["d", "d/", "x.bin", "ok.bin"]), contentType: "text/html")))
    fixture.server.route("/pub/d/", .file(FileResource(text: Self.page(["e.bin"]), contentType: "text/html")))
    for path in ["/pub/d", "/pub/d/e.bin", "/pub/x.bin", "/pub/ok.bin", "/x.bin"] {
      fixture.server.route(path, .file(.version(1, length: 100)))
    }
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/x.bin
            - index: BASE/pub/
              depth: 2
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(fixture.holds("ok.bin", FileResource.versionBytes(1, length: 100)), "\(outcome.stderr)")
    #expect(fixture.holds("x.bin", FileResource.versionBytes(1, length: 100)))
    let tasks = try fixture.tasks()
    let conflicts = tasks.filter { ($0.value["error"] as? [String: Any])?["code"] as? String == "conflict" }
    #expect(!conflicts.isEmpty, "\(tasks.keys.sorted())")
  }

  @Test func aChecksumFileAtAnotherOriginNeverGetsTheSessionsSecret() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    let one = FileResource.versionBytes(1, length: 1000)
    fixture.server.route("/a.bin", .file(.version(1, length: 1000)))
    other.route("/SUMS", .file(FileResource(text: "\(SHA256Digest.hex(one))  a.bin\n")))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: BASE/a.bin
              headers: {Authorization: "Bearer ${TOKEN}"}
              checksums: \(other.url("/SUMS"))
      """)
    let outcome = try fixture.run(environment: ["TOKEN": "sekrit-token"])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("a.bin", one))
    let sent = other.requests.first { $0.path == "/SUMS" }
    #expect(sent != nil)
    #expect(sent?.header("authorization") == nil, "the checksum file's host got the download's secret")
    #expect(fixture.server.requests.first { $0.path == "/a.bin" }?.header("authorization") == "Bearer sekrit-token")
  }
}

/// `plan` says which covered files will fail before anything is sent, and why.
@Suite struct ChecksumPlanTests {
  @Test func planShowsAFileWithoutAnEntryFailingChecksumMissing() throws {
    let fixture = try RunFixture()
    let one = FileResource.versionBytes(1, length: 1000)
    fixture.folder.write("SUMS", "\(SHA256Digest.hex(one))  a.bin\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          checksums: SUMS
          tasks:
            - download: BASE/a.bin
            - download: BASE/b.bin
      """)
    let text = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path)
    #expect(text.status == 0, "\(text.stderr)")
    #expect(text.stdout.contains("b.bin  (fails before it is sent: checksum-missing: "), "\(text.stdout)")
    #expect(!text.stdout.contains("a.bin  (fails"), "\(text.stdout)")
    let json = try BinaryRunner.run(["plan", "--json", "manifest.yaml"], in: fixture.folder.path)
    #expect(json.stdout.contains("\"fails\":{\"code\":\"checksum-missing\""), "\(json.stdout)")
    #expect(fixture.server.requests.isEmpty)
  }
}

/// `manifests/release-mirror.yaml`, the worked example of docs/mirroring.md, against the demo
/// server's signed release folder.
@Suite struct ReleaseMirrorExampleTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

  @Test func theExampleMirrorsTheSignedReleaseAndRefusesATamperedChecksumFile() throws {
    let fixture = try RunFixture()
    fixture.server.installDemoRoutes()
    let yaml = try String(contentsOfFile: Self.root + "/manifests/release-mirror.yaml", encoding: .utf8)
    fixture.folder.write(
      "release-mirror.yaml", yaml.replacingOccurrences(of: "http://127.0.0.1:8765", with: fixture.server.baseURL))
    try FileManager.default.copyItem(
      atPath: Self.root + "/manifests/release-keyring.gpg", toPath: fixture.folder.path + "/release-keyring.gpg")
    let run = {
      try BinaryRunner.run(["run", "release-mirror.yaml", "--report", "report.json"], in: fixture.folder.path)
    }
    let first = try run()
    #expect(first.status == 0, "\(first.stderr)")
    for file in DemoRoutes.releaseFiles {
      #expect(fixture.holds("release-mirror/release/" + file.path, Array(file.text.utf8)), "\(file.path)")
    }
    #expect(fixture.holds("release-mirror/release/SHA256SUMS", Array(DemoRoutes.releaseSums.utf8)))

    // Upstream's SHA256SUMS changes without a new signature: nothing it covers is fetched or written.
    let tampered = DemoRoutes.releaseSums.replacingOccurrences(of: "5e9630dc", with: "00000000")
    fixture.server.route("/release/SHA256SUMS", .text(tampered, etag: .strong("sums-2")))
    fixture.server.route("/release/README.txt", .text("a changed readme\n", etag: .strong("readme-2")))
    let before = fixture.server.requests.count
    let second = try run()
    #expect(second.status == 1, "\(second.stderr)")
    let tasks = try fixture.tasks()
    let code = (tasks["release-mirror/release/README.txt"]?["error"] as? [String: Any])?["code"] as? String
    #expect(code == "signature", "\(tasks)")
    #expect(fixture.holds("release-mirror/release/README.txt", Array("batchdl demo release 1.0\n".utf8)))
    #expect(fixture.holds("release-mirror/release/SHA256SUMS", Array(DemoRoutes.releaseSums.utf8)))
    let asked = fixture.server.requests.dropFirst(before).map(\.path)
    #expect(!asked.contains("/release/README.txt"), "\(asked)")
  }
}

/// `index:` over the listings of Apache (table and fancy) and lighttpd, as those servers served
/// them, from the test server.
@Suite struct OtherServerIndexTests {
  @Test(arguments: [
    ("apache-table", ListingFixtures.apacheTable), ("apache-fancy", ListingFixtures.apacheFancy),
    ("lighttpd", ListingFixtures.lighttpd),
  ])
  func theFilesOfAListingAreMirrored(name: String, page: ListingFixtures.Fixture) throws {
    let fixture = try RunFixture()
    fixture.server.route("/pub/", .file(FileResource(body: page.bytes, contentType: page.contentType)))
    let files = ["plain.txt": "plain\n", "with space.txt": "spaced\n", "mid.bin": "middle\n"]
    for (file, text) in files {
      fixture.server.route("/pub/" + file.replacingOccurrences(of: " ", with: "%20"), .text(text))
    }
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - index: BASE/pub/
              include: [plain.txt, "with space.txt", mid.bin]
              to: \(name)/
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(name): \(outcome.stderr)")
    for (file, text) in files {
      #expect(fixture.holds(name + "/" + file, Array(text.utf8)), "\(name): \(file)")
    }
    let asked = Set(fixture.server.requests.map(\.path))
    #expect(asked == ["/pub/", "/pub/plain.txt", "/pub/with%20space.txt", "/pub/mid.bin"], "\(name): \(asked)")
  }
}

/// An index's folder page that redirects to another origin: its links resolve against the page
/// where the redirect ended, and the session's secrets stay with the index's origin.
@Suite struct RedirectedIndexPageTests {
  @Test func aFolderPageRedirectedToAnotherHostListsFilesThere() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    fixture.server.route(
      "/pub/", .file(FileResource(text: HostileIndexTests.page(["a.bin", "sub/"]), contentType: "text/html")))
    fixture.server.route("/pub/a.bin", .file(.version(1, length: 1000)))
    fixture.server.route("/pub/sub/", .redirect(status: 302, location: other.url("/mirror/sub/")))
    other.route("/mirror/sub/", .file(FileResource(text: HostileIndexTests.page(["b.bin"]), contentType: "text/html")))
    other.route("/mirror/sub/b.bin", .file(.version(2, length: 1000)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          headers: {Authorization: "Bearer ${TOKEN}"}
          tasks:
            - index: BASE/pub/
              depth: 2
      """)
    let outcome = try fixture.run(environment: ["TOKEN": "sekrit-token"])
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("a.bin", FileResource.versionBytes(1, length: 1000)))
    #expect(fixture.holds("sub/b.bin", FileResource.versionBytes(2, length: 1000)), "\(fixture.files())")
    #expect(!fixture.server.requests.contains { $0.path == "/pub/sub/b.bin" }, "resolved against the first URL")
    #expect(other.requests.map(\.path).sorted() == ["/mirror/sub/", "/mirror/sub/b.bin"])
    #expect(other.requests.allSatisfy { $0.header("authorization") == nil }, "the other origin got the secret")
    #expect(fixture.server.requests.first { $0.path == "/pub/" }?.header("authorization") == "Bearer sekrit-token")
    // The stored copies keep where the redirect ended: a plan from them resolves the same way.
    let plan = try BinaryRunner.run(
      ["plan", "manifest.yaml", "--offline", "--json"], in: fixture.folder.path, environment: ["TOKEN": "t"])
    #expect(plan.status == 0, "\(plan.stderr)")
    #expect(plan.stdout.contains(other.url("/mirror/sub/b.bin")), "\(plan.stdout)")
  }
}
