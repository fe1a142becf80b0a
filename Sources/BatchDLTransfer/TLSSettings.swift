/// A session's `tls:` settings. Paths are absolute (relative ones were read from the manifest's
/// folder), and the files were there when the manifest was read.
public struct TLSSettings: Hashable, Sendable {
  public enum Version: String, CaseIterable, Sendable {
    case tls1_2 = "1.2"
    case tls1_3 = "1.3"
  }

  /// PEM file of the CAs to trust instead of the system's store.
  public var caFile: String?
  /// Folder of CA certificates named by subject hash (`c_rehash`), instead of the system's store.
  public var caPath: String?
  /// Client certificate (PEM), and its key when `clientKey` is not given.
  public var clientCert: String?
  public var clientKey: String?
  /// The client key's password: a secret.
  public var keyPassword: String?
  /// libcurl's `CURLOPT_PINNEDPUBLICKEY`: a public key file, or `sha256//BASE64[;sha256//...]`.
  public var pinnedPublicKey: String?
  /// The lowest TLS version accepted.
  public var minVersion: Version?

  public init() {}

  /// Whether nothing is set.
  public var isEmpty: Bool { self == TLSSettings() }

  /// `base` with each key `over` gives replaced; the client certificate, its key and the key's
  /// password go together (a session's certificate never gets the defaults' key or password).
  package static func merged(_ base: TLSSettings, _ over: TLSSettings) -> TLSSettings {
    var result = base
    result.caFile = over.caFile ?? base.caFile
    result.caPath = over.caPath ?? base.caPath
    if over.clientCert != nil || over.clientKey != nil || over.keyPassword != nil {
      result.clientCert = over.clientCert
      result.clientKey = over.clientKey
      result.keyPassword = over.keyPassword
    }
    result.pinnedPublicKey = over.pinnedPublicKey ?? base.pinnedPublicKey
    result.minVersion = over.minVersion ?? base.minVersion
    return result
  }

  /// What the settings trust and present, for a request's identity: paths under `folder` relative
  /// to it (the same on every machine), the password left out (the key file stands for it).
  package func identity(relativeTo folder: String) -> String {
    func path(_ value: String?) -> String {
      guard let value else { return "" }
      let prefix = folder.hasSuffix("/") ? folder : folder + "/"
      return value.hasPrefix(prefix) ? String(value.dropFirst(prefix.count)) : value
    }
    return [
      path(caFile), path(caPath), path(clientCert), path(clientKey),
      pinnedPublicKey.map { $0.hasPrefix("sha256//") ? $0 : path($0) } ?? "", minVersion?.rawValue ?? "",
    ].joined(separator: "\u{1F}")
  }
}
