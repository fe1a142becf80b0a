import BatchDLPlan
import BatchDLSupport
import BatchDLTransfer
import Foundation

/// `signature: sidecar`: a finished download checked against its own detached signature
/// (`NAME.asc` or `NAME.sig`, fetched before planning) with gpgv, before it is put in place, as a
/// digest pin is.
enum SidecarSignature {
  /// Bytes a second gpgv is given to hash on top of its fixed time (a slow disk: 20MB/s).
  static let bytesPerSecond: Double = 20_000_000

  /// `signature` when the signature does not hold for the finished body of `result`; nil when it
  /// does.
  static func failure(of result: TransferResult, _ pin: SignaturePin) -> TransferFailure? {
    let check = SignatureCheck(
      timeout: SignatureCheck.defaultTimeout + Double(max(result.size, 0)) / bytesPerSecond)
    let verdict: Result<[String], SignatureFailure>
    if let file = result.file {
      verdict = check.verifyDetachedFile(path: file, signature: pin.bytes, keyring: pin.keyring)
    } else {
      verdict = check.verifyDetached(
        data: .bytes(result.body ?? []), signature: .bytes(pin.bytes), keyring: pin.keyring
      ).map(\.fingerprints)
    }
    guard case .failure(let failure) = verdict else { return nil }
    return TransferFailure(
      code: .signature,
      message:
        "the signature \(pin.display): \(failure.message.replacingOccurrences(of: "the checksum file", with: "the file")); nothing was written to 'to'",
      attempts: result.attempts)
  }
}

extension SignatureCheck {
  /// Checks the detached signature `signature` of the file at `path` (a finished partial file of
  /// this run, which no one else writes) against `keyring`, without reading the file into memory:
  /// gpgv hashes it where it is. On success, the fingerprints of the keys that made it.
  func verifyDetachedFile(path: String, signature: [UInt8], keyring: String) -> Result<[String], SignatureFailure> {
    guard signature.count <= Self.maxSignatureBytes else {
      return .failure(
        .unreadable(
          what: "signature file", path: "(in memory)",
          reason: "it holds more than \(ByteSize.format(Int64(Self.maxSignatureBytes))), the most batchdl reads"))
    }
    let run: GPGVRun
    switch prepare(keyring: keyring) {
    case .success(let prepared): run = prepared
    case .failure(let failure): return .failure(failure)
    }
    defer { run.remove() }
    let signaturePath = run.folder + "/data.sig"
    if let failure = run.write(signature, to: signaturePath) { return .failure(failure) }
    return run.gpgv(["--", signaturePath, path], timeout: timeout, clearSigned: false, keyring: keyring)
      .map(\.fingerprints)
  }
}
