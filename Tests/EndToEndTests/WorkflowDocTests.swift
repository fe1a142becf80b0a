import Foundation
import TestServer
import TestSupport
import Testing

/// The worked examples of docs/workflows.md are what batchdl prints: the cron mail of a bad night
/// and a CI job's report diff, run here and compared line by line with the document.
@Suite struct WorkflowDocTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
  static var document: [String] {
    ((try? String(contentsOfFile: root + "/docs/workflows.md", encoding: .utf8)) ?? "")
      .components(separatedBy: "\n")
  }

  /// The lines of the document's fenced block that contains `marker`, without their indentation.
  static func block(containing marker: String) -> [String] {
    let lines = document
    guard let hit = lines.firstIndex(where: { $0.contains(marker) }),
      let open = lines[..<hit].lastIndex(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("```") }),
      let close = lines[(hit + 1)...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "```" })
    else { return [] }
    return lines[(open + 1)..<close].map { $0.trimmingCharacters(in: .whitespaces) }
  }

  @Test func theCronMailOfABadNightIsWhatTheDocumentShows() throws {
    let expected = Self.block(containing: "error: on_finished of session nightly")
    #expect(expected.count == 2, "\(expected)")
    let fixture = try RunFixture()
    fixture.server.route("/app.tar.gz", .status(404))
    fixture.manifest(
      """
      version: 1
      sessions:
        nightly:
          retry: {attempts: 1}
          on_finished: 'exit 7'
          tasks:
            - download: BASE/app.tar.gz
              to: mirror/app.tar.gz
      """, name: "mirror.yaml")
    // As the crontab line runs it: standard output thrown away, standard error mailed.
    let outcome = try BinaryRunner.run(
      ["run", "mirror.yaml", "--report", "reports/last.json"], in: fixture.folder.path)
    #expect(outcome.status == 1)
    #expect(outcome.stderr.split(separator: "\n").map(String.init) == expected, "\(outcome.stderr)")
  }

  @Test func theReportDiffOfACIJobIsWhatTheDocumentShows() throws {
    let expected = Self.block(containing: "$ batchdl report diff reports/expected.json report.json")
    let command = try #require(expected.first)
    #expect(command == "$ batchdl report diff reports/expected.json report.json")
    let folder = TemporaryDirectory()
    func task(_ id: String, _ outcome: String, sha: String, size: Int, error: String? = nil) -> String {
      var fields = [
        "\"attempts\":1", "\"id\":\"\(id)\"", "\"kind\":\"download\"", "\"outcome\":\"\(outcome)\"",
        "\"resumed_from\":0", "\"session\":\"nightly\"", "\"url\":\"https://example.org/\(id)\"",
      ]
      if let error {
        fields.append("\"error\":{\"code\":\"http-404\",\"message\":\"\(error)\"}")
        fields.append("\"status\":404")
      } else {
        fields += ["\"sha256\":\"\(sha)\"", "\"size\":\(size)", "\"status\":200"]
      }
      return "{" + fields.joined(separator: ",") + "}"
    }
    func report(_ tasks: [String]) -> String {
      "{\"format\":\"batchdl-report/1\",\"manifest\":\"mirror.yaml\",\"summary\":{},\"tasks\":[\n"
        + tasks.joined(separator: ",\n") + "\n]}\n"
    }
    let same = String(repeating: "ab", count: 32)
    let names = (0..<274).map { String(format: "mirror/pkg-%03d.tar.gz", $0) }
    let old = report(
      [
        task(
          "mirror/app.tar.gz", "completed", sha: "4f1c7a0e2b9d" + String(repeating: "0", count: 52), size: 1_048_576),
        task("mirror/gone.tar.gz", "completed", sha: same, size: 10),
      ] + names.map { task($0, "completed", sha: same, size: 10) })
    let new = report(
      [
        task(
          "mirror/app.tar.gz", "completed", sha: "9b71d224bd62" + String(repeating: "0", count: 52), size: 1_050_112),
        task("mirror/gone.tar.gz", "failed", sha: "", size: 0, error: "HTTP 404 Not Found"),
      ] + names.map { task($0, "unchanged", sha: same, size: 10) })
    _ = folder.write("reports/expected.json", old)
    _ = folder.write("report.json", new)
    let diff = try BinaryRunner.run(["report", "diff", "reports/expected.json", "report.json"], in: folder.path)
    let printed = diff.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let shown = Array(expected.dropFirst().prefix { !$0.hasPrefix("$ ") })
    #expect(printed.dropLast() == ArraySlice(shown), "\(diff.stdout)")
    #expect(expected.last == String(diff.status), "the document's exit status")
    let markdown = try BinaryRunner.run(
      ["report", "diff", "reports/expected.json", "report.json", "--markdown"], in: folder.path)
    let documented = Self.block(containing: "### batchdl report diff: mirror.yaml")
    #expect(
      markdown.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        == documented, "\(markdown.stdout)")
  }
}

/// The week of nights of docs/workflows.md ("A week of nights"), lived against the loopback test
/// server with the built binary: upstream changes between nights as the document says, and each
/// night's cron mail (standard output and error of `run --quiet` off a terminal, then `report diff
/// MANIFEST` when the run failed), exit status and report diff are the document's blocks.
extension WorkflowDocTests {
  /// The fenced block after the line `marker` (an HTML comment, invisible on the page), without
  /// its indentation; nil when there is none.
  static func block(after marker: String) -> [String]? {
    let lines = document
    guard let hit = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == marker }),
      let open = lines[(hit + 1)...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("```") }),
      let close = lines[(open + 1)...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "```" })
    else { return nil }
    return lines[(open + 1)..<close].map { $0.trimmingCharacters(in: .whitespaces) }
  }

  /// A signed release folder `/pub/tool/` as nginx serves it: an autoindex page (names, dates,
  /// sizes), `README.txt`, `tool-V.tar.gz` with its `.sha256` sidecar, `SHA256SUMS` over
  /// `README.txt` and the tarballs, and `SHA256SUMS.asc` signed with the tests' throw-away key.
  final class Upstream {
    let server: TestHTTPServer
    let keys: OpenPGPKeys
    /// Each served name: its bytes and the night it last changed.
    var files: [String: (bytes: [UInt8], night: Int)] = [:]
    /// The 12 first hex digits of each signature published, in order (the document shows others).
    var signatures: [String] = []

    init(server: TestHTTPServer, keys: OpenPGPKeys) {
      self.server = server
      self.keys = keys
    }

    /// Publishes the release `versions` on `night`; a bad signature keeps the old `SHA256SUMS.asc`
    /// beside the new `SHA256SUMS` (the release manager forgot to sign again).
    func publish(_ versions: [String], night: Int, badSignature: Bool = false) throws {
      var next: [String: [UInt8]] = ["README.txt": Array("tool: check SHA256SUMS with SHA256SUMS.asc\n".utf8)]
      for version in versions {
        let name = "tool-\(version).tar.gz"
        let body = Array(String(repeating: "tool \(version)\n", count: 300).utf8)
        next[name] = body
        next[name + ".sha256"] = Array("\(SHA256Digest.hex(body))  \(name)\n".utf8)
      }
      let sums = next.keys.filter { !$0.hasSuffix(".sha256") }.sorted().map { name in
        "\(SHA256Digest.hex(next[name] ?? []))  \(name)\n"
      }.joined()
      next["SHA256SUMS"] = Array(sums.utf8)
      if badSignature, let old = files["SHA256SUMS.asc"] {
        next["SHA256SUMS.asc"] = old.bytes
      } else {
        let signed = try keys.signDetached("SHA256SUMS", sums, extra: ["--armor", "--yes"])
        let signature = [UInt8](FileManager.default.contents(atPath: signed.signature) ?? Data())
        next["SHA256SUMS.asc"] = signature
        signatures.append(String(SHA256Digest.hex(signature).prefix(12)))
      }
      for name in files.keys where next[name] == nil { server.removeRoute("/pub/tool/" + name) }
      var published: [String: (bytes: [UInt8], night: Int)] = [:]
      for (name, bytes) in next {
        published[name] = files[name].map { $0.bytes == bytes ? $0 : (bytes, night) } ?? (bytes, night)
      }
      files = published
      serve()
    }

    /// Routes the folder page and every file (again, after a night of 503s).
    func serve() {
      for (name, file) in files {
        server.route(
          "/pub/tool/" + name,
          .file(
            FileResource(
              body: file.bytes, etag: .strong(String(SHA256Digest.hex(file.bytes).prefix(16))),
              lastModified: Self.date(file.night))))
      }
      server.route("/pub/tool/", .file(FileResource(body: Array(page().utf8), contentType: "text/html")))
    }

    /// Upstream is down: every path answers 503.
    func down() {
      for name in files.keys { server.route("/pub/tool/" + name, .status(503)) }
      server.route("/pub/tool/", .status(503))
    }

    static func date(_ night: Int) -> Date { Date(timeIntervalSince1970: 1_796_169_600 + Double(night) * 86_400) }

    /// nginx's autoindex page of the folder (names, dates and exact sizes).
    func page() -> String {
      let formatter = DateFormatter()
      formatter.locale = Locale(identifier: "en_US_POSIX")
      formatter.timeZone = TimeZone(identifier: "UTC")
      formatter.dateFormat = "dd-MMM-yyyy HH:mm"
      var lines = [
        "<html>", "<head><title>Index of /pub/tool/</title></head>", "<body>",
        "<h1>Index of /pub/tool/</h1><hr><pre><a href=\"../\">../</a>",
      ]
      for name in files.keys.sorted() {
        guard let file = files[name] else { continue }
        let link = "<a href=\"\(name)\">\(name)</a>" + String(repeating: " ", count: max(1, 51 - name.count))
        let size = String(file.bytes.count)
        lines.append(
          link + formatter.string(from: Self.date(file.night)) + String(repeating: " ", count: 20 - size.count) + size)
      }
      lines += ["</pre><hr></body>", "</html>", ""]
      return lines.joined(separator: "\r\n")
    }
  }

  /// Runs `batchdl arguments` in `folder` as cron does: standard input from /dev/null, standard
  /// output and error into one pipe (the mail), in the order written. Stopped after 120 s.
  static func mail(_ arguments: [String], in folder: String) throws -> (status: Int32, text: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: BinaryRunner.executable)
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: folder)
    let pipe = Pipe()
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
    DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: watchdog)
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    watchdog.cancel()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
  }

  @Test func aWeekOfNightsMailsWhatTheDocumentShows() throws {
    let keys = try OpenPGPKeys()
    let fixture = try RunFixture()
    let upstream = Upstream(server: fixture.server, keys: keys)
    let folder = fixture.folder.path
    // The document's manifest, as written (indentation kept), on the test server.
    let raw = Self.document
    let start = try #require(raw.firstIndex(of: "<!-- week: manifest -->"))
    let open = try #require(raw[(start + 1)...].firstIndex { $0.hasPrefix("```") })
    let close = try #require(raw[(open + 1)...].firstIndex(of: "```"))
    fixture.folder.write(
      "release-mirror.yaml",
      raw[(open + 1)..<close].joined(separator: "\n").replacingOccurrences(
        of: "https://releases.example.org", with: fixture.server.baseURL) + "\n")
    try FileManager.default.copyItem(atPath: keys.keyring, toPath: folder + "/release-keyring.gpg")
    let fingerprint = try keys.fingerprint(OpenPGPKeys.test)
    let documentSignatures = ["3b0f6c1e9a72", "a94e20d7c5b1", "5c81f3e6b02d"]

    /// What the operator reads: the port, the folder, the state key, the key and the times as
    /// the document shows them.
    func normalized(_ text: String) -> [String] {
      var text = text.replacingOccurrences(of: fixture.server.baseURL, with: "https://releases.example.org")
        .replacingOccurrences(of: folder, with: "/srv/mirror")
        .replacingOccurrences(of: fingerprint, with: "0D5F3A7C19E2B84F6C0A9D17E3B5F2C8A4D6E1B0")
      for (actual, shown) in zip(upstream.signatures, documentSignatures) {
        text = text.replacingOccurrences(of: actual, with: shown)
      }
      text = text.replacing(#/release-mirror\.yaml-[0-9a-f]{8}/#, with: "release-mirror.yaml-4c1d9e07")
      text = text.replacing(#/in [0-9.]+ (s|ms)$/#.anchorsMatchLineEndings(), with: "in 0.0 s")
      return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }
    /// One night: the run as the cron line runs it, and the diff the line adds when it fails.
    func night(_ extra: [String] = []) throws -> (status: Int32, mail: [String]) {
      let run = try Self.mail(["run", "release-mirror.yaml", "--quiet"] + extra, in: folder)
      var text = run.text
      if run.status != 0 { text += try Self.mail(["report", "diff", "release-mirror.yaml"], in: folder).text }
      return (run.status, normalized(text))
    }
    func expectMail(_ number: Int, _ outcome: (status: Int32, mail: [String]), status: Int32) {
      #expect(outcome.status == status, "night \(number): \(outcome.mail.joined(separator: "\n"))")
      let shown = Self.block(after: "<!-- week: mail of night \(number) -->")
      #expect(outcome.mail == (shown ?? []), "night \(number):\n\(outcome.mail.joined(separator: "\n"))")
    }
    func expectDiff(_ marker: String) throws {
      let diff = try Self.mail(["report", "diff", "release-mirror.yaml"], in: folder)
      let shown = Self.block(after: "<!-- week: \(marker) -->") ?? []
      #expect(
        ["$ batchdl report diff release-mirror.yaml"] + normalized(diff.text) == shown,
        "\(marker):\n\(normalized(diff.text).joined(separator: "\n"))")
    }

    // Night 1: the first mirror, silent. Night 2: nothing changed, silent; only descriptors asked.
    try upstream.publish(["1.0", "1.1", "1.2"], night: 1)
    let first = try night()
    #expect(first.status == 0 && first.mail.isEmpty, "\(first.mail)")
    let sidecars = try Self.mail(["report", "show", "release-mirror.yaml"], in: folder).text
    #expect(sidecars.components(separatedBy: "\"verified\":false").count == 4, "the 3 sidecars: \(sidecars)")
    let second = try night()
    #expect(second.status == 0 && second.mail.isEmpty, "\(second.mail)")
    let report = try Self.mail(["report", "show", "release-mirror.yaml"], in: folder)
    #expect(report.text.contains("\"descriptor_requests\":3,"), "\(report.text)")
    #expect(report.text.contains("\"requests\":3,"), "\(report.text)")
    #expect(report.text.components(separatedBy: "\"outcome\":\"not-modified\"").count == 3, "\(report.text)")
    // Night 3: 1.3 added, 1.0 removed; the mail says what prune deleted.
    try upstream.publish(["1.1", "1.2", "1.3"], night: 3)
    expectMail(3, try night(), status: 0)
    try expectDiff("diff of night 3")
    // Night 4: upstream drops 1.1 and 1.2, more than max_delete: refused (6); then accepted once.
    try upstream.publish(["1.3", "1.4"], night: 4)
    expectMail(4, try night(), status: 6)
    #expect(fixture.folder.read("pub/tool/tool-1.1.tar.gz") != nil)
    let accepted = try Self.mail(["run", "release-mirror.yaml", "--quiet", "--max-delete", "4"], in: folder)
    #expect(accepted.status == 0)
    #expect(
      ["$ batchdl run release-mirror.yaml --quiet --max-delete 4"] + normalized(accepted.text)
        == (Self.block(after: "<!-- week: max-delete -->") ?? []), "\(accepted.text)")
    #expect(fixture.folder.read("pub/tool/tool-1.1.tar.gz") == nil)
    // Night 5: a SHA256SUMS the old signature does not cover: nothing placed, one line per cause.
    try upstream.publish(["1.3", "1.4", "1.5"], night: 5, badSignature: true)
    expectMail(5, try night(), status: 1)
    #expect(fixture.folder.read("pub/tool/tool-1.5.tar.gz") == nil)
    // Night 6: upstream down.
    upstream.down()
    expectMail(6, try night(), status: 1)
    // Night 7: upstream back, signed again; silent, and the mirror is upstream's folder.
    try upstream.publish(["1.3", "1.4", "1.5"], night: 7)
    let last = try night()
    #expect(last.status == 0 && last.mail.isEmpty, "\(last.mail)")
    try expectDiff("diff of night 7")
    let mirrored = ((try? FileManager.default.contentsOfDirectory(atPath: folder + "/pub/tool")) ?? []).sorted()
    #expect(mirrored == upstream.files.keys.sorted(), "\(mirrored)")
    for (name, file) in upstream.files { #expect(fixture.holds("pub/tool/" + name, file.bytes), "\(name)") }
    #expect(((try? FileManager.default.contentsOfDirectory(atPath: folder + "/.partial")) ?? []).isEmpty)
  }
}
