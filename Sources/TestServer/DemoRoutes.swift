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
    ]
  }
}

extension TestHTTPServer {
  /// Registers every route of `DemoRoutes` (what `manifests/demo.yaml` uses).
  public func installDemoRoutes() {
    for (path, behavior) in DemoRoutes.all { route(path, behavior) }
  }
}
