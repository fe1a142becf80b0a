import Testing

@testable import BatchDLManifest
@testable import BatchDLSupport

private let hexA = String(repeating: "a", count: 64)
private let hexB = String(repeating: "b", count: 128)

/// What a sidecar checksum file gives its own file (`SidecarChecksum.digest`), by form.
@Suite struct SidecarChecksumTableTests {
  struct Case: Sendable, CustomTestStringConvertible {
    var text: String
    /// The digest's algorithm and hex, or nil when the sidecar gives none.
    var expected: (DigestAlgorithm, String)?
    var testDescription: String { text.debugDescription }
  }

  static let cases: [Case] = [
    Case(text: "\(hexA)  f.iso\n", expected: (.sha256, hexA)),
    Case(text: "\(hexA) *f.iso\n", expected: (.sha256, hexA)),
    Case(text: "\(hexA)  ./f.iso\n", expected: (.sha256, hexA)),
    Case(text: "\(hexA)  dist/f.iso\n", expected: (.sha256, hexA)),
    Case(text: "SHA256 (f.iso) = \(hexA)\n", expected: (.sha256, hexA)),
    Case(text: "SHA512 (f.iso) = \(hexB)\n", expected: (.sha512, hexB)),
    Case(text: "\(hexA)\n", expected: (.sha256, hexA)),
    Case(text: "  \(hexA.uppercased())  \r\n\n", expected: (.sha256, hexA)),
    Case(text: "\(hexB)", expected: (.sha512, hexB)),
    // Another file's entry is never this file's.
    Case(text: "\(hexA)  g.iso\n", expected: nil),
    Case(text: "\(hexA)  f.iso.old\n", expected: nil),
    // A bare hash of another length, a weak hash, nothing at all.
    Case(text: String(repeating: "c", count: 40) + "\n", expected: nil),
    Case(text: "MD5 (f.iso) = \(String(repeating: "d", count: 32))\n", expected: nil),
    Case(text: "", expected: nil),
    Case(text: "<html>Not Found</html>\n", expected: nil),
  ]

  @Test(arguments: cases) func aSidecarGivesItsOwnFileOnly(_ item: Case) {
    let found = SidecarChecksum.digest(Array(item.text.utf8), fileName: "f.iso", file: "f.iso.sha256")
    switch (found, item.expected) {
    case (.success(let digest), let (algorithm, hex)?):
      #expect(digest.algorithm == algorithm && digest.hex == hex)
    case (.failure(let problem), nil):
      #expect(!problem.message.isEmpty)
    default:
      Issue.record("\(item.text.debugDescription): \(found)")
    }
  }
}

/// `unlisted:`, `checksums: sidecar` and `signature: sidecar` as the manifest decoder reads them.
@Suite struct UnlistedDecodingTests {
  struct Case: Sendable, CustomTestStringConvertible {
    var lines: String
    /// `unlisted`, `sidecar`, `signatureSidecar`; or nil for a manifest error containing `error`.
    var expected: (UnlistedFiles, Bool, Bool)?
    var error = ""
    var testDescription: String { lines.debugDescription }
  }

  static let cases: [Case] = [
    Case(lines: "checksums: https://h/SUMS", expected: (.fail, false, false)),
    Case(lines: "checksums: https://h/SUMS\n    unlisted: fetch", expected: (.fetch, false, false)),
    Case(lines: "checksums: https://h/SUMS\n    unlisted: skip", expected: (.skip, false, false)),
    Case(lines: "checksums: sidecar", expected: (.fail, true, false)),
    Case(lines: "checksums: sidecar\n    unlisted: skip", expected: (.skip, true, false)),
    Case(
      lines: "checksums: sidecar\n    signature: sidecar\n    keyring: k.gpg", expected: (.fail, true, true)),
    Case(lines: "checksums: https://h/SUMS\n    unlisted: fetsh", expected: nil, error: "did you mean 'fetch'"),
    Case(lines: "unlisted: fetch", expected: nil, error: "checks the checksum files that 'checksums:' names"),
    Case(lines: "checksums: sidecar\n    signature: sidecar", expected: nil, error: "add 'keyring:'"),
    Case(lines: "checksums: sidecar\n    keyring: k.gpg", expected: nil, error: "add 'signature: sidecar'"),
    Case(
      lines: "checksums: sidecar\n    signature: https://h/x.sig\n    keyring: k.gpg", expected: nil,
      error: "signature: is 'sidecar'"),
    Case(
      lines: "checksums: https://h/SUMS\n    signature: sidecar\n    keyring: k.gpg", expected: nil,
      error: "goes with checksums: sidecar"),
  ]

  @Test(arguments: cases) func decoding(_ item: Case) {
    let yaml = "version: 1\nsessions:\n  s:\n    \(item.lines)\n    tasks:\n      - download: https://h/f.iso\n"
    if let (unlisted, sidecar, signature) = item.expected {
      let spec = (try? load(yaml))?.sessions.first?.checksums
      #expect(spec?.unlisted == unlisted && spec?.sidecar == sidecar && spec?.signatureSidecar == signature)
    } else {
      let problems = manifestProblems(yaml)
      #expect(problems.contains { $0.contains(item.error) }, "\(problems)")
    }
  }
}
