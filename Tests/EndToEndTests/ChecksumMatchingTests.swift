import Crypto
import Foundation
import TestServer
import TestSupport
import Testing

/// Which checksum entry checks which mirrored file, run end to end against nginx's autoindex
/// (issue 36, items 3 and 25): a file never gets another file's entry, two checksum files of two
/// folders never "disagree" over files that each list by path, and a new file without an entry
/// fails `checksum-missing` before any request.
@Suite(.serialized) struct ChecksumMatchingTests {
  static func sha256(_ text: String) -> String { SHA256Digest.hex(Array(text.utf8)) }

  /// Serves `files` (paths under `pub/`) from an autoindex nginx.
  static func nginx(_ files: [String: String]) throws -> NginxServer {
    let nginx = try NginxServer(autoindex: [.init(location: "/pub/", folder: "pub")])
    for (path, text) in files { nginx.put(path, Array(text.utf8)) }
    return nginx
  }

  /// Item 3: upstream `pub/README` and `pub/sub/README`; `SHA256SUMS` lists only `sub/README`.
  /// `README` must not be checked with (and joined to) `sub/README`'s entry: it fails
  /// `checksum-missing` before it is requested, `m/README` never holds "sub readme", exit 1.
  @Test func aFileWithoutItsOwnEntryNeverGetsTheEntryOfAFileOfTheSameNameInAFolder() throws {
    let fixture = try RunFixture()
    let nginx = try Self.nginx([
      "pub/README": "top-level readme\n",
      "pub/sub/README": "sub readme\n",
      "pub/SHA256SUMS": "\(Self.sha256("sub readme\n"))  sub/README\n",
    ])
    defer { nginx.stop() }
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
              to: m/
              checksums: \(nginx.url("/pub/SHA256SUMS"))
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)")
    let tasks = try fixture.tasks()
    let error = tasks["out/m/README"]?["error"] as? [String: Any]
    #expect(error?["code"] as? String == "checksum-missing", "\(tasks["out/m/README"] ?? [:])")
    #expect(!fixture.holds("out/m/README", Array("sub readme\n".utf8)))
    #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/out/m/README"))
    #expect(nginx.requests(for: "/pub/README").isEmpty)
    #expect(fixture.holds("out/m/sub/README", Array("sub readme\n".utf8)))
    #expect(tasks["out/m/sub/README"]?["outcome"] as? String == "completed", "\(tasks)")
    // `plan` says so too, before any file is fetched.
    let plan = try BinaryRunner.run(["plan", "manifest.yaml", "--offline"], in: fixture.folder.path)
    #expect(plan.stdout.contains("checksum-missing"), "\(plan.stdout)\(plan.stderr)")
  }

  /// Item 25: `/pub/SHA256SUMS` lists `README` and `docs/README`, `/pub/docs/SHA256SUMS` lists
  /// `README`; both cover the whole tree. Each file is checked with its own entries (no "the
  /// checksum files disagree"), on every run, and a second session that fetches `README` with
  /// its own checksum file completes too.
  @Test func twoChecksumFilesOfTwoFoldersCheckEachFileWithItsOwnEntries() throws {
    let fixture = try RunFixture()
    let top = "top readme\n"
    let docs = "docs readme\n"
    let nginx = try Self.nginx([
      "pub/README": top,
      "pub/docs/README": docs,
      "pub/SHA256SUMS": "\(Self.sha256(top))  README\n\(Self.sha256(docs))  docs/README\n",
      "pub/docs/SHA256SUMS": "\(Self.sha256(docs))  README\n",
    ])
    defer { nginx.stop() }
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
              to: m/
              checksums: [\(nginx.url("/pub/SHA256SUMS")), \(nginx.url("/pub/docs/SHA256SUMS"))]
        copy:
          dest: copy
          tls: {ca_file: ca.pem}
          checksums: \(nginx.url("/pub/SHA256SUMS"))
          tasks:
            - download: \(nginx.url("/pub/README"))
      """)
    for night in 1...2 {
      let outcome = try fixture.run()
      #expect(outcome.status == 0, "night \(night): \(outcome.stdout)\(outcome.stderr)")
      #expect(!outcome.stderr.contains("disagree"), "night \(night): \(outcome.stderr)")
      let tasks = try fixture.tasks()
      for id in ["out/m/README", "out/m/docs/README", "copy/README"] {
        let outcome = tasks[id]?["outcome"] as? String
        #expect(outcome == "completed" || outcome == "unchanged", "night \(night) \(id): \(tasks[id] ?? [:])")
      }
      #expect(fixture.holds("out/m/README", Array(top.utf8)))
      #expect(fixture.holds("out/m/docs/README", Array(docs.utf8)))
      #expect(fixture.holds("copy/README", Array(top.utf8)))
    }
  }

  /// Item 25: two sessions fetch `/pub/README`; the first's checksum file has no entry for it
  /// (`checksum-missing`), the second's has. The second completes: a verdict is the session's, not
  /// the shared request's.
  @Test func aSessionSharingTheRequestDoesNotInheritAnotherSessionsVerdict() throws {
    let fixture = try RunFixture()
    let top = "top readme\n"
    let nginx = try Self.nginx([
      "pub/README": top,
      "pub/SHA256SUMS": "\(Self.sha256(top))  README\n",
      "pub/other/SHA256SUMS": "\(Self.sha256("install\n"))  INSTALL\n",
    ])
    defer { nginx.stop() }
    fixture.trustCA(of: nginx)
    fixture.manifest(
      """
      version: 1
      sessions:
        strict:
          dest: strict
          tls: {ca_file: ca.pem}
          checksums: \(nginx.url("/pub/other/SHA256SUMS"))
          tasks:
            - download: \(nginx.url("/pub/README"))
        copy:
          dest: copy
          tls: {ca_file: ca.pem}
          checksums: \(nginx.url("/pub/SHA256SUMS"))
          tasks:
            - download: \(nginx.url("/pub/README"))
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    let tasks = try fixture.tasks()
    let strict = tasks["strict/README"]?["error"] as? [String: Any]
    #expect(strict?["code"] as? String == "checksum-missing", "\(tasks)")
    #expect(tasks["copy/README"]?["outcome"] as? String == "completed", "\(tasks)\n\(outcome.stderr)")
    #expect(fixture.holds("copy/README", Array(top.utf8)))
  }

  /// Item 25: a new top-level `NOTES` with no entry is `checksum-missing` before any request; it
  /// is not checked with `extra/NOTES`'s entry (fetched, then `checksum-mismatch`).
  @Test func aNewFileWithoutAnEntryIsChecksumMissingBeforeAnyRequest() throws {
    let fixture = try RunFixture()
    let extra = "extra notes\n"
    let nginx = try Self.nginx([
      "pub/NOTES": "new top-level notes\n",
      "pub/extra/NOTES": extra,
      "pub/SHA256SUMS": "\(Self.sha256(extra))  extra/NOTES\n",
    ])
    defer { nginx.stop() }
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
              to: m/
              checksums: \(nginx.url("/pub/SHA256SUMS"))
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)")
    let tasks = try fixture.tasks()
    let error = tasks["out/m/NOTES"]?["error"] as? [String: Any]
    #expect(error?["code"] as? String == "checksum-missing", "\(tasks["out/m/NOTES"] ?? [:])")
    #expect(nginx.requests(for: "/pub/NOTES").isEmpty)
    #expect(fixture.holds("out/m/extra/NOTES", Array(extra.utf8)))
  }

  /// Item 23: a Debian Release file given as `checksums:` gives no entry (none named `SIZE PATH`,
  /// none matched by a file name): every covered file is `checksum-missing` before any request.
  @Test func aReleaseFileGivesNoEntries() throws {
    let fixture = try RunFixture()
    let packages = "Package: tool\n"
    let nginx = try Self.nginx([
      "pub/main/binary-amd64/Packages": packages,
      "pub/Release":
        "Origin: Debian\nSHA256:\n \(Self.sha256(packages))     \(packages.utf8.count) main/binary-amd64/Packages\n",
    ])
    defer { nginx.stop() }
    fixture.trustCA(of: nginx)
    fixture.manifest(
      """
      version: 1
      sessions:
        mirror:
          dest: out
          tls: {ca_file: ca.pem}
          checksums: \(nginx.url("/pub/Release"))
          tasks:
            - download: \(nginx.url("/pub/main/binary-amd64/Packages"))
              to: Packages
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)")
    #expect(outcome.stderr.contains("Debian's Release format"), "\(outcome.stderr)")
    let error = try fixture.tasks()["out/Packages"]?["error"] as? [String: Any]
    #expect(error?["code"] as? String == "checksum-missing", "\(error ?? [:])")
    #expect(nginx.requests(for: "/pub/main/binary-amd64/Packages").isEmpty)
  }
}
