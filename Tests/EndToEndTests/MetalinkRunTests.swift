import Crypto
import Foundation
import TestServer
import TestSupport
import Testing

/// `metalink:` entries run: each file of the document is a download with its sources, size and
/// digest; a document given by URL is fetched first, conditionally against the stored copy.
@Suite(.serialized) struct MetalinkRunTests {
  static let length = 50_000
  static let one = FileResource.versionBytes(1, length: length)
  static let two = FileResource.versionBytes(2, length: length)

  static func document(_ files: [(name: String, urls: [String], sha256: String?)]) -> String {
    var text = "<?xml version=\"1.0\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n"
    for file in files {
      text += "  <file name=\"\(file.name)\">"
      if let sha = file.sha256 { text += "<hash type=\"sha-256\">\(sha)</hash>" }
      for (index, url) in file.urls.enumerated() { text += "<url priority=\"\(index + 1)\">\(url)</url>" }
      text += "</file>\n"
    }
    return text + "</metalink>\n"
  }

  @Test func anUnsafeNameLeavesOnlyItsFileOutAndTheOthersDownload() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    fixture.server.route("/b.bin", .file(.version(2, length: Self.length)))
    fixture.folder.write(
      "doc.meta4",
      Self.document([
        ("a.bin", [fixture.server.url("/a.bin")], SHA256Digest.hex(Self.one)),
        ("../evil.bin", [fixture.server.url("/a.bin")], nil),
        ("sub/b.bin", [fixture.server.url("/b.bin")], SHA256Digest.hex(Self.two)),
      ]))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: doc.meta4
              to: m/
      """)
    let outcome = try fixture.run()
    // The file left out is a failed entry: the mirror does not silently lack it.
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(fixture.holds("m/a.bin", Self.one))
    #expect(fixture.holds("m/sub/b.bin", Self.two))
    #expect(!fixture.files().contains { $0.contains("evil") })
    let tasks = try fixture.tasks()
    let failed = try #require(tasks["doc.meta4#../evil.bin"], "\(tasks.keys.sorted())")
    let error = failed["error"] as? [String: Any]
    #expect(error?["code"] as? String == "unsafe-path")
    let message = error?["message"] as? String ?? ""
    #expect(message.contains("doc.meta4:4:3"), "\(message)")
    #expect(
      outcome.stderr.contains("doc.meta4:4:3: warning: file name '../evil.bin' contains '..'"), "\(outcome.stderr)")
  }

  @Test func aClashInsideADocumentFailsOnlyThatFile() throws {
    // Names 'd' and 'd/e' in a document, or a name another task writes, failed the whole manifest
    // with exit 2 and nothing sent.
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    fixture.server.route("/b.bin", .file(.version(2, length: Self.length)))
    fixture.server.route("/x.bin", .file(.version(2, length: Self.length)))
    fixture.server.route(
      "/doc.meta4",
      .file(
        FileResource(
          body: Array(
            Self.document([
              ("d", [fixture.server.url("/a.bin")], nil),
              ("d/e", [fixture.server.url("/b.bin")], nil),
              ("x.bin", [fixture.server.url("/a.bin")], nil),
              ("f.bin", [fixture.server.url("/b.bin")], nil),
            ]).utf8))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: BASE/doc.meta4
            - download: BASE/x.bin
              to: x.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(fixture.holds("d", Self.one))
    #expect(fixture.holds("f.bin", Self.two))
    #expect(fixture.holds("x.bin", Self.two), "the manifest's own task writes x.bin")
    // A file left out is a failed entry, named after the document and the name in it.
    let tasks = try fixture.tasks()
    for name in ["d/e", "x.bin"] {
      let failed = tasks[fixture.server.url("/doc.meta4") + "#" + name]
      #expect(failed?["outcome"] as? String == "failed", "\(name): \(tasks.keys.sorted())")
      #expect((failed?["error"] as? [String: Any])?["code"] as? String == "conflict", "\(name)")
    }
    #expect(tasks["x.bin"]?["outcome"] as? String == "completed")
    #expect(outcome.stderr.contains("doc.meta4:5:3: warning:"), "\(outcome.stderr)")
  }

  @Test func nfcAndNFDSpellingsOfANameAreTwoFiles() throws {
    // "é" as U+00E9 and as "e" + U+0301: one String to Swift, two names on Linux. Both files land,
    // and so do files in both spellings of a folder.
    let nfc = "caf\u{E9}"
    let nfd = "cafe\u{301}"
    let fixture = try RunFixture()
    let names = ["\(nfc).bin", "\(nfd).bin", "\(nfc)/x.bin", "\(nfd)/y.bin"]
    var files: [(name: String, urls: [String], sha256: String?)] = []
    var bodies: [[UInt8]] = []
    for (index, name) in names.enumerated() {
      let body = FileResource.versionBytes(index + 1, length: 1000)
      fixture.server.route("/\(index).bin", .file(.version(index + 1, length: 1000)))
      files.append((name, [fixture.server.url("/\(index).bin")], SHA256Digest.hex(body)))
      bodies.append(body)
    }
    fixture.folder.write("doc.meta4", Self.document(files))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: doc.meta4
              to: m/
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    for (name, body) in zip(names, bodies) {
      #expect(fixture.holds("m/" + name, body), "\(name)")
    }
    let found = try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path + "/m").map { Array($0.utf8) }
    for name in [nfc + ".bin", nfd + ".bin", nfc, nfd] {
      #expect(found.contains(Array(name.utf8)), "\(name) in \(found)")
    }
    #expect(found.count == 4)
    // A second run finds all four in place.
    let again = try fixture.run()
    #expect(again.status == 0, "\(again.stderr)")
    for (name, body) in zip(names, bodies) {
      #expect(fixture.holds("m/" + name, body), "\(name)")
    }
    #expect(fixture.server.requests(for: "/3.bin").count == 1)
  }

  @Test func aDocumentFromTheNetworkNeverWritesBatchdlsOwnFiles() throws {
    // A document served by the network, in a manifest with neither dest nor to:, names the
    // manifest itself, the state database and another file's partial file.
    let fixture = try RunFixture()
    let hostile = Array("version: 1\nsessions: {s: {on_finished: touch pwned, tasks: []}}\n".utf8)
    fixture.server.route("/evil.yaml", .file(FileResource(body: hostile, etag: .strong("e"))))
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    fixture.server.route(
      "/doc.meta4",
      .file(
        FileResource(
          text: Self.document([
            ("manifest.yaml", [fixture.server.url("/evil.yaml")], nil),
            (".batchdl/state.sqlite", [fixture.server.url("/evil.yaml")], nil),
            ("a.bin.batchdl-part", [fixture.server.url("/evil.yaml")], nil),
            ("a.bin", [fixture.server.url("/a.bin")], SHA256Digest.hex(Self.one)),
          ]), contentType: "application/metalink4+xml", etag: .strong("d"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: BASE/doc.meta4
      """)
    let manifest = fixture.folder.read("manifest.yaml")
    let outcome = try fixture.run()
    #expect(fixture.holds("a.bin", Self.one))
    #expect(fixture.folder.read("manifest.yaml") == manifest, "the manifest is the user's")
    #expect(fixture.server.requests(for: "/evil.yaml").isEmpty, "nothing is fetched for a name it may not write")
    for name in ["manifest.yaml", ".batchdl/state.sqlite", "a.bin.batchdl-part"] {
      #expect(outcome.stderr.contains("the destination '\(name)'"), "\(name): \(outcome.stderr)")
    }
    // The state is batchdl's own: a second run has nothing to do.
    let again = try fixture.run()
    #expect(again.status == outcome.status, "\(again.stderr)")
    #expect(try fixture.tasks()["a.bin"]?["outcome"] as? String == "unchanged")
    #expect(!fixture.folder.exists("pwned"))
  }

  @Test func aDocumentDeclaredInUTF32IsAnErrorNotACrash() throws {
    // libxml2 crashed (SIGSEGV) switching to UTF-32: validate, plan, run and status died with it.
    let fixture = try RunFixture()
    fixture.folder.write(
      "doc.meta4",
      "<?xml version=\"1.0\" encoding=\"UTF-32\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"/>\n")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: doc.meta4
      """)
    let outcome = try BinaryRunner.run(["validate", "manifest.yaml"], in: fixture.folder.path)
    #expect(outcome.status == 2, "\(outcome.output)")
    #expect(outcome.output.contains("the document declares encoding 'UTF-32'"), "\(outcome.output)")
  }

  @Test func aServedDocumentInUTF32FailsItsEntryAndEveryCommandStillWorks() throws {
    // Its stored copy crashed status, validate and even cache clear --yes.
    let fixture = try RunFixture()
    fixture.server.route(
      "/doc.meta4",
      .file(
        FileResource(
          text: "<?xml version=\"1.0\" encoding=\"UTF-32\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"/>\n",
          etag: .strong("u"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: BASE/doc.meta4
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    let failed = try #require(try fixture.tasks()[fixture.server.url("/doc.meta4")])
    #expect((failed["error"] as? [String: Any])?["code"] as? String == "descriptor")
    for command in [
      ["status", "manifest.yaml"], ["validate", "manifest.yaml"], ["cache", "clear", "manifest.yaml", "--yes"],
    ] {
      let result = try BinaryRunner.run(command, in: fixture.folder.path)
      #expect([0, 1].contains(result.status), "\(command): \(result.status) \(result.output)")
    }
    #expect(try fixture.run().status == 1)
  }

  @Test func aDescriptorThatCannotBeFetchedFailsOnlyItsTasks() throws {
    let fixture = try RunFixture()
    fixture.server.route("/doc.meta4", .status(500))
    fixture.server.route("/x.bin", .file(.version(1, length: Self.length)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          tasks:
            - metalink: BASE/doc.meta4
              to: m/
            - download: BASE/x.bin
              to: x.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(fixture.holds("x.bin", Self.one))
    #expect(!fixture.files().contains { $0.hasPrefix("m/") })
    let tasks = try fixture.tasks()
    #expect(tasks["x.bin"]?["outcome"] as? String == "completed")
    let failed = try #require(tasks[fixture.server.url("/doc.meta4")], "\(tasks.keys)")
    #expect((failed["error"] as? [String: Any])?["code"] as? String == "descriptor")
    let descriptors = try #require(try fixture.report()["descriptors"] as? [[String: Any]])
    #expect(descriptors.map { $0["outcome"] as? String } == ["failed"])
  }

  @Test func aTaskAfterAFileOfAFailedDocumentFailsDependencyAndSendsNothing() throws {
    let fixture = try RunFixture()
    fixture.server.route("/doc.meta4", .status(500))
    fixture.server.route("/x.bin", .file(.version(1, length: Self.length)))
    fixture.server.route("/y.bin", .file(.version(2, length: Self.length)))
    fixture.server.route("/z.bin", .file(.version(2, length: Self.length)))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          tasks:
            - metalink: BASE/doc.meta4
              to: m/
            - download: BASE/x.bin
              to: x.bin
              after: [m/a.bin]
            - download: BASE/y.bin
              to: y.bin
              after: [x.bin]
            - download: BASE/z.bin
              to: z.bin
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    let tasks = try fixture.tasks()
    for id in ["x.bin", "y.bin"] {
      #expect(tasks[id]?["outcome"] as? String == "failed", "\(id): \(tasks[id] ?? [:])")
      #expect((tasks[id]?["error"] as? [String: Any])?["code"] as? String == "dependency", "\(id)")
      #expect(!fixture.files().contains(id))
    }
    let message = (tasks["x.bin"]?["error"] as? [String: Any])?["message"] as? String ?? ""
    #expect(message.contains("m/a.bin") && message.contains("doc.meta4"), "\(message)")
    #expect(tasks["z.bin"]?["outcome"] as? String == "completed")
    #expect(fixture.server.requests(for: "/x.bin").isEmpty && fixture.server.requests(for: "/y.bin").isEmpty)
  }

  @Test func aDescriptorServerThatDripsIsGivenOneBudgetForAllItsTries() throws {
    // A few bytes a second kept each try alive to the whole resource limit, and the fetch went
    // again up to five times.
    let fixture = try RunFixture()
    let document = Self.document([("a.bin", [fixture.server.url("/a.bin")], nil)])
    fixture.server.route(
      "/doc.meta4",
      .file(FileResource(body: Array(document.utf8), trickle: Trickle(chunkBytes: 1, interval: 0.3))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          timeouts: {request: 2s, resource: 3s}
          retry: {attempts: 5, backoff: 10ms}
          tasks:
            - metalink: BASE/doc.meta4
              to: m/
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(try fixture.descriptorOutcomes() == ["failed"])
    // Tries go on only while the budget of 3s lasts (at most two: the first fails at the idle
    // limit of 2s, short of 1 KiB a second).
    #expect(fixture.server.requests(for: "/doc.meta4").count <= 2)
  }

  @Test func aDescriptorIsFetchedWithTheRulesOfEveryTransfer() throws {
    // The engine fetches it: a stall past timeouts.request fails a try, which goes again; a 206 to
    // a GET without Range is refused by the body gate; the failure reads as a transfer's.
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    let document = Array(Self.document([("a.bin", [fixture.server.url("/a.bin")], nil)]).utf8)
    fixture.server.route(
      "/stalls.meta4", .file(FileResource(body: document, etag: .strong("s"), stallAfterHeaders: 3, stallTimes: 1)))
    var partial = FileResource(body: document, etag: .strong("p"))
    partial.rangeFault = .partial(lower: 0, upper: 99, contentRange: true)
    fixture.server.route("/partial.meta4", .file(partial))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          timeouts: {request: 1s}
          retry: {attempts: 2, backoff: 10ms}
          tasks:
            - metalink: BASE/stalls.meta4
              to: one/
            - metalink: BASE/partial.meta4
              to: two/
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(fixture.holds("one/a.bin", Self.one))
    #expect(fixture.server.requests(for: "/stalls.meta4").count == 2)
    let failed = try #require(try fixture.tasks()[fixture.server.url("/partial.meta4")])
    #expect((failed["error"] as? [String: Any])?["code"] as? String == "descriptor")
    let message = (failed["error"] as? [String: Any])?["message"] as? String ?? ""
    #expect(message.contains("206"), "\(message)")
    #expect(!fixture.files().contains { $0.hasPrefix("two/") })
  }

  @Test func aDescriptorNotModifiedUsesTheStoredCopy() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    let text = Self.document([("a.bin", [fixture.server.url("/a.bin")], SHA256Digest.hex(Self.one))])
    fixture.server.route(
      "/doc.meta4", .file(FileResource(text: text, contentType: "application/metalink4+xml", etag: .strong("d1"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: BASE/doc.meta4
      """)
    let first = try fixture.run()
    #expect(first.status == 0, "\(first.stderr)")
    #expect(try fixture.descriptorOutcomes() == ["fetched"])
    #expect(fixture.holds("a.bin", Self.one))
    let second = try fixture.run()
    #expect(second.status == 0, "\(second.stderr)")
    #expect(try fixture.descriptorOutcomes() == ["not-modified"])
    let asked = fixture.server.requests(for: "/doc.meta4")
    #expect(asked.count == 2)
    #expect(asked.last?.header("if-none-match") == "\"d1\"")
    let sha = try #require(try fixture.report()["descriptors"] as? [[String: Any]]).first?["sha256"] as? String
    #expect(sha == SHA256Digest.hex(Array(text.utf8)))
    // plan --offline and validate use the stored copy, without a request.
    let offline = try BinaryRunner.run(["plan", "manifest.yaml", "--offline"], in: fixture.folder.path)
    #expect(offline.status == 0, "\(offline.stderr)")
    #expect(offline.stdout.contains("a.bin"))
    #expect(fixture.server.requests(for: "/doc.meta4").count == 2)
  }

  @Test func aDocumentWithAHugeETagIsStillKeptAndUsedWhenTheServerFails() throws {
    // A 90 KB ETag was stored with the copy, whose metadata then could not be read back: the copy
    // was never used.
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    let document = Self.document([("a.bin", [fixture.server.url("/a.bin")], nil)])
    let etag = "\"" + String(repeating: "e", count: 90_000) + "\""
    fixture.server.route(
      "/doc.meta4",
      .sequence([
        Response(status: 200, headers: ["ETag": etag], body: Array(document.utf8)), Response(status: 500),
      ]))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          tasks:
            - metalink: BASE/doc.meta4
              to: m/
      """)
    #expect(try fixture.run().status == 0)
    #expect(try fixture.descriptorOutcomes() == ["fetched"])
    // The stored copy plans the files, but a night upstream could not be read fails (MANIFEST.md).
    let second = try fixture.run()
    #expect(second.status == 1, "\(second.stderr)")
    #expect(try fixture.descriptorOutcomes() == ["failed"])
    #expect(fixture.holds("m/a.bin", FileResource.versionBytes(1, length: Self.length)))
    let sent = fixture.server.requests(for: "/doc.meta4").last?.headers["if-none-match"]
    #expect(sent == nil, "a validator that long is not kept")
  }

  @Test func aChangedDescriptorReplacesTheStoredCopy() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    fixture.server.route("/b.bin", .file(.version(2, length: Self.length)))
    let first = Self.document([("a.bin", [fixture.server.url("/a.bin")], nil)])
    let second = Self.document([
      ("a.bin", [fixture.server.url("/a.bin")], nil), ("b.bin", [fixture.server.url("/b.bin")], nil),
    ])
    fixture.server.route("/doc.meta4", .file(FileResource(text: first, etag: .strong("d1"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: BASE/doc.meta4
      """)
    #expect(try fixture.run().status == 0)
    #expect(!fixture.files().contains("b.bin"))
    fixture.server.route("/doc.meta4", .file(FileResource(text: second, etag: .strong("d2"))))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(try fixture.descriptorOutcomes() == ["fetched"])
    #expect(fixture.holds("b.bin", Self.two))
    let stored = try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path + "/.batchdl/descriptors")
    #expect(stored.sorted().map { $0.split(separator: ".").last.map(String.init) } == ["body", "meta"], "\(stored)")
    let body = stored.first { $0.hasSuffix(".body") }.flatMap { fixture.folder.read(".batchdl/descriptors/" + $0) }
    #expect(body == second)
    let meta = stored.first { $0.hasSuffix(".meta") }.flatMap { fixture.folder.read(".batchdl/descriptors/" + $0) }
    #expect(meta?.contains("d2") == true, "\(meta ?? "")")
  }

  @Test func aRepublishedDocumentWithANewHashFetchesTheFileAgain() throws {
    // The same URL, a new <hash>: the file kept from the old document is not the one expected now.
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    let first = Self.document([("a.bin", [fixture.server.url("/a.bin")], SHA256Digest.hex(Self.one))])
    let second = Self.document([("a.bin", [fixture.server.url("/a.bin")], SHA256Digest.hex(Self.two))])
    fixture.server.route("/doc.meta4", .file(FileResource(text: first, etag: .strong("d1"))))
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: BASE/doc.meta4
      """)
    #expect(try fixture.run().status == 0)
    #expect(fixture.holds("a.bin", Self.one))
    fixture.server.route("/doc.meta4", .file(FileResource(text: second, etag: .strong("d2"))))
    fixture.server.route("/a.bin", .file(.version(2, length: Self.length)))
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("a.bin", Self.two))
    #expect(try fixture.tasks()["a.bin"]?["outcome"] as? String == "completed")
  }

  @Test func aWrongSHA256FailsTheFileWithChecksumMismatch() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    fixture.folder.write(
      "doc.meta4", Self.document([("a.bin", [fixture.server.url("/a.bin")], SHA256Digest.hex(Self.two))]))
    fixture.manifest("version: 1\nsessions:\n  s:\n    tasks:\n      - metalink: doc.meta4\n")
    let outcome = try fixture.run()
    #expect(outcome.status == 1)
    #expect(!fixture.files().contains("a.bin"))
    let error = try #require(try fixture.tasks()["a.bin"]?["error"] as? [String: Any])
    #expect(error["code"] as? String == "checksum-mismatch")
  }

  @Test func bytesThatDisagreeWithTheSHA256MoveOnToTheNextSource() throws {
    let fixture = try RunFixture()
    let other = try TestHTTPServer()
    defer { other.stop() }
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    other.route("/a.bin", .file(.version(2, length: Self.length)))
    fixture.folder.write(
      "doc.meta4",
      Self.document([("a.bin", [fixture.server.url("/a.bin"), other.url("/a.bin")], SHA256Digest.hex(Self.two))]))
    fixture.manifest("version: 1\nsessions:\n  s:\n    tasks:\n      - metalink: doc.meta4\n")
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("a.bin", Self.two))
  }

  @Test func aRefusedFirstSourceFailsOverToTheNext() throws {
    let fixture = try RunFixture()
    let refused = try RefusedPort()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    fixture.folder.write(
      "doc.meta4",
      Self.document([("a.bin", [refused.url("/a.bin"), fixture.server.url("/a.bin")], SHA256Digest.hex(Self.one))]))
    fixture.manifest(
      "version: 1\nsessions:\n  s:\n    retry: {attempts: 2, backoff: 10ms}\n    tasks:\n      - metalink: doc.meta4\n")
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("a.bin", Self.one))
    let failed = fixture.events().filter { $0["event"] as? String == "source_failed" }
    #expect(failed.map { $0["url"] as? String } == [refused.url("/a.bin")])
  }

  @Test func aSHA512IsCheckedOnThePlacedFile() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    fixture.server.route("/b.bin", .file(.version(2, length: Self.length)))
    let good = SHA512.hash(data: Self.one).map { String(format: "%02x", $0) }.joined()
    fixture.folder.write(
      "doc.meta4",
      """
      <metalink xmlns="urn:ietf:params:xml:ns:metalink">
        <file name="a.bin"><hash type="sha-512">\(good)</hash><url>\(fixture.server.url("/a.bin"))</url></file>
        <file name="b.bin"><hash type="sha-512">\(good)</hash><url>\(fixture.server.url("/b.bin"))</url></file>
      </metalink>
      """)
    fixture.manifest("version: 1\nsessions:\n  s:\n    tasks:\n      - metalink: doc.meta4\n")
    let outcome = try fixture.run()
    #expect(outcome.status == 1)
    #expect(fixture.holds("a.bin", Self.one))
    #expect(!fixture.files().contains("b.bin"))
    let tasks = try fixture.tasks()
    #expect(tasks["a.bin"]?["outcome"] as? String == "completed")
    let error = try #require(tasks["b.bin"]?["error"] as? [String: Any])
    #expect(error["code"] as? String == "checksum-mismatch")
    #expect((error["message"] as? String)?.contains("sha-512") == true)
  }

  @Test func theStoredCopyHoldsNoSecret() throws {
    let fixture = try RunFixture()
    fixture.server.route("/a.bin", .file(.version(1, length: Self.length)))
    let text = Self.document([("a.bin", [fixture.server.url("/a.bin")], nil)])
    fixture.server.route("/doc.meta4", .file(FileResource(text: text, etag: .strong("d1"))))
    let base = fixture.server.baseURL.replacingOccurrences(of: "http://", with: "http://reader:${DOC_PASSWORD}@")
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          tasks:
            - metalink: \(base)/doc.meta4?token=${DOC_TOKEN}
      """)
    let secrets = ["DOC_PASSWORD": "pa55-word-xyz", "DOC_TOKEN": "tok-123-secret"]
    let outcome = try fixture.run(environment: secrets)
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("a.bin", Self.one))
    // Tries go on only while the budget of 3s lasts (at most two: the first fails at the idle
    // limit of 2s, short of 1 KiB a second).
    #expect(fixture.server.requests(for: "/doc.meta4").count <= 2)
    let folder = fixture.folder.path + "/.batchdl/descriptors"
    let stored = try FileManager.default.contentsOfDirectory(atPath: folder)
    #expect(stored.count == 2)
    for name in stored {
      let contents = fixture.folder.read(".batchdl/descriptors/" + name) ?? ""
      for secret in secrets.values {
        #expect(!name.contains(secret) && !contents.contains(secret), "\(name)")
      }
    }
    let report = fixture.folder.read("report.json") ?? ""
    for secret in secrets.values { #expect(!report.contains(secret)) }
    // The next run finds the copy under the same (masked) name and asks conditionally.
    #expect(try fixture.run(environment: secrets).status == 0)
    #expect(try fixture.descriptorOutcomes() == ["not-modified"])
  }

  @Test func offlineCommandsSayWhenNoCopyIsStored() throws {
    let fixture = try RunFixture()
    fixture.manifest("version: 1\nsessions:\n  s:\n    tasks:\n      - metalink: BASE/doc.meta4\n")
    let validate = try BinaryRunner.run(["validate", "manifest.yaml"], in: fixture.folder.path)
    #expect(validate.status == 0, "\(validate.stderr)")
    #expect(validate.stderr.contains("no stored copy of the Metalink document"), "\(validate.stderr)")
    let offline = try BinaryRunner.run(["plan", "manifest.yaml", "--offline"], in: fixture.folder.path)
    #expect(offline.status == 0, "\(offline.stderr)")
    #expect(offline.stderr.contains("no stored copy"))
    #expect(fixture.server.requests(for: "/doc.meta4").isEmpty)
  }
}

extension RunFixture {
  /// The report as a whole.
  func report() throws -> [String: Any] {
    let data = Data((folder.read("report.json") ?? "").utf8)
    return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
  }

  /// The report's descriptors' outcomes.
  func descriptorOutcomes() throws -> [String] {
    (try report()["descriptors"] as? [[String: Any]] ?? []).compactMap { $0["outcome"] as? String }
  }

  /// A file whose only digests are weak piece digests gets the warning a weak whole-file digest
  /// gets; with a strong whole-file digest, weak pieces are no cause for one.
  @Test func weakPieceDigestsAloneAreWarnedAbout() throws {
    let fixture = try RunFixture()
    let md5 = String(repeating: "a", count: 32)
    let sha1 = String(repeating: "b", count: 40)
    let sha256 = String(repeating: "c", count: 64)
    fixture.folder.write(
      "doc.meta4",
      """
      <?xml version="1.0"?>
      <metalink xmlns="urn:ietf:params:xml:ns:metalink">
        <file name="md5.bin"><size>10</size><pieces length="8" type="md5"><hash>\(md5)</hash><hash>\(md5)</hash></pieces>
          <url>\(fixture.server.url("/a.bin"))</url></file>
        <file name="sha1.bin"><pieces length="8" type="sha-1"><hash>\(sha1)</hash></pieces>
          <url>\(fixture.server.url("/a.bin"))</url></file>
        <file name="strong.bin"><hash type="sha-256">\(sha256)</hash><pieces length="8" type="md5"><hash>\(md5)</hash></pieces>
          <url>\(fixture.server.url("/a.bin"))</url></file>
      </metalink>
      """)
    fixture.manifest("version: 1\nsessions:\n  s:\n    tasks:\n      - metalink: doc.meta4\n")
    let outcome = try BinaryRunner.run(["validate", "manifest.yaml"], in: fixture.folder.path)
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(
      outcome.stderr.contains(
        "doc.meta4:3:3: warning: file 'md5.bin' has only md5 piece hashes, which are weak: they are checked, but cannot prove the file was not replaced; ask the publisher for sha-256"
      ), "\(outcome.stderr)")
    #expect(
      outcome.stderr.contains("doc.meta4:5:3: warning: file 'sha1.bin' has only sha-1 piece hashes, which are weak"),
      "\(outcome.stderr)")
    #expect(!outcome.stderr.contains("'strong.bin'"), "\(outcome.stderr)")
  }
}
