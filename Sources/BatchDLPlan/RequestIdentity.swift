import BatchDLManifest
import BatchDLSupport
import Crypto

/// What makes two requests the same: the hash of an entry's session, method, headers and body,
/// to which each URL is added (`RequestKey`), and what makes two downloads the same content.
extension PlanBuilder {
  /// What every task of one entry shares: the hash of everything but the URL, and where it lives.
  package struct EntryContext {
    package var session: Int32
    package var entry: Int32
    package var kind: TaskKind
    package var method: String
    package var priority: Priority
    package var prefix: SHA256
    /// The digest of everything but the URL (session kind, method, headers, body): requests with
    /// the same expected content are one only when this is the same too.
    package var identity: RequestKey
  }

  /// What makes two downloads the same content: their expected SHA-256, in one session, with the
  /// same method, headers and body.
  package struct ContentName: Hashable {
    package var sha256: String
    package var session: Int32
    package var identity: RequestKey
  }

  package func context(
    session: Session, sessionIndex: Int, entryIndex: Int, kind: TaskKind, method: String, headers: [Header],
    body: String, priority: Priority
  ) -> EntryContext {
    let effective = session.headers.merged(with: headers)
    var hasher = SHA256()
    hasher.update(data: Array("batchdl-request/1\n\(session.kind.rawValue)\n\(method)\n".utf8))
    // Sessions that trust, present or speak other things never share a request (nor one that
    // trusts nothing with one that checks); without any, the identity is as it always was.
    if let trust = session.connectionIdentity(relativeTo: manifest.absoluteDirectory) {
      hasher.update(data: Array("tls:\(trust)\n".utf8))
    }
    for header in effective.sorted(by: { $0.name.lowercased() < $1.name.lowercased() }) {
      hasher.update(data: Array("\(header.name.lowercased()):\(header.value)\n".utf8))
    }
    hasher.update(data: Array("\nbody:\(body)\nurl:".utf8))
    let identity = hasher.finalize().withUnsafeBytes { raw in
      RequestKey(
        high: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
        low: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
    }
    return EntryContext(
      session: Int32(sessionIndex), entry: Int32(entryIndex), kind: kind, method: method, priority: priority,
      prefix: hasher, identity: identity)
  }

  /// The body's part of the request identity: a digest of inline text, the resolved path of a file.
  package func bodyIdentity(_ spec: TaskSpec) -> String {
    if let body = spec.body { return "text:" + SHA256.hash(data: Array(body.utf8)).hexString }
    if let file = spec.bodyFile ?? spec.from { return "file:" + FileAccess.resolve(file, against: manifest.directory) }
    if !spec.form.isEmpty {
      var hasher = SHA256()
      for field in spec.form {
        let value = field.file.map { "@" + FileAccess.resolve($0, against: manifest.directory) } ?? field.value
        hasher.update(data: Array("\(field.name)=\(value.utf8.count):\(value)\n".utf8))
      }
      return "form:" + hasher.finalize().hexString
    }
    return ""
  }
}

extension Session {
  /// What a session's connections trust, present and speak, when that is not the default: `tls:`
  /// (paths under `folder` relative to it, the key's password as an HMAC keyed with the key file's
  /// bytes, so that the state folder never holds a value to guess it from), `insecure:` and
  /// `network.http_version`. Requests and descriptors of sessions whose identities differ are
  /// never shared.
  package func connectionIdentity(relativeTo folder: String) -> String? {
    let who = access.requestIdentity
    guard insecure || !tls.isEmpty || network.httpVersion != .auto || !who.isEmpty else { return nil }
    var parts = [insecure ? "insecure" : "", network.httpVersion.rawValue, tls.identity(relativeTo: folder)]
    // Who the requests are made as (never a password, nor the proxy): requests of sessions let in
    // as other users are never one request.
    if !who.isEmpty { parts.append("access:" + who) }
    if let password = tls.keyPassword, let keyFile = tls.clientKey ?? tls.clientCert,
      let key = try? FileAccess.readAll(keyFile)
    {
      let code = HMAC<SHA256>.authenticationCode(for: Array(password.utf8), using: SymmetricKey(data: key))
      parts.append("password:" + code.withUnsafeBytes { Array($0.prefix(16)) }.hexString)
    }
    return parts.joined(separator: "\u{1F}")
  }
}
