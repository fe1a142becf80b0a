import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest

private let sha256A = String(repeating: "a", count: 64)
private let sha256B = String(repeating: "b", count: 64)

/// Why a test could not run: gpg or gpgv is missing (scripts/setup installs them).
private struct ToolMissing: Error, CustomStringConvertible {
  var description: String
}

private typealias Keys = OpenPGPKeys

/// Makes the keys, or records why it cannot (a missing tool fails the test, it does not skip it).
private func makeKeys(sourceLocation: SourceLocation = #_sourceLocation) -> Keys? {
  do {
    return try Keys()
  } catch {
    Issue.record("\(error)", sourceLocation: sourceLocation)
    return nil
  }
}

private func bytes(_ path: String) -> [UInt8] {
  Array(FileManager.default.contents(atPath: path) ?? Data())
}

/// Checking checksum files' OpenPGP signatures with the real gpgv, keys made for each test.
@Suite struct SignatureCheckTests {
  let check = SignatureCheck()

  @Test func aGoodDetachedSignatureGivesTheBytesChecked() throws {
    guard let keys = makeKeys() else { return }
    let text = "\(sha256A)  a.iso\n"
    let (data, signature) = try keys.signDetached("SHA256SUMS", text)
    let result = check.verifyDetached(data: .file(data), signature: .file(signature), keyring: keys.keyring)
    let signed = try result.get()
    #expect(signed.bytes == Array(text.utf8) && signed.document == signed.bytes)
    #expect(signed.fingerprints == [try keys.fingerprint(Keys.test)])
    #expect(signed.setAside.isEmpty)
    // In memory too, and with an ASCII-armored signature.
    let armored = data + ".asc"
    try keys.run(["--local-user", Keys.test, "--armor", "--output", armored, "--detach-sign", data])
    let fromMemory = check.verifyDetached(
      data: .bytes(Array(text.utf8)), signature: .bytes(bytes(armored)), keyring: keys.keyring)
    #expect((try? fromMemory.get())?.bytes == Array(text.utf8))
  }

  @Test func aGoodClearSignedFileGivesOnlyItsSignedText() throws {
    guard let keys = makeKeys() else { return }
    let signedText = "\(sha256A)  a.iso\n-- a line gpg dash-escapes\nSHA256 (b.iso) = \(sha256B)\n"
    let clearSigned = try keys.clearSign("SHA256SUMS", signedText)
    // Lines an attacker adds before and after the message are not signed, and are never read.
    let wrapped = "\(sha256B)  before.iso\n" + clearSigned + "\(sha256B)  after.iso\n\(sha256B)  a.iso\n"
    let result = check.verifyClearSigned(.bytes(Array(wrapped.utf8)), keyring: keys.keyring)
    let signed = try result.get()
    #expect(String(decoding: signed.bytes, as: UTF8.self) == signedText)
    #expect(signed.fingerprints == [try keys.fingerprint(Keys.test)])
    #expect(signed.document == Array(wrapped.utf8))
    let file = ChecksumFile.parse(signedText: signed.bytes, of: signed.document, file: "SHA256SUMS.asc")
    #expect(file.entries.map(\.name) == ["a.iso", "b.iso"])
    #expect(file.entries(named: "a.iso").first?.digest.hex == sha256A)
    #expect(file.entries(named: "before.iso").isEmpty && file.entries(named: "after.iso").isEmpty)
    // The dash-escaped line is one bad line, shown where it is in the file the user has.
    #expect(file.diagnostics.map(\.mark.line) == [6], "\(file.diagnostics)")
    #expect(file.diagnostics.first?.mark.column == 3)
    // Read as it is, the file gives nothing.
    #expect(ChecksumFile.parse(Array(wrapped.utf8), file: "SHA256SUMS.asc").entries.isEmpty)
  }

  @Test func changedDataIsABadSignature() throws {
    guard let keys = makeKeys() else { return }
    let (_, signature) = try keys.signDetached("SHA256SUMS", "\(sha256A)  a.iso\n")
    let tampered = Array("\(sha256B)  a.iso\n".utf8)
    let result = check.verifyDetached(data: .bytes(tampered), signature: .file(signature), keyring: keys.keyring)
    #expect(result == .failure(.badSignature(key: try keys.fingerprint(Keys.test))))
    // A clear-signed file whose signed text was changed.
    let clearSigned = try keys.clearSign("OTHER", "\(sha256A)  a.iso\n")
    let changed = clearSigned.replacingOccurrences(of: sha256A, with: sha256B)
    let clearResult = check.verifyClearSigned(.bytes(Array(changed.utf8)), keyring: keys.keyring)
    guard case .failure(.badSignature) = clearResult else {
      Issue.record("\(clearResult)")
      return
    }
    #expect(clearResult.failureMessage?.hasPrefix("BAD signature by key ") == true)
  }

  @Test func aSignatureByAKeyNotInTheKeyringIsAnUnknownKey() throws {
    guard let keys = makeKeys() else { return }
    let (data, signature) = try keys.signDetached("SHA256SUMS", "\(sha256A)  a.iso\n", as: [Keys.other])
    let result = check.verifyDetached(data: .file(data), signature: .file(signature), keyring: keys.keyring)
    let other = try keys.fingerprint(Keys.other)
    #expect(result == .failure(.unknownKey(keys: [other], keyring: keys.keyring)))
    #expect(
      result.failureMessage == "the signature was made by key \(other), which is not in the keyring '\(keys.keyring)'")
  }

  @Test func aGoodSignatureBesideOneByAnUnknownKeyHolds() throws {
    guard let keys = makeKeys() else { return }
    let (data, signature) = try keys.signDetached(
      "SHA256SUMS", "\(sha256A)  a.iso\n", as: [Keys.test, Keys.other])
    let signed = try check.verifyDetached(data: .file(data), signature: .file(signature), keyring: keys.keyring).get()
    #expect(signed.fingerprints == [try keys.fingerprint(Keys.test)])
    #expect(signed.setAside == ["a signature by key \(try keys.fingerprint(Keys.other)), which is not in the keyring"])
  }

  @Test func aMissingOrGarbageSignatureFails() throws {
    guard let keys = makeKeys() else { return }
    let data = keys.folder.write("SHA256SUMS", "\(sha256A)  a.iso\n")
    let missing = keys.folder.path + "/SHA256SUMS.sig"
    let result = check.verifyDetached(data: .file(data), signature: .file(missing), keyring: keys.keyring)
    #expect(result == .failure(.missingSignature(path: missing)))
    #expect(result.failureMessage == "the signature file '\(missing)' does not exist")
    for garbage in ["garbage\n", "", "-----BEGIN PGP SIGNATURE-----\n\nAAAA\n-----END PGP SIGNATURE-----\n"] {
      let found = check.verifyDetached(
        data: .file(data), signature: .bytes(Array(garbage.utf8)), keyring: keys.keyring)
      guard case .failure(let failure) = found else {
        Issue.record("garbage \(garbage.debugDescription) verified")
        continue
      }
      switch failure {
      case .notASignature, .failed: break
      default: Issue.record("garbage \(garbage.debugDescription): \(failure)")
      }
    }
    // A signed message that carries its own data is no detached signature of the file.
    let opaque = keys.folder.path + "/opaque.gpg"
    let other = keys.folder.write("OTHER", "\(sha256B)  a.iso\n")
    try keys.run(["--local-user", Keys.test, "--output", opaque, "--sign", other])
    let swapped = check.verifyDetached(data: .file(data), signature: .file(opaque), keyring: keys.keyring)
    #expect((try? swapped.get()) == nil, "\(swapped)")
    // A plain file is no clear-signed one.
    let plain = check.verifyClearSigned(.file(data), keyring: keys.keyring)
    guard case .failure(.notASignature) = plain else {
      Issue.record("\(plain)")
      return
    }
  }

  @Test func theKeyringMustBeABinaryKeyringThatExists() throws {
    guard let keys = makeKeys() else { return }
    let (data, signature) = try keys.signDetached("SHA256SUMS", "\(sha256A)  a.iso\n")
    let armored = keys.folder.path + "/test.asc"
    try keys.run(["--armor", "--output", armored, "--export", Keys.test])
    let result = check.verifyDetached(data: .file(data), signature: .file(signature), keyring: armored)
    guard case .failure(.keyring(armored, let reason)) = result else {
      Issue.record("\(result)")
      return
    }
    #expect(reason.contains("ASCII-armored") && reason.contains("gpg --dearmor"))
    // What the message advises works.
    let dearmored = keys.folder.path + "/dearmored.gpg"
    try keys.run(["--output", dearmored, "--dearmor", armored])
    #expect(
      (try? check.verifyDetached(data: .file(data), signature: .file(signature), keyring: dearmored).get()) != nil)
    let missing = keys.folder.path + "/none.gpg"
    #expect(
      check.verifyDetached(data: .file(data), signature: .file(signature), keyring: missing)
        == .failure(.keyring(path: missing, reason: "does not exist")))
    let empty = keys.folder.write("empty.gpg", "")
    #expect(
      check.verifyDetached(data: .file(data), signature: .file(signature), keyring: empty)
        == .failure(.keyring(path: empty, reason: "is empty: it holds no public key")))
    // A keybox (gpg's own pubring.kbx) is read too.
    let keybox = keys.home + "/pubring.kbx"
    #expect((try? check.verifyDetached(data: .file(data), signature: .file(signature), keyring: keybox).get()) != nil)
  }

  @Test func aSHA1SignatureIsRefused() throws {
    guard let keys = makeKeys() else { return }
    let (data, signature) = try keys.signDetached(
      "SHA256SUMS", "\(sha256A)  a.iso\n", extra: ["--digest-algo", "SHA1"])
    let result = check.verifyDetached(data: .file(data), signature: .file(signature), keyring: keys.keyring)
    #expect(result == .failure(.weakDigest(key: try keys.fingerprint(Keys.test))))
  }

  @Test func aSignatureByAnExpiredOrRevokedKeyFailsThoughGpgvExitsZero() throws {
    guard let keys = makeKeys() else { return }
    let past = ["--faked-system-time", "20200101T000000"]
    try keys.run(past + ["--quick-gen-key", "expired <expired@example.invalid>", "ed25519", "sign", "1d"])
    let (data, signature) = try keys.signDetached(
      "SHA256SUMS", "\(sha256A)  a.iso\n", as: ["expired@example.invalid"], extra: past)
    let expiredKeyring = keys.folder.path + "/expired.gpg"
    try keys.run(["--output", expiredKeyring, "--export", "expired@example.invalid"])
    let expired = check.verifyDetached(data: .file(data), signature: .file(signature), keyring: expiredKeyring)
    #expect(expired == .failure(.expiredKey(key: try keys.fingerprint("expired@example.invalid"))))

    try keys.run(["--quick-gen-key", "revoked <revoked@example.invalid>", "ed25519", "sign", "never"])
    let revokedFingerprint = try keys.fingerprint("revoked@example.invalid")
    let (revokedData, revokedSignature) = try keys.signDetached(
      "REVOKED", "\(sha256A)  a.iso\n", as: ["revoked@example.invalid"])
    // gpg keeps a revocation certificate of each key it makes, its armor line commented out.
    let certificate = keys.home + "/openpgp-revocs.d/\(revokedFingerprint).rev"
    let text = (try? String(contentsOfFile: certificate, encoding: .utf8)) ?? ""
    let revocation = keys.folder.write(
      "revocation.asc", text.replacingOccurrences(of: ":-----BEGIN", with: "-----BEGIN"))
    try keys.run(["--import", revocation])
    let revokedKeyring = keys.folder.path + "/revoked.gpg"
    try keys.run(["--output", revokedKeyring, "--export", "revoked@example.invalid"])
    let revoked = check.verifyDetached(
      data: .file(revokedData), signature: .file(revokedSignature), keyring: revokedKeyring)
    #expect(revoked == .failure(.revokedKey(key: revokedFingerprint)))
  }

  @Test func withoutGpgvTheMessageSaysWhatToInstall() {
    let result = SignatureCheck(gpgv: "/nonexistent/gpgv").verifyDetached(
      data: .bytes([]), signature: .bytes([]), keyring: "/nonexistent/keyring.gpg")
    #expect(result == .failure(.gpgvMissing(looked: ["/nonexistent"])))
    #expect(result.failureMessage?.contains("install the Debian package gpgv") == true)
  }

  @Test func aGpgvThatHangsIsKilledAndOneThatFloodsIsRefused() throws {
    let folder = TemporaryDirectory()
    let keyring = folder.write("keyring.gpg", "\u{99}binary")
    let hanging = folder.write("hanging-gpgv", "#!/bin/sh\nexec sleep 60\n")
    let flooding = folder.write("flooding-gpgv", "#!/bin/sh\nexec head -c 3000000 /dev/zero\n")
    for script in [hanging, flooding] { chmod(script, 0o755) }
    let start = Date()
    let slow = SignatureCheck(gpgv: hanging, timeout: 0.5).verifyDetached(
      data: .bytes([1]), signature: .bytes([2]), keyring: keyring)
    #expect(slow == .failure(.timedOut(seconds: 0.5)))
    #expect(Date().timeIntervalSince(start) < 10)
    #expect(slow.failureMessage == "gpgv did not finish within 0.5 s and was stopped")
    let chatty = SignatureCheck(gpgv: flooding).verifyDetached(
      data: .bytes([1]), signature: .bytes([2]), keyring: keyring)
    #expect(chatty == .failure(.failed("gpgv wrote more than 1MB of status lines")))
  }

  // MARK: - Status lines (no gpgv needed)

  static let fingerprint = "ED819178524387B456FF8B6266C9054A01B4FC1D"
  static let otherFingerprint = "BC4035C262CD5EFF95A2FC4F05D9FD583F88BF8A"
  static let good = """
    [GNUPG:] NEWSIG test@example.invalid
    [GNUPG:] KEY_CONSIDERED \(fingerprint) 0
    [GNUPG:] GOODSIG 66C9054A01B4FC1D batchdl test <test@example.invalid>
    [GNUPG:] VALIDSIG \(fingerprint) 2026-11-27 1795743352 0 4 0 22 8 00 \(fingerprint)
    """
  static let unknown = """
    [GNUPG:] NEWSIG other@example.invalid
    [GNUPG:] ERRSIG 05D9FD583F88BF8A 22 8 00 1795743381 9 \(otherFingerprint)
    [GNUPG:] NO_PUBKEY 05D9FD583F88BF8A
    """

  /// Status output as gpgv 2.2.40 writes it, its exit status, and the verdict.
  static let verdicts: [(status: String, exit: Int32, clearSigned: Bool, verdict: Result<[String], SignatureFailure>)] =
    [
      (good, 0, false, .success([fingerprint])),
      ("[GNUPG:] PLAINTEXT 74 0 \n" + good, 0, true, .success([fingerprint])),
      (good, 0, true, .failure(.failed("gpgv found 0 signed texts in the clear-signed file, not one"))),
      (good + "\n" + unknown, 2, false, .success([fingerprint])),
      (unknown + "\n" + good, 2, false, .success([fingerprint])),
      (unknown, 2, false, .failure(.unknownKey(keys: [otherFingerprint], keyring: "k.gpg"))),
      (
        "[GNUPG:] NEWSIG\n[GNUPG:] BADSIG 66C9054A01B4FC1D batchdl test <test@example.invalid>", 1, false,
        .failure(.badSignature(key: "66C9054A01B4FC1D"))
      ),
      (
        good + "\n[GNUPG:] NEWSIG\n[GNUPG:] BADSIG 05D9FD583F88BF8A other", 1, false,
        .failure(.badSignature(key: "05D9FD583F88BF8A"))
      ),
      (
        good.replacingOccurrences(of: "GOODSIG", with: "EXPKEYSIG"), 0, false,
        .failure(.expiredKey(key: fingerprint))
      ),
      (
        good.replacingOccurrences(of: "GOODSIG", with: "REVKEYSIG"), 0, false,
        .failure(.revokedKey(key: fingerprint))
      ),
      (
        good.replacingOccurrences(of: "GOODSIG", with: "EXPSIG"), 1, false,
        .failure(.expiredSignature(key: fingerprint))
      ),
      (
        good + "\n" + good.replacingOccurrences(of: "GOODSIG", with: "REVKEYSIG"), 0, false,
        .failure(.revokedKey(key: fingerprint))
      ),
      (
        "[GNUPG:] NEWSIG\n[GNUPG:] ERRSIG 66C9054A01B4FC1D 22 2 00 1795743624 5 \(fingerprint)", 2, false,
        .failure(.weakDigest(key: fingerprint))
      ),
      (
        "[GNUPG:] PLAINTEXT 74 0 \n" + good + "\n[GNUPG:] ERROR proc_pkt.plaintext 89_BAD_DATA", 2, true,
        .failure(.failed("gpgv reported an error (ERROR proc_pkt.plaintext 89_BAD_DATA)"))
      ),
      ("[GNUPG:] NODATA 1\n[GNUPG:] NODATA 2", 2, false, .failure(.notASignature(detail: ""))),
      ("", 2, false, .failure(.notASignature(detail: ""))),
      (
        good.replacingOccurrences(of: "[GNUPG:] VALIDSIG", with: "[GNUPG:] X"), 0, false,
        .failure(.failed("gpgv verified no signature (exit status 0)"))
      ),
      (good, 2, false, .failure(.failed("gpgv exited with status 2 after good signatures"))),
      ("GOODSIG 66C9054A01B4FC1D forged on another fd\n", 0, false, .failure(.notASignature(detail: ""))),
    ]

  @Test(arguments: verdicts.indices)
  func statusLinesGiveTheVerdict(_ index: Int) {
    let item = Self.verdicts[index]
    let found = GPGVStatus(item.status).verdict(
      exitStatus: item.exit, clearSigned: item.clearSigned, keyring: "k.gpg", stderr: "")
    #expect(found.map(\.fingerprints) == item.verdict, "\(item.status)")
  }
}

extension Result where Failure == SignatureFailure {
  fileprivate var failureMessage: String? {
    if case .failure(let failure) = self { return failure.message }
    return nil
  }
}
