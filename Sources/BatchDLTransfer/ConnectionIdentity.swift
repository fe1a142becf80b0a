import Crypto

/// Which connections a request may go over: everything a session's connections trust, present
/// and speak. Requests whose identities differ never share a connection (nor a TLS session to
/// resume): each identity has its connection pool (`SessionShare`), so that whether a connection
/// is reused is batchdl's decision, not libcurl's matching (libcurl 7.88 reuses a connection made
/// with another session's client key or key password when the certificate's path is the same,
/// and a connection of another `http_version`).
///
/// The key's password is kept as its SHA-256 (compared, never shown: `description` says only
/// whether one is set). The interface a request is bound to is not part of it: the network policy
/// chooses it per request, and libcurl never reuses a connection bound elsewhere.
package struct ConnectionIdentity: Hashable, Sendable, CustomStringConvertible {
  package var caFile: String?
  package var caPath: String?
  package var clientCert: String?
  package var clientKey: String?
  /// SHA-256 of the client key's password, when one is given.
  package var keyPasswordDigest: [UInt8]?
  package var pinnedPublicKey: String?
  package var minVersion: TLSSettings.Version?
  package var insecure: Bool
  package var httpVersion: HTTPVersion
  /// The proxy route and credentials (`AccessSettings.identity`: secrets only as digests).
  package var access = ""

  package init(tls: TLSSettings, insecure: Bool, httpVersion: HTTPVersion, access: AccessSettings = AccessSettings()) {
    caFile = tls.caFile
    caPath = tls.caPath
    clientCert = tls.clientCert
    clientKey = tls.clientKey
    keyPasswordDigest = tls.keyPassword.map { Array(SHA256.hash(data: Array($0.utf8))) }
    pinnedPublicKey = tls.pinnedPublicKey
    minVersion = tls.minVersion
    self.insecure = insecure
    self.httpVersion = httpVersion
    if !access.isEmpty { self.access = access.identity }
  }

  /// The identity of a transfer's connections.
  package init(_ spec: borrowing TransferSpec) {
    self.init(tls: spec.tls, insecure: spec.insecure, httpVersion: spec.httpVersion, access: spec.access)
  }

  /// The settings, for a message; the key's password only as set or not.
  package var description: String {
    var parts = ["http_version \(httpVersion.rawValue)"]
    if insecure { parts.append("insecure") }
    if let caFile { parts.append("ca_file \(caFile)") }
    if let caPath { parts.append("ca_path \(caPath)") }
    if let clientCert { parts.append("client_cert \(clientCert)") }
    if let clientKey { parts.append("client_key \(clientKey)") }
    if keyPasswordDigest != nil { parts.append("key_password set") }
    if let pinnedPublicKey { parts.append("pinned_pubkey \(pinnedPublicKey)") }
    if let minVersion { parts.append("min_version \(minVersion.rawValue)") }
    if !access.isEmpty { parts.append("access \(access)") }
    return parts.joined(separator: ", ")
  }
}

/// Which share handle a transfer takes (`SessionShare`): one per connection identity, shared by
/// the sessions that have it; a session that keeps cookies has its own, since its cookie store is
/// in its share.
package struct ShareKey: Hashable, Sendable {
  package var identity: ConnectionIdentity
  /// The session, when it keeps cookies (`TransferSpec.cookieJar`); nil otherwise.
  package var cookieSession: Int?

  package init(identity: ConnectionIdentity, cookieSession: Int?) {
    self.identity = identity
    self.cookieSession = cookieSession
  }

  package init(_ spec: borrowing TransferSpec) {
    self.init(identity: ConnectionIdentity(spec), cookieSession: spec.cookieJar == nil ? nil : spec.sessionKey)
  }
}
