import Foundation

/// A tmpfs of a few MiB mounted on a folder of its own, for tests of a full disk; unmounted when
/// the value goes. Mounting needs root (or CAP_SYS_ADMIN): `permitted` says whether it works here.
public final class SmallFilesystem: @unchecked Sendable {
  public let path: String
  private let folder = TemporaryDirectory()

  /// Mounts a tmpfs of `mebibytes` MiB on `path` (made when missing; a folder of its own when
  /// nil); nil when mounting is not permitted.
  public init?(mebibytes: Int, at path: String? = nil) {
    self.path = path ?? folder.path + "/small"
    try? FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true)
    guard
      let outcome = try? ExternalTool.run(
        "/bin/mount", ["-t", "tmpfs", "-o", "size=\(mebibytes)m", "tmpfs", self.path]),
      outcome.status == 0
    else { return nil }
  }

  deinit {
    _ = try? ExternalTool.run("/bin/umount", [path])
  }

  /// Whether a tmpfs can be mounted here (tried once).
  public static let permitted: Bool = SmallFilesystem(mebibytes: 1) != nil
}
