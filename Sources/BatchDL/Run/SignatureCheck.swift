import BatchDLManifest
import BatchDLSupport
import Foundation

/// What a signature check gives when the signature holds: the bytes it covers and whose keys made
/// it. Nothing else of a signed document is ever handed on.
public struct SignedText: Sendable, Equatable {
  /// The bytes gpgv verified: for a detached signature, the data exactly as checked; for a
  /// clear-signed document, the signed text gpgv wrote out (armor, dash-escapes and anything
  /// outside the message dropped).
  public var bytes: [UInt8]
  /// The document as it was read and handed to gpgv: the data itself for a detached signature, the
  /// whole clear-signed file (what `ChecksumFile.parse(signedText:of:file:)` maps positions into,
  /// and what a report's digest of the descriptor is taken over).
  public var document: [UInt8]
  /// The fingerprints of the primary keys whose good signatures cover the bytes (40 hexadecimal
  /// digits, upper case, as gpgv writes them).
  public var fingerprints: [String]
  /// Other signatures on the same bytes that could not be checked and were set aside (a key not
  /// in the keyring, an expired key or signature, a digest refused), one line each.
  public var setAside: [String]
}

/// Why a signature does not hold, or could not be checked. `message` words it for the `signature`
/// error of the tasks that depend on it.
public enum SignatureFailure: Error, Sendable, Equatable {
  /// gpgv is not installed (the folders looked in).
  case gpgvMissing(looked: [String])
  /// The keyring cannot be used: missing, empty, unreadable, ASCII-armored.
  case keyring(path: String, reason: String)
  /// The detached signature file does not exist.
  case missingSignature(path: String)
  /// The data or the signature cannot be read (what, path, why).
  case unreadable(what: String, path: String, reason: String)
  /// The signature (or the clear-signed document) holds no OpenPGP signature (gpgv's words).
  case notASignature(detail: String)
  /// A signature does not match the bytes: they changed after signing (the key that made it).
  case badSignature(key: String)
  /// Made by keys the keyring does not have.
  case unknownKey(keys: [String], keyring: String)
  case expiredKey(key: String)
  case expiredSignature(key: String)
  case revokedKey(key: String)
  /// The signature uses a digest gpgv is told to refuse (SHA-1).
  case weakDigest(key: String)
  /// gpgv ran past the time allowed (seconds) and was killed.
  case timedOut(seconds: Double)
  /// Anything else, with gpgv's own words (trimmed, escaped).
  case failed(String)

  public var message: String {
    switch self {
    case .gpgvMissing(let looked):
      return
        "gpgv is not installed (looked in \(looked.joined(separator: ", "))): install the Debian package gpgv (apt-get install gpgv) to check OpenPGP signatures"
    case .keyring(let path, let reason):
      return "keyring '\(Self.shown(path))' \(reason)"
    case .missingSignature(let path):
      return "the signature file '\(Self.shown(path))' does not exist"
    case .unreadable(let what, let path, let reason):
      return "cannot read the \(what) '\(Self.shown(path))': \(reason)"
    case .notASignature(let detail):
      return "no OpenPGP signature gpgv can read\(detail.isEmpty ? "" : " (\(detail))")"
    case .badSignature(let key):
      return "BAD signature by key \(key): the checksum file is not what that key signed (it was changed or damaged)"
    case .unknownKey(let keys, let keyring):
      let made = keys.count == 1 ? "key \(keys[0]), which is" : "keys \(keys.joined(separator: ", ")), which are"
      return "the signature was made by \(made) not in the keyring '\(Self.shown(keyring))'"
    case .expiredKey(let key):
      return "the signature was made by key \(key), which has expired"
    case .expiredSignature(let key):
      return "the signature by key \(key) has expired"
    case .revokedKey(let key):
      return "the signature was made by key \(key), which its owner has revoked"
    case .weakDigest(let key):
      return
        "the signature by key \(key) uses SHA-1, which batchdl does not accept in signatures (collisions can be made for it)"
    case .timedOut(let seconds):
      return "gpgv did not finish within \(TextFormat.fixed(seconds, decimals: seconds < 10 ? 1 : 0)) s and was stopped"
    case .failed(let text):
      return text
    }
  }

  private static func shown(_ text: String) -> String { ShownText.escaped(text, limit: 200) }
}

/// Checks an OpenPGP signature of a checksum file with the system's `gpgv` (Debian package gpgv),
/// against one keyring only; OpenPGP itself is never implemented here.
///
/// Everything gpgv reads is a copy in a private temporary folder (mode 0700) made for the check:
/// the data, the signature, the keyring, and an empty GnuPG home (`--homedir`, so that no
/// `GNUPGHOME`, `~/.gnupg` or `trustedkeys.kbx` takes part). The bytes handed back are those of the
/// copy gpgv checked (detached) or wrote (`--output`, clear-signed): what is verified is what is
/// parsed, with no window to swap a file between the two.
///
/// gpgv runs without a shell (Foundation's `Process`: other descriptors closed, signal mask
/// cleared), with `LC_ALL=C` and a fixed `PATH` only, its status lines on standard output
/// (`--status-fd 1`: nothing else writes there) and its standard error in files; it is killed
/// past `timeout`, and at most `maxStatusBytes` of status are read.
///
/// The verdict comes from the status lines, never from the exit status alone: gpgv exits 0 for a
/// signature by an expired or revoked key (`EXPKEYSIG`, `REVKEYSIG`). A check holds when at least
/// one signature is good and valid (`GOODSIG` and `VALIDSIG`), none is bad (`BADSIG`), no key is
/// revoked, and gpgv reports no other error; signatures it cannot check beside a good one (a key
/// not in the keyring, an expired key) are set aside, as apt does for its Release files. SHA-1
/// signatures are refused (`--weak-digest SHA1`).
public struct SignatureCheck: Sendable {
  /// Where the data to check comes from.
  public enum Input: Sendable, Equatable {
    /// Bytes already in memory (a fetched document).
    case bytes([UInt8])
    /// A local file, read (bounded) before the check.
    case file(String)
  }

  /// Seconds gpgv may run (a check takes milliseconds).
  public static let defaultTimeout: Double = 30
  /// The largest detached signature read (1MB: a signature is a few hundred bytes).
  public static let maxSignatureBytes = 1 << 20
  /// The largest keyring read (64MB: Debian's whole developer keyring is about 30MB).
  public static let maxKeyringBytes = 64 << 20
  /// The most status output read (1MB); more is a failure.
  public static let maxStatusBytes = 1 << 20
  /// The most of gpgv's standard error read, of which the last lines are shown.
  public static let maxErrorBytes = 64 << 10
  /// Where gpgv is looked for when no path is given.
  public static let gpgvFolders = ["/usr/bin", "/bin", "/usr/local/bin"]

  /// The gpgv to run; nil: the first found in `gpgvFolders`.
  public var gpgv: String?
  public var timeout: Double

  public init(gpgv: String? = nil, timeout: Double = defaultTimeout) {
    self.gpgv = gpgv
    self.timeout = timeout
  }

  /// Checks the detached signature `signature` of `data` against `keyring` (a binary OpenPGP
  /// keyring, as `gpg --export` writes it, or a keybox). On success, `data`'s bytes as checked.
  public func verifyDetached(data: Input, signature: Input, keyring: String) -> Result<SignedText, SignatureFailure> {
    let run: GPGVRun
    switch prepare(keyring: keyring) {
    case .success(let prepared): run = prepared
    case .failure(let failure): return .failure(failure)
    }
    defer { run.remove() }
    let dataBytes: [UInt8]
    let signatureBytes: [UInt8]
    switch load(data, what: "checksum file", limit: ChecksumFile.maxBytes) {
    case .success(let bytes): dataBytes = bytes
    case .failure(let failure): return .failure(failure)
    }
    switch load(signature, what: "signature file", limit: Self.maxSignatureBytes, missing: true) {
    case .success(let bytes): signatureBytes = bytes
    case .failure(let failure): return .failure(failure)
    }
    let dataPath = run.folder + "/data"
    let signaturePath = run.folder + "/data.sig"
    if let failure = run.write(dataBytes, to: dataPath) ?? run.write(signatureBytes, to: signaturePath) {
      return .failure(failure)
    }
    return run.gpgv(["--", signaturePath, dataPath], timeout: timeout, clearSigned: false, keyring: keyring).map {
      SignedText(bytes: dataBytes, document: dataBytes, fingerprints: $0.fingerprints, setAside: $0.setAside)
    }
  }

  /// Checks the clear-signed `document` against `keyring`; on success, the signed text alone, as
  /// gpgv writes it (`--output`): text before or after the signed message is never returned.
  public func verifyClearSigned(_ document: Input, keyring: String) -> Result<SignedText, SignatureFailure> {
    let run: GPGVRun
    switch prepare(keyring: keyring) {
    case .success(let prepared): run = prepared
    case .failure(let failure): return .failure(failure)
    }
    defer { run.remove() }
    let documentBytes: [UInt8]
    switch load(document, what: "checksum file", limit: ChecksumFile.maxBytes) {
    case .success(let bytes): documentBytes = bytes
    case .failure(let failure): return .failure(failure)
    }
    let documentPath = run.folder + "/document"
    let outputPath = run.folder + "/signed-text"
    if let failure = run.write(documentBytes, to: documentPath) { return .failure(failure) }
    let signers: GPGVStatus.Signers
    switch run.gpgv(
      ["--output", outputPath, "--", documentPath], timeout: timeout, clearSigned: true, keyring: keyring)
    {
    case .success(let found): signers = found
    case .failure(let failure): return .failure(failure)
    }
    guard let text = GPGVRun.readBounded(outputPath, limit: ChecksumFile.maxBytes) else {
      return .failure(
        .failed(
          "gpgv verified the signature but wrote no signed text of at most \(ByteSize.format(Int64(ChecksumFile.maxBytes)))"
        ))
    }
    return .success(
      SignedText(
        bytes: text, document: documentBytes, fingerprints: signers.fingerprints, setAside: signers.setAside))
  }

  /// The path of gpgv, or nil when it is not installed.
  public static func locateGPGV() -> String? {
    gpgvFolders.map { $0 + "/gpgv" }.first { FileManager.default.isExecutableFile(atPath: $0) }
  }

  /// Finds gpgv and copies the keyring into a new private folder.
  func prepare(keyring: String) -> Result<GPGVRun, SignatureFailure> {
    let path: String
    if let gpgv {
      guard FileManager.default.isExecutableFile(atPath: gpgv) else {
        return .failure(.gpgvMissing(looked: [FileAccess.directory(of: gpgv)]))
      }
      path = gpgv
    } else {
      guard let found = Self.locateGPGV() else { return .failure(.gpgvMissing(looked: Self.gpgvFolders)) }
      path = found
    }
    let keyringBytes: [UInt8]
    switch load(.file(keyring), what: "keyring", limit: Self.maxKeyringBytes, missing: true) {
    case .success(let bytes): keyringBytes = bytes
    case .failure(.missingSignature): return .failure(.keyring(path: keyring, reason: "does not exist"))
    case .failure(.unreadable(_, _, let reason)):
      return .failure(.keyring(path: keyring, reason: "cannot be read: \(reason)"))
    case .failure(let failure): return .failure(failure)
    }
    if let problem = Self.keyringProblem(keyringBytes) { return .failure(.keyring(path: keyring, reason: problem)) }
    let run: GPGVRun
    switch GPGVRun.make(gpgv: path) {
    case .success(let made): run = made
    case .failure(let failure): return .failure(failure)
    }
    if let failure = run.write(keyringBytes, to: run.keyring) {
      run.remove()
      return .failure(failure)
    }
    return .success(run)
  }

  /// Why gpgv could not use `bytes` as a keyring, or nil. gpgv (GnuPG 2.2) reads binary keyrings
  /// and keyboxes only: an ASCII-armored one fails with "invalid packet (ctb=2d)" and every
  /// signature then looks like one by an unknown key.
  package static func keyringProblem(_ bytes: [UInt8]) -> String? {
    let text = bytes.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
    if text.isEmpty { return "is empty: it holds no public key" }
    if text.starts(with: Array("-----BEGIN PGP".utf8)) {
      return
        "is ASCII-armored (-----BEGIN PGP PUBLIC KEY BLOCK-----), and gpgv reads binary keyrings only: convert it once with 'gpg --dearmor < KEY.asc > KEY.gpg' and name that file in 'keyring:'"
    }
    return nil
  }

  private func load(
    _ input: Input, what: String, limit: Int, missing: Bool = false
  ) -> Result<[UInt8], SignatureFailure> {
    switch input {
    case .bytes(let bytes):
      guard bytes.count <= limit else {
        return .failure(
          .unreadable(
            what: what, path: "(in memory)",
            reason: "it holds more than \(ByteSize.format(Int64(limit))), the most batchdl reads"))
      }
      return .success(bytes)
    case .file(let path):
      var info = stat()
      if missing && stat(path, &info) != 0 && errno == ENOENT { return .failure(.missingSignature(path: path)) }
      do {
        return .success(
          try ManifestLoader.readManifest(
            path, limit: limit,
            tooLarge: "it holds more than \(ByteSize.format(Int64(limit))), the most batchdl reads of a \(what)",
            allowsPipe: false))
      } catch {
        return .failure(.unreadable(what: what, path: path, reason: error.reason))
      }
    }
  }
}
