import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest

/// No destination names a file batchdl reads or keeps: the manifest, its lists and documents, the
/// files it trusts, its state folder, or a partial file of another download.
@Suite struct ReservedDestinationTests {
  @Test func aDestinationNamingBatchdlsOwnFilesIsAnError() {
    let found = ManifestFixture.problems(
      """
      version: 1
      sessions:
        s:
          tls: {ca_file: certs/ca.pem}
          tasks:
            - download: https://a.example/x
              to: manifest.yaml
            - download: https://a.example/y
              to: .batchdl/state.sqlite
            - download: https://a.example/z
              to: a.bin.batchdl-part
            - download: https://a.example/c
              to: certs/ca.pem
            - upload: https://a.example/u
              from: up.bin
            - download: https://a.example/u
              to: up.bin
            - download: https://a.example/d
              to: sub.batchdl-part/d.bin
            - download: https://a.example/w
              to: ./sub/../urls.txt
            - list: urls.txt
      """, files: ["certs/ca.pem": "ca", "up.bin": "u", "urls.txt": "https://a.example/ok.bin\n"])
    let reads = "is a file batchdl reads for this manifest (the manifest, a list, a document or a tls: file)"
    let partial = "names a partial file (*.batchdl-part), where batchdl keeps a download in progress"
    for expected in [
      "7:13: error: the destination 'manifest.yaml' \(reads)",
      "11:13: error: the destination 'a.bin.batchdl-part' \(partial)",
      "13:13: error: the destination 'certs/ca.pem' \(reads)",
      "19:13: error: the destination 'sub.batchdl-part/d.bin' \(partial)",
      "21:13: error: the destination 'urls.txt' \(reads)",
    ] {
      #expect(found.contains(expected), "\(expected)\n\(found.joined(separator: "\n"))")
    }
    #expect(
      found.contains {
        $0.hasPrefix("9:13: error: the destination '.batchdl/state.sqlite' is in ")
          && $0.hasSuffix(", batchdl's state folder")
      })
  }

  @Test func aListLineCannotNameThemEither() {
    // The list's fast path (a URL alone on its line) names the file after the URL.
    let found = ManifestFixture.problems(
      """
      version: 1
      sessions:
        s:
          tasks:
            - list: urls.txt
      """,
      files: [
        "urls.txt": """
        https://a.example/files/manifest.yaml
        https://a.example/files/b.bin.batchdl-part
        https://a.example/files/fine.bin
        https://a.example/x state/../urls.txt

        """
      ])
    #expect(
      found.contains { $0.hasPrefix("urls.txt:1:1: error: the destination 'manifest.yaml' is a file batchdl reads") },
      "\(found)")
    #expect(
      found.contains { $0.hasPrefix("urls.txt:2:1: error: the destination 'b.bin.batchdl-part' names a partial file") },
      "\(found)")
    #expect(
      found.contains { $0.hasPrefix("urls.txt:4:21: error: the destination 'urls.txt' is a file batchdl reads") },
      "\(found)")
    #expect(found.count == 3, "\(found)")
  }

  @Test func aCAFolderAndWhereTLSFilesLeadAreReserved() throws {
    // A file planted in the CA folder would be trusted at the next handshake; a link's target is
    // the file libcurl reads.
    let folder = TemporaryDirectory()
    folder.write("cas/0000.0", "ca")
    folder.write("store/bundle.pem", "ca")
    try FileManager.default.createSymbolicLink(atPath: folder.path + "/ca.pem", withDestinationPath: "store/bundle.pem")
    let path = folder.write(
      "manifest.yaml",
      """
      version: 1
      sessions:
        trusting:
          tls: {ca_path: cas, ca_file: ca.pem}
          tasks:
            - download: https://a.example/x
              to: other.bin
        planting:
          tasks:
            - download: https://a.example/y
              to: cas/90a3ab2b.0
            - download: https://a.example/z
              to: store/bundle.pem
      """)
    do {
      _ = try ManifestCheck.plan(path: path)
      Issue.record("the manifest was accepted")
    } catch {
      let found = error.diagnostics.map { "\($0.mark.line):\($0.mark.column): \($0.message)" }
      #expect(
        found.contains {
          $0.hasPrefix(
            "11:13: the destination 'cas/90a3ab2b.0' is in \(folder.path)/cas, the folder of CA certificates that tls.ca_path trusts"
          )
        }, "\(found)")
      #expect(
        found.contains { $0.hasPrefix("13:13: the destination 'store/bundle.pem' is a file batchdl reads") }, "\(found)"
      )
    }
  }

  @Test func aStateFolderGivenWithStateIsReservedToo() throws {
    let folder = TemporaryDirectory()
    let path = folder.write(
      "manifest.yaml",
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: https://a.example/x
              to: elsewhere/state.sqlite
      """)
    #expect(throws: ManifestError.self) {
      try ManifestCheck.plan(path: path, state: folder.path + "/elsewhere")
    }
    #expect((try? ManifestCheck.plan(path: path)) != nil, "without --state, elsewhere/ is an ordinary folder")
  }
}
