import BatchDLSupport
import Crypto

/// What a session (or a task) gives to be let in: credentials for its URLs' own origin, a netrc
/// file's credentials per host, the proxy route, and AWS Signature Version 4 keys. Every password,
/// key and token in it is a secret: the manifest decoder registers each with the redactor, and
/// `identity` holds only digests of them.
public struct AccessSettings: Sendable, Hashable {
  /// `auth:`: sent only to the origin the request's URL was given for (`TransferSpec.headerOrigin`).
  public var auth: Credentials?
  /// `netrc:`: credentials per host, for a URL that carries none of its own.
  public var netrc: Netrc?
  /// `proxy:` and `no_proxy:`, or the environment's proxy variables.
  public var proxy = ProxyRoute.direct
  /// `aws_sigv4:`: requests to the request's own origin are signed.
  public var awsSigV4: AWSSigV4Settings?

  public init() {}

  /// Whether a request carries a credential of its own origin: then batchdl follows its
  /// redirects itself, and each hop gets only what belongs to its origin.
  public var carriesCredentials: Bool { auth != nil || netrc != nil || awsSigV4 != nil || proxy != .direct }

  /// Whether nothing is set.
  public var isEmpty: Bool { self == AccessSettings() }

  /// What the settings present, for a connection's and a request's identity: user names, schemes,
  /// the proxy routes without their credentials, and a SHA-256 of every secret, so that settings
  /// that differ in a password differ here too without the password being kept anywhere.
  public var identity: String {
    var parts: [String] = []
    if let auth {
      parts.append("auth:\(auth.scheme.rawValue):\(auth.user):\(Self.digest(auth.password))")
    }
    if let netrc { parts.append("netrc:\(Self.digest(netrc.fingerprint))") }
    if proxy != .direct { parts.append("proxy:\(proxy.identity)") }
    if let awsSigV4 {
      parts.append(
        "aws:\(awsSigV4.provider):\(Self.digest(awsSigV4.accessKey + "\u{1F}" + awsSigV4.secretKey + "\u{1F}" + (awsSigV4.sessionToken ?? "")))"
      )
    }
    return parts.joined(separator: "\u{1E}")
  }

  /// Who the requests are made as, for a request's identity (what the state folder keeps to tell
  /// whether a finished request is asked again): the user and scheme of `auth`, the provider and
  /// a digest of the access key of `aws_sigv4`, whether a netrc file is read. Not the passwords
  /// (a rotated password fetches nothing again) nor the proxy (a request through another proxy is
  /// the same request); "" when none is set.
  public var requestIdentity: String {
    var parts: [String] = []
    if let auth { parts.append("auth:\(auth.scheme.rawValue):\(auth.user)") }
    if netrc != nil { parts.append("netrc") }
    if let awsSigV4 { parts.append("aws:\(awsSigV4.provider):\(Self.digest(awsSigV4.accessKey))") }
    return parts.joined(separator: "\u{1E}")
  }

  /// The first 16 bytes of the SHA-256 of `text`, in hex.
  static func digest(_ text: String) -> String {
    String(SHA256.hash(data: Array(text.utf8)).hexString.prefix(32))
  }
}

/// `auth:` — a user name and password, and how to send them.
public struct Credentials: Sendable, Hashable {
  public enum Scheme: String, Sendable, CaseIterable {
    /// RFC 7617: sent with the first request.
    case basic
    /// RFC 7616: the server's challenge is answered.
    case digest
    /// The safest scheme the server offers (libcurl asks once without credentials to learn it).
    case any
  }

  public var user: String
  public var password: String
  public var scheme: Scheme

  public init(user: String, password: String, scheme: Scheme = .basic) {
    self.user = user
    self.password = password
    self.scheme = scheme
  }
}

/// `aws_sigv4:` — AWS Signature Version 4 keys and where they sign for.
public struct AWSSigV4Settings: Sendable, Hashable {
  /// `aws:amz:REGION:SERVICE`, as written.
  public var provider: String
  public var region: String
  public var service: String
  public var accessKey: String
  public var secretKey: String
  /// Temporary credentials' token, sent as `x-amz-security-token` (and signed).
  public var sessionToken: String?

  public init(
    provider: String, region: String, service: String, accessKey: String, secretKey: String,
    sessionToken: String?
  ) {
    self.provider = provider
    self.region = region
    self.service = service
    self.accessKey = accessKey
    self.secretKey = secretKey
    self.sessionToken = sessionToken
  }
}
