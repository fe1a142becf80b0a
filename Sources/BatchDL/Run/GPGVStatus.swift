import BatchDLManifest
import BatchDLSupport
import Foundation

/// gpgv's status lines (`[GNUPG:] KEYWORD ARGS`, doc/DETAILS of GnuPG), gathered by signature.
package struct GPGVStatus {
  package struct Signature: Equatable {
    /// The long key ID of the status line (`GOODSIG`, `BADSIG`, `ERRSIG`...).
    package var keyID = ""
    /// The primary key's fingerprint (`VALIDSIG`'s last field, `ERRSIG`'s, or `KEY_CONSIDERED`'s
    /// when it ends in the key ID), when given.
    package var fingerprint: String?
    /// The fingerprint of the last key gpgv considered for it (`KEY_CONSIDERED`).
    package var considered: String?
    package var good = false
    package var valid = false
    package var bad = false
    package var expiredSignature = false
    package var expiredKey = false
    package var revokedKey = false
    /// `ERRSIG`'s return code: 4 an algorithm gpgv does not know, 5 a refused digest, 9 no public key.
    package var errorCode: Int?
    package var noPublicKey = false

    /// The key as a message names it: its fingerprint, else its key ID.
    package var key: String { fingerprint ?? (keyID.isEmpty ? "(unknown)" : keyID) }

    /// A signature gpgv could not check, or one by an expired key or an expired one: set aside
    /// beside a good signature.
    package var canBeSetAside: Bool {
      !good && !bad && !revokedKey && (errorCode != nil || noPublicKey || expiredKey || expiredSignature)
    }
  }

  /// The keys of the good signatures and the notes on those set aside.
  package struct Signers: Equatable {
    package var fingerprints: [String]
    package var setAside: [String]
  }

  package var signatures: [Signature] = []
  /// `ERROR` and `FAILURE` lines, escaped.
  package var errors: [String] = []
  package var noData = false
  package var plaintexts = 0

  package init(_ text: String) {
    for line in text.split(whereSeparator: \.isNewline) {
      guard line.hasPrefix("[GNUPG:] ") else { continue }
      let fields = line.dropFirst(9).split(separator: " ", omittingEmptySubsequences: true).map(String.init)
      guard let keyword = fields.first else { continue }
      let argument = { (index: Int) in index < fields.count ? fields[index] : "" }
      switch keyword {
      case "NEWSIG":
        signatures.append(Signature())
      case "KEY_CONSIDERED":
        var signature = current(startingNew: false)
        signature.considered = argument(1)
        setCurrent(signature)
      case "GOODSIG", "BADSIG", "EXPSIG", "EXPKEYSIG", "REVKEYSIG":
        var signature = current(startingNew: true)
        signature.keyID = argument(1)
        // A bad signature has no VALIDSIG: the key gpgv considered names it, when it is that key.
        if let considered = signature.considered, !signature.keyID.isEmpty, considered.hasSuffix(signature.keyID) {
          signature.fingerprint = considered
        }
        switch keyword {
        case "GOODSIG": signature.good = true
        case "BADSIG": signature.bad = true
        case "EXPSIG": signature.expiredSignature = true
        case "EXPKEYSIG": signature.expiredKey = true
        default: signature.revokedKey = true
        }
        setCurrent(signature)
      case "ERRSIG":
        var signature = current(startingNew: true)
        signature.keyID = argument(1)
        signature.errorCode = Int(argument(6)) ?? -1
        if fields.count > 7, fields[7] != "-" { signature.fingerprint = fields[7] }
        setCurrent(signature)
      case "NO_PUBKEY":
        var signature = current(startingNew: false)
        signature.noPublicKey = true
        if signature.keyID.isEmpty { signature.keyID = argument(1) }
        setCurrent(signature)
      case "VALIDSIG":
        var signature = current(startingNew: false)
        signature.valid = true
        signature.fingerprint = fields.count > 10 ? fields[10] : argument(1)
        setCurrent(signature)
      case "NODATA":
        noData = true
      case "ERROR", "FAILURE":
        errors.append(ShownText.escaped(fields.joined(separator: " "), limit: 120))
      case "PLAINTEXT":
        plaintexts += 1
      default:
        break
      }
    }
  }

  /// The signature being reported on; a new one when the last already has its result and
  /// `startingNew` (gpgv starts each with `NEWSIG`, but not every version did).
  private mutating func current(startingNew: Bool) -> Signature {
    if let last = signatures.last {
      let decided =
        last.good || last.bad || last.expiredSignature || last.expiredKey || last.revokedKey
        || last.errorCode != nil
      if !(startingNew && decided) { return last }
    }
    signatures.append(Signature())
    return Signature()
  }

  private mutating func setCurrent(_ signature: Signature) {
    if signatures.isEmpty { signatures.append(signature) } else { signatures[signatures.count - 1] = signature }
  }

  /// The verdict (see `SignatureCheck`); `stderr` is gpgv's last words, for a failure.
  package func verdict(
    exitStatus: Int32, clearSigned: Bool, keyring: String, stderr: String
  ) -> Result<Signers, SignatureFailure> {
    let said = stderr.isEmpty ? "" : ": \(stderr)"
    if let bad = signatures.first(where: \.bad) { return .failure(.badSignature(key: bad.key)) }
    if let revoked = signatures.first(where: \.revokedKey) { return .failure(.revokedKey(key: revoked.key)) }
    if !errors.isEmpty {
      return .failure(.failed("gpgv reported an error (\(errors.joined(separator: "; ")))\(said)"))
    }
    let good = signatures.filter { $0.good && $0.valid }
    if !good.isEmpty {
      let others = signatures.filter { !($0.good && $0.valid) }
      if let other = others.first(where: { !$0.canBeSetAside }) {
        return .failure(.failed("gpgv gave no result for the signature by key \(other.key)\(said)"))
      }
      if clearSigned && plaintexts != 1 {
        return .failure(.failed("gpgv found \(plaintexts) signed texts in the clear-signed file, not one\(said)"))
      }
      if exitStatus != 0 && others.isEmpty {
        return .failure(.failed("gpgv exited with status \(exitStatus) after good signatures\(said)"))
      }
      return .success(Signers(fingerprints: good.map(\.key), setAside: others.map(Self.describe)))
    }
    if let expired = signatures.first(where: \.expiredKey) { return .failure(.expiredKey(key: expired.key)) }
    if let expired = signatures.first(where: \.expiredSignature) {
      return .failure(.expiredSignature(key: expired.key))
    }
    let unknown = signatures.filter { $0.noPublicKey || $0.errorCode == 9 }
    if !unknown.isEmpty { return .failure(.unknownKey(keys: unknown.map(\.key), keyring: keyring)) }
    if let weak = signatures.first(where: { $0.errorCode == 5 }) { return .failure(.weakDigest(key: weak.key)) }
    if let other = signatures.first(where: { $0.errorCode != nil }) {
      let code = other.errorCode ?? -1
      let why = code == 4 ? "it uses an algorithm gpgv does not know" : "gpgv error \(code)"
      return .failure(.failed("gpgv could not check the signature by key \(other.key): \(why)\(said)"))
    }
    if noData || signatures.isEmpty { return .failure(.notASignature(detail: stderr)) }
    return .failure(.failed("gpgv verified no signature (exit status \(exitStatus))\(said)"))
  }

  private static func describe(_ signature: Signature) -> String {
    if signature.noPublicKey || signature.errorCode == 9 {
      return "a signature by key \(signature.key), which is not in the keyring"
    }
    if signature.expiredKey { return "a signature by key \(signature.key), which has expired" }
    if signature.expiredSignature { return "an expired signature by key \(signature.key)" }
    return "a signature by key \(signature.key) gpgv could not check (error \(signature.errorCode ?? -1))"
  }
}
