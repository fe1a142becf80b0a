import BatchDLManifest
import BatchDLSupport
import BatchDLTransfer

/// `checksums: sidecar` and `unlisted:`: a download checked against its own `NAME.sha256` or
/// `NAME.sha512` (and `NAME.asc` or `NAME.sig`), and what a file no entry names gets.
extension PlanBuilder {
  /// The verdict for a download of `url` that `spec` (`checksums: sidecar`) covers. A sidecar
  /// itself is a document: it is not checked, and it is placed after the file it covers, as the
  /// very bytes the plan read. A file whose sidecars the descriptors do not hold yet is noted in
  /// `wantedSidecars` (the command fetches them and plans again) and is not checked in this plan.
  package mutating func sidecarVerdict(
    _ spec: ChecksumSpec, url: NormalizedURL, session: Session, sessionIndex: Int, entryIndex: Int, ownDigest: Bool
  ) -> ChecksumVerdict {
    if ownDigest || isSidecar(url, of: spec) { return .none }
    let key = DescriptorSet.key(of: url.text, for: session, in: manifest)
    guard let found = descriptorSet?.sidecars[key] else {
      if wantedSidecarKeys.insert(key).inserted {
        wantedSidecars.append(
          SidecarWant(
            url: url.text, session: Int32(sessionIndex), entry: Int32(entryIndex), signature: spec.signatureSidecar))
      }
      return .none
    }
    let name = url.fileName ?? ""
    let shownName = ShownText.escaped(name, limit: 200)
    var verified = true
    var digest: ExpectedDigest?
    let checksum = found.checksum
    recordSidecar(checksum, session: sessionIndex, entry: entryIndex)
    if let failure = checksum.failure {
      return .fail(
        DocumentFailure(code: .descriptor, message: redactor.text("the sidecar \(checksum.display): \(failure)")))
    } else if let body = checksum.body, let sidecarURL = checksum.url {
      switch SidecarChecksum.digest(body, fileName: name, file: checksum.display) {
      case .success(let value):
        digest = value
        coverBySidecar(sidecarURL, sha256: checksum.sha256)
      case .failure(let why):
        return .fail(
          DocumentFailure(
            code: .descriptor, message: redactor.text("cannot read the sidecar \(checksum.display): \(why)")))
      }
    } else if checksum.absent {
      let failure = DocumentFailure(
        code: .checksumMissing,
        message: redactor.text(
          "no sidecar checksum file beside '\(shownName)' (\(checksum.display)); \(unlistedHint(spec, sessionIndex: sessionIndex, entryIndex: entryIndex))"
        ))
      switch unlisted(spec, failure) {
      case .unverified: verified = false
      case let other: return other
      }
    } else {
      // No copy to read (`plan --offline` before any run): not checked in this plan.
      if weakWarned.insert("sidecar\n\(sessionIndex)").inserted {
        partial = true
        diagnostics.warning(
          session.mark,
          "no stored copy of the sidecar checksum files of some files (\(checksum.display)): they are not checked in this plan; 'batchdl plan' (without --offline) or 'batchdl run' fetches them"
        )
      }
      return .none
    }
    if spec.signatureSidecar, let signature = found.signature {
      recordSidecar(signature, session: sessionIndex, entry: entryIndex)
      if let failure = signature.failure {
        return .fail(
          DocumentFailure(code: .signature, message: redactor.text("the signature \(signature.display): \(failure)")))
      } else if let body = signature.body, let signatureURL = signature.url, let keyring = spec.keyring {
        lastSignature = SignaturePin(
          bytes: body, keyring: FileAccess.resolve(keyring, against: manifest.directory), display: signature.display)
        coverBySidecar(signatureURL, sha256: signature.sha256)
      } else if signature.absent {
        let failure = DocumentFailure(
          code: .signature,
          message: redactor.text(
            "no sidecar signature beside '\(shownName)' (\(signature.display)), and keyring: says it must be signed; \(unlistedHint(spec, sessionIndex: sessionIndex, entryIndex: entryIndex))"
          ))
        switch unlisted(spec, failure) {
        case .unverified: verified = false
        case let other: return other
        }
      }
    }
    if !verified { return .unverified }
    if let digest { return .digest(digest, others: [], byFileName: false) }
    return .none
  }

  /// What `unlisted:` gives a file no entry names (`failure`: what `fail` says).
  package func unlisted(_ spec: ChecksumSpec, _ failure: DocumentFailure) -> ChecksumVerdict {
    switch spec.unlisted {
    case .fail: return .fail(failure)
    case .fetch: return .unverified
    case .skip: return .skip
    }
  }

  /// What the user can do, where the failure is shown, for a file of entry `entryIndex` that the
  /// checksum files (or sidecars) of `spec` do not name: an `index:` entry takes no `sha256:`.
  package func unlistedHint(_ spec: ChecksumSpec, sessionIndex: Int, entryIndex: Int) -> String {
    let unlisted =
      "set 'unlisted: fetch' (fetched without an upstream digest) or 'unlisted: skip' (left out) beside checksums: at \(spec.mark)"
    switch entry(sessionIndex, entryIndex) {
    case .index?: return unlisted + ", or leave the file out with exclude:"
    case .list?: return "give its line a sha256:HEX column, or " + unlisted
    default: return "add the file's sha256: to the task, or " + unlisted
    }
  }

  /// What the user can do for a file whose entry has no usable hash (a broken line, two files that
  /// disagree): not `unlisted:`, which is for files no entry names.
  package func ownDigestHint(_ sessionIndex: Int, _ entryIndex: Int) -> String {
    switch entry(sessionIndex, entryIndex) {
    case .index?: return "ask upstream to fix the checksum file, or leave the file out with exclude:"
    case .list?: return "give its line a sha256:HEX column, or ask upstream to fix the checksum file"
    default: return "add the file's sha256: to the task, or ask upstream to fix the checksum file"
    }
  }

  private func entry(_ sessionIndex: Int, _ entryIndex: Int) -> TaskEntry? {
    guard manifest.sessions.indices.contains(sessionIndex),
      manifest.sessions[sessionIndex].tasks.indices.contains(entryIndex)
    else { return nil }
    return manifest.sessions[sessionIndex].tasks[entryIndex]
  }

  /// Whether `url` is itself a sidecar `spec` reads (a name ending in `.sha256` or `.sha512`; with
  /// `signature: sidecar`, `.asc` or `.sig`).
  private func isSidecar(_ url: NormalizedURL, of spec: ChecksumSpec) -> Bool {
    let name = Array((url.fileName ?? "").utf8)
    let extensions =
      SidecarWant.checksumExtensions + (spec.signatureSidecar ? SidecarWant.signatureExtensions : [])
    return extensions.contains { name.count > $0.utf8.count && name.reversed().starts(with: $0.utf8.reversed()) }
  }

  /// The covered file is placed before its sidecar, and a download of the sidecar must be the bytes
  /// the plan read.
  private mutating func coverBySidecar(_ sidecarURL: String, sha256: String?) {
    let key = documentKey(sidecarURL)
    lastCoverage.append(key)
    if let sha256 {
      pinPublished(key, .digest(ExpectedDigest(algorithm: .sha256, hex: sha256), others: [], byFileName: false))
    }
  }

  /// Lists a sidecar among the plan's descriptors, once.
  private mutating func recordSidecar(_ sidecar: SidecarDocument, session: Int, entry: Int) {
    guard sidecar.url != nil || sidecar.failure != nil,
      recordedDocuments.insert("sidecar\n" + sidecar.display).inserted
    else { return }
    var planned = PlannedDescriptor(
      session: Int32(session), entry: Int32(entry), url: sidecar.display,
      outcome: sidecar.failure != nil ? .failed : sidecar.outcome, sha256: sidecar.sha256)
    if let failure = sidecar.failure {
      planned.failure = redactor.text("the sidecar \(sidecar.display): \(failure)")
    } else if sidecar.outcome == .failed {
      failAsOneTask(&planned, redactor.text("the sidecar \(sidecar.display): \(sidecar.problem ?? "cannot fetch it")"))
    }
    descriptors.append(planned)
  }
}
