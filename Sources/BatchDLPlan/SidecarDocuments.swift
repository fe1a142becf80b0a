import BatchDLManifest
import BatchDLSupport

/// A download covered by `checksums: sidecar` whose sidecars the plan did not have: the command
/// fetches them (`NAME.sha256`, else `NAME.sha512`; with `signature: sidecar`, `NAME.asc`, else
/// `NAME.sig`) and plans again.
public struct SidecarWant: Sendable, Hashable {
  /// The file's normalized URL.
  public var url: String
  public var session: Int32
  public var entry: Int32
  /// Its signature is wanted too.
  public var signature: Bool

  public init(url: String, session: Int32, entry: Int32, signature: Bool) {
    self.url = url
    self.session = session
    self.entry = entry
    self.signature = signature
  }

  /// The sidecar URLs of a file at `url`, in the order they are tried: the URL's path with each
  /// extension added (a query or fragment dropped: a sidecar is a file beside the file).
  public static func candidates(of url: String, extensions: [String]) -> [String] {
    let end = url.utf8.firstIndex { $0 == 0x3F || $0 == 0x23 } ?? url.utf8.endIndex
    let base = String(url[..<end])
    return extensions.map { base + $0 }
  }

  /// The extensions of sidecar checksum files, in the order they are tried.
  public static let checksumExtensions = [".sha256", ".sha512"]
  /// The extensions of sidecar signatures, in the order they are tried.
  public static let signatureExtensions = [".asc", ".sig"]
}

/// One sidecar of a file, as the planner gets it: found (its URL and bytes), absent (upstream
/// said there is none: a 404, or a listing of the folder that does not show it), or unknown.
public struct SidecarDocument: Sendable {
  /// The sidecar's URL (the candidate found), or nil when none was.
  public var url: String?
  /// The URL as shown (masked), or the names tried when none was found.
  public var display: String
  public var outcome: DescriptorOutcome
  public var body: [UInt8]?
  public var sha256: String?
  /// Upstream has none of the candidates: `unlisted:` decides.
  public var absent = false
  /// Why it cannot be used (not a 404: a refused connection, a 500 without a stored copy).
  public var failure: String?
  /// A stored copy stands in for a fetch that failed: the run fails (as for any descriptor).
  public var problem: String?

  public init(url: String?, display: String, outcome: DescriptorOutcome) {
    self.url = url
    self.display = display
    self.outcome = outcome
  }
}

/// A file's sidecar checksum file and, with `signature: sidecar`, its sidecar signature.
public struct SidecarPair: Sendable {
  public var checksum: SidecarDocument
  public var signature: SidecarDocument?

  public init(checksum: SidecarDocument, signature: SidecarDocument? = nil) {
    self.checksum = checksum
    self.signature = signature
  }
}

/// A file's own detached OpenPGP signature (`signature: sidecar`), checked with gpgv against the
/// finished file before it is put in place.
public struct SignaturePin: Hashable, Sendable {
  /// The signature's bytes, as fetched before planning.
  public var bytes: [UInt8]
  /// The keyring's path, absolute (resolved against the manifest's folder).
  public var keyring: String
  /// The signature's URL, masked.
  public var display: String

  public init(bytes: [UInt8], keyring: String, display: String) {
    self.bytes = bytes
    self.keyring = keyring
    self.display = display
  }
}
