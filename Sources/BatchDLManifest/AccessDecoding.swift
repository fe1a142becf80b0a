import BatchDLSupport
import BatchDLTransfer

#if canImport(Glibc)
  import Glibc
#endif

/// The access keys (`auth`, `netrc`, `proxy`, `no_proxy`, `aws_sigv4`): each credential is a
/// secret the redactor masks, each file named is read now, and every problem has its line.
extension ManifestDecoder {
  package static let authKeys = ["user", "password", "scheme"]
  package static let awsKeys = ["provider", "access_key", "secret_key", "session_token"]

  /// A session's (or the defaults') access keys as written.
  package struct AccessWritten {
    package var auth: Credentials?
    package var netrc: Netrc?
    /// `proxy:`: nil when not given; `.none` for `proxy: none`.
    package var proxy: ProxyEndpoint??
    package var noProxy: NoProxy?
    package var awsSigV4: AWSSigV4Settings?
    package var mark: SourceMark?
  }

  /// Decodes one access key of a session or the defaults; false when `key` is not one.
  package mutating func accessSetting(_ key: YAMLNode, _ value: YAMLNode, into written: inout AccessWritten) -> Bool {
    switch key.scalar {
    case "auth": written.auth = auth(value)
    case "netrc": written.netrc = netrc(value)
    case "proxy": written.proxy = proxy(value)
    case "no_proxy":
      written.noProxy = NoProxy(
        entries: stringList(value, what: "no_proxy").flatMap {
          $0.split(separator: ",").map(String.init)
        })
    case "aws_sigv4": written.awsSigV4 = awsSigV4(value)
    default: return false
    }
    if written.mark == nil { written.mark = key.mark }
    return true
  }

  /// A session's access settings: its own keys over the defaults', the proxy route made (the
  /// environment's variables when neither names a proxy).
  package mutating func accessSettings(
    own: AccessWritten, defaults: AccessWritten, at mark: SourceMark
  ) -> AccessSettings {
    var access = AccessSettings()
    access.auth = own.auth ?? defaults.auth
    access.netrc = own.netrc ?? defaults.netrc
    access.awsSigV4 = own.awsSigV4 ?? defaults.awsSigV4
    if access.auth != nil, access.awsSigV4 != nil {
      diagnostics.error(
        own.mark ?? defaults.mark ?? mark,
        "auth and aws_sigv4 both sign the Authorization header: give one of them (aws_sigv4 for S3 and compatible stores)"
      )
    }
    let noProxy = own.noProxy ?? defaults.noProxy
    switch own.proxy ?? defaults.proxy {
    case .some(.none): access.proxy = .direct
    case .some(.some(let endpoint)): access.proxy = .manifest(endpoint, bypass: noProxy ?? NoProxy(entries: []))
    case .none:
      switch ProxyRoute.fromEnvironment(environment, noProxy: noProxy) {
      case .success(let route):
        access.proxy = route
        registerProxySecrets(route)
      case .failure(let problem):
        diagnostics.error(mark, "\(problem.message); fix it, or give the session proxy: none (or a proxy: URL)")
      }
    }
    return access
  }

  /// `auth: {user, password, scheme}`.
  private mutating func auth(_ node: YAMLNode) -> Credentials? {
    guard let entries = mapping(node, what: "auth") else { return nil }
    checkKeys(entries, known: Self.authKeys, in: "auth")
    guard let userNode = node["user"] else {
      diagnostics.error(node.mark, "auth needs a user: (and a password:)")
      return nil
    }
    guard let user = string(userNode, what: "auth.user", expand: .secret) else { return nil }
    if user.contains(":") {
      diagnostics.error(
        userNode.mark, "auth.user must not contain ':' (Basic authentication joins user and password with it)")
      return nil
    }
    var password = ""
    if let passwordNode = node["password"] {
      guard let text = string(passwordNode, what: "auth.password", expand: .secret) else { return nil }
      password = text
      secret("auth.password", password)
    }
    var scheme = Credentials.Scheme.basic
    if let schemeNode = node["scheme"] {
      guard let chosen = choice(schemeNode, what: "auth.scheme", Credentials.Scheme.self) else { return nil }
      scheme = chosen
    }
    return Credentials(user: user, password: password, scheme: scheme)
  }

  /// `netrc: true` (the user's `~/.netrc`), `false`, or a path; the file is read now.
  private mutating func netrc(_ node: YAMLNode) -> Netrc? {
    let written: String
    if case .scalar(let text, true) = node.content, text == "true" || text == "false" {
      guard text == "true" else { return nil }
      guard let home = environment["HOME"], !home.isEmpty else {
        diagnostics.error(node.mark, "netrc: true reads ~/.netrc, but HOME is not set: give the file's path")
        return nil
      }
      written = home + "/.netrc"
    } else {
      guard let text = string(node, what: "netrc", expand: .plain), !text.isEmpty else {
        diagnostics.error(node.mark, "netrc must be true, false or the path of a netrc file")
        return nil
      }
      written = text
    }
    let path = FileAccess.resolve(written, against: absoluteDirectory)
    let bytes: [UInt8]
    switch FileAccess.readSmallFile(path, limit: 1 << 20) {
    case .success(let read): bytes = read
    case .failure(.missing):
      diagnostics.error(node.mark, "netrc file '\(written)' does not exist")
      return nil
    case .failure(.unreadable(let reason)):
      diagnostics.error(node.mark, "netrc file '\(written)' cannot be read: \(reason)")
      return nil
    case .failure(.notRegular(let kind)):
      diagnostics.error(node.mark, "netrc file '\(written)' is not a regular file (it is \(kind))")
      return nil
    case .failure(.tooLarge(let size)):
      diagnostics.error(node.mark, "netrc file '\(written)' holds \(size) bytes: at most 1 MiB is read")
      return nil
    }
    switch Netrc.parse(String(decoding: bytes, as: UTF8.self), path: path) {
    case .success(let netrc):
      for password in netrc.passwords { secret("netrc password", password) }
      return netrc
    case .failure(let problem):
      diagnostics.error(node.mark, "netrc file '\(written)', line \(problem.line): \(problem.message)")
      return nil
    }
  }

  /// `proxy: URL` or `proxy: none`.
  private mutating func proxy(_ node: YAMLNode) -> ProxyEndpoint?? {
    guard let text = string(node, what: "proxy", expand: .secret) else { return nil }
    if text == "none" { return .some(nil) }
    switch ProxyEndpoint.parse(text) {
    case .success(let endpoint):
      if let user = endpoint.user { secret("proxy user", user) }
      if let password = endpoint.password { secret("proxy password", password) }
      return .some(endpoint)
    case .failure(let problem):
      diagnostics.error(node.mark, "bad proxy: \(problem.message) (or none, to use no proxy)")
      return nil
    }
  }

  /// `aws_sigv4: {provider, access_key, secret_key, session_token}`.
  package mutating func awsSigV4(_ node: YAMLNode) -> AWSSigV4Settings? {
    guard let entries = mapping(node, what: "aws_sigv4") else { return nil }
    checkKeys(entries, known: Self.awsKeys, in: "aws_sigv4")
    var values: [String: String] = [:]
    for name in ["provider", "access_key", "secret_key"] {
      guard let valueNode = node[name] else {
        diagnostics.error(node.mark, "aws_sigv4 needs \(name):")
        return nil
      }
      guard let text = string(valueNode, what: "aws_sigv4.\(name)", expand: .secret), !text.isEmpty else {
        diagnostics.error(valueNode.mark, "aws_sigv4.\(name) must not be empty")
        return nil
      }
      values[name] = text
    }
    var token: String?
    if let tokenNode = node["session_token"] {
      token = string(tokenNode, what: "aws_sigv4.session_token", expand: .secret)
      if let token { secret("aws_sigv4.session_token", token) }
    }
    guard let provider = values["provider"], let access = values["access_key"], let secretKey = values["secret_key"]
    else { return nil }
    secret("aws_sigv4.access_key", access)
    secret("aws_sigv4.secret_key", secretKey)
    do throws(AWSSignatureProblem) {
      let parts = try AWSProvider(parsing: provider)
      return AWSSigV4Settings(
        provider: provider, region: parts.region, service: parts.service, accessKey: access, secretKey: secretKey,
        sessionToken: token)
    } catch {
      diagnostics.error(node["provider"]?.mark ?? node.mark, error.message)
      return nil
    }
  }

  /// Masks `value` wherever it could show.
  private mutating func secret(_ name: String, _ value: String) {
    guard !value.isEmpty, !secrets.contains(where: { $0.value == value }) else { return }
    secrets.append(Secret(name: name, value: value))
  }

  private mutating func registerProxySecrets(_ route: ProxyRoute) {
    guard case .environment(let http, let https, let all, _) = route else { return }
    for endpoint in [http, https, all].compactMap({ $0 }) {
      if let user = endpoint.user { secret("proxy user", user) }
      if let password = endpoint.password { secret("proxy password", password) }
    }
  }
}
