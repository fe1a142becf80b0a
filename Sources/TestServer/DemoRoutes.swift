import Foundation

/// Deterministic test data.
public enum TestData {
  /// `count` pseudo-random bytes (SplitMix64), the same for the same `seed` on every run.
  public static func pseudoRandomBytes(count: Int, seed: UInt64 = 0x6261_7463_6864_6c21) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: max(0, count))
    var state = seed
    var index = 0
    while index < bytes.count {
      state &+= 0x9e37_79b9_7f4a_7c15
      var value = state
      value = (value ^ (value >> 30)) &* 0xbf58_476d_1ce4_e5b9
      value = (value ^ (value >> 27)) &* 0x94d0_49bb_1331_11eb
      value ^= value >> 31
      for shift in stride(from: 0, to: 64, by: 8) where index < bytes.count {
        bytes[index] = UInt8(truncatingIfNeeded: value >> UInt64(shift))
        index += 1
      }
    }
    return bytes
  }
}

/// The routes that `manifests/demo.yaml` downloads from and uploads to.
public enum DemoRoutes {
  /// The body of `/files/hello.txt`: the 13 bytes "hello, world\n".
  public static let hello = Array("hello, world\n".utf8)

  /// The body of `/files/blob-1m.bin`: 1 MiB of deterministic pseudo-random bytes.
  public static let blob = TestData.pseudoRandomBytes(count: 1 << 20)

  /// The `Last-Modified` date of the blob: 2024-01-01 00:00:00 GMT.
  public static let blobLastModified = Date(timeIntervalSince1970: 1_704_067_200)

  /// The body of `/api/releases.json`.
  public static let releases = """
    {
      "name": "batchdl",
      "releases": [
        {"version": "0.2.0", "date": "2024-03-01", "assets": ["blob-1m.bin"]},
        {"version": "0.1.0", "date": "2024-01-01", "assets": ["hello.txt"]}
      ]
    }

    """

  /// Every demo path and what it answers.
  public static var all: [(path: String, behavior: Behavior)] {
    [
      ("/files/hello.txt", .text("hello, world\n", etag: .strong("hello-v1"))),
      (
        "/files/blob-1m.bin",
        .file(
          blob, contentType: "application/octet-stream", etag: .strong("blob-1m-v1"),
          lastModified: blobLastModified)
      ),
      ("/api/releases.json", .file(Array(releases.utf8), contentType: "application/json", etag: .strong("rel-2"))),
      ("/upload/report.txt", .uploadSink),
      ("/files/a.txt", .text("file a\n")),
      ("/files/b.txt", .text("file b\n")),
      ("/files/c.txt", .text("file c\n")),
    ] + release
  }

  /// The signed release folder that `manifests/release-mirror.yaml` mirrors: three files in
  /// folders, listed by nginx-style autoindex pages, a `SHA256SUMS` and its detached signature,
  /// made with the key in `manifests/release-keyring.gpg`.
  public static let releaseFiles: [(path: String, text: String)] = [
    ("README.txt", "batchdl demo release 1.0\n"),
    ("bin/tool-1.0.tar", String(repeating: "tool 1.0 archive\n", count: 64)),
    ("docs/manual.txt", String(repeating: "the manual\n", count: 32)),
  ]

  /// `/release/SHA256SUMS`: what `sha256sum` writes for `releaseFiles`.
  public static let releaseSums = """
    5e9630dc6523339f325f10e960e603ae3d83c64aa5bba379263dcda7f9557826  README.txt
    8b7a341b1264b323da6b3260c071987fb00160fcb51111b468e07f8bc66c5a45  bin/tool-1.0.tar
    713125398f0213dca68b90b7459e4635661a9b516beee1d8716e25d6f890b90e  docs/manual.txt

    """

  /// `/release/SHA256SUMS.asc`: `gpg --armor --detach-sign SHA256SUMS` by the demo key.
  public static let releaseSignature = """
    -----BEGIN PGP SIGNATURE-----

    iHUEABYIAB0WIQTSVFn0Zf9tt5RIwJjNit09Zkf7kgUCawj7mgAKCRDNit09Zkf7
    khgEAP4gl/H2rh/+QuuM8jxjYTCtVq0UqfofdKmaijr03NOGLAEA609NGytYRkXN
    ryoG27yPKhpj2PE7+Bal7ZFR1eWl3gk=
    =lh8X
    -----END PGP SIGNATURE-----

    """

  /// An nginx autoindex page of `folder` listing `entries` (folders end with `/`).
  static func autoindexPage(_ folder: String, _ entries: [(name: String, size: Int?)]) -> String {
    var text = "<html>\n<head><title>Index of \(folder)</title></head>\n<body>\n<h1>Index of \(folder)</h1><hr><pre>"
    text += "<a href=\"../\">../</a>\n"
    for entry in entries {
      let padding = String(repeating: " ", count: max(1, 51 - entry.name.count))
      let size = entry.size.map(String.init) ?? "-"
      text += "<a href=\"\(entry.name)\">\(entry.name)</a>\(padding)01-Jan-2026 00:00"
      text += String(repeating: " ", count: max(1, 20 - size.count)) + size + "\n"
    }
    return text + "</pre><hr></body>\n</html>\n"
  }

  static var release: [(path: String, behavior: Behavior)] {
    var routes: [(path: String, behavior: Behavior)] = releaseFiles.map { file in
      ("/release/" + file.path, .text(file.text, etag: .strong("release-" + String(file.text.utf8.count))))
    }
    let size = { (path: String) in releaseFiles.first { $0.path == path }?.text.utf8.count }
    let html = "text/html"
    routes += [
      ("/release/SHA256SUMS", .text(releaseSums, etag: .strong("sums-1"))),
      ("/release/SHA256SUMS.asc", .text(releaseSignature, etag: .strong("sums-asc-1"))),
      (
        "/release/",
        .file(
          Array(
            autoindexPage(
              "/release/",
              [
                ("bin/", nil), ("docs/", nil), ("README.txt", size("README.txt")),
                ("SHA256SUMS", releaseSums.utf8.count), ("SHA256SUMS.asc", releaseSignature.utf8.count),
              ]
            ).utf8), contentType: html)
      ),
      (
        "/release/bin/",
        .file(
          Array(autoindexPage("/release/bin/", [("tool-1.0.tar", size("bin/tool-1.0.tar"))]).utf8),
          contentType: html)
      ),
      (
        "/release/docs/",
        .file(
          Array(autoindexPage("/release/docs/", [("manual.txt", size("docs/manual.txt"))]).utf8),
          contentType: html)
      ),
    ]
    return routes
  }
}

extension TestHTTPServer {
  /// Registers every route of `DemoRoutes` (what `manifests/demo.yaml` uses).
  public func installDemoRoutes() {
    for (path, behavior) in DemoRoutes.all { route(path, behavior) }
  }
}
