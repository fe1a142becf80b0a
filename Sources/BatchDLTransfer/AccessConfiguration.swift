import BatchDLSupport
import CCurl

/// How a transfer presents its session's access settings (`AccessSettings`) on its easy handle:
/// the proxy the route chooses for its URL, and the credentials of its URL's origin. Every
/// request goes through here — a first request, a resume, a retry, a segment, a mirror, a
/// redirect's next hop (a transfer of its own), a document.
extension Transfer {
  /// Sets the proxy and the credentials for `spec.url`; a request the proxy route refuses fails
  /// with `url`. `headers` gets the lines a signature adds.
  func configureAccess(_ headers: inout [String]) throws {
    let access = spec.access
    switch access.proxy.decision(for: spec.url) {
    case .direct:
      // Set on every transfer: libcurl never reads the proxy variables itself.
      try easy.set(CURLOPT_PROXY, "")
    case .via(let proxy):
      try easy.set(CURLOPT_PROXY, proxy.url)
      // libcurl reads `no_proxy` from the environment unless this is set: the route decided.
      try easy.set(CURLOPT_NOPROXY, "")
      if let user = proxy.user { try easy.set(CURLOPT_PROXYUSERNAME, user) }
      if let password = proxy.password { try easy.set(CURLOPT_PROXYPASSWORD, password) }
      if proxy.kind == .https {
        // An HTTPS proxy is trusted as the origins are: the session's `tls:` CAs, or none checked.
        if let file = spec.tls.caFile { try easy.set(CURLOPT_PROXY_CAINFO, file) }
        if let folder = spec.tls.caPath { try easy.set(CURLOPT_PROXY_CAPATH, folder) }
        if spec.insecure {
          try easy.set(CURLOPT_PROXY_SSL_VERIFYPEER, 0)
          try easy.set(CURLOPT_PROXY_SSL_VERIFYHOST, 0)
        }
      }
    case .refused(let message):
      throw TransferFailure(code: .url, message: message)
    }
    guard let credentials = spec.credentialsForURL else { return }
    switch credentials {
    case .password(let user, let password, let scheme):
      try easy.set(CURLOPT_USERNAME, user)
      try easy.set(CURLOPT_PASSWORD, password)
      switch scheme {
      case .basic: try easy.set(CURLOPT_HTTPAUTH, ccurl_auth_basic)
      case .digest: try easy.set(CURLOPT_HTTPAUTH, ccurl_auth_digest)
      case .any: try easy.set(CURLOPT_HTTPAUTH, ccurl_auth_any)
      }
    case .signature(let settings):
      // The path is sent as it is signed (each segment encoded once, `+` as `%2B`).
      let sent = AWSSignature.urlWithCanonicalPath(spec.url)
      if sent != spec.url { try easy.set(CURLOPT_URL, sent) }
      headers += try AccessSigning.headers(for: spec, settings: settings)
    }
  }
}

extension Transfer {
  /// A TLS failure of an HTTPS proxy's own handshake names the proxy: libcurl gives it the code
  /// and words of the origin's (an untrusted certificate is CURLE_PEER_FAILED_VERIFICATION for
  /// both), and only the proxy's verify result tells them apart.
  func nameProxyInTLSFailure(_ failure: inout TransferFailure) {
    guard failure.code == .tls, case .via(let proxy) = spec.access.proxy.decision(for: spec.url),
      proxy.kind == .https, easy.info(CURLINFO_PROXY_SSL_VERIFYRESULT) != 0
    else { return }
    failure.message =
      "the HTTPS proxy: " + failure.message.replacingOccurrences(of: "the server's ", with: "the proxy's ")
  }
}

/// What a request to its URL presents.
package enum RequestCredentials: Equatable {
  case password(user: String, password: String, scheme: Credentials.Scheme)
  case signature(AWSSigV4Settings)
}

extension TransferSpec {
  /// The credentials this request sends to `url`: the one rule, driven by table tests.
  ///
  /// - `auth:` and `aws_sigv4:` go only to the origin the request was given for
  ///   (`headerOrigin`, else the URL's own): never to a mirror, a source a document names, or a
  ///   redirect's hop elsewhere (another host, port or scheme).
  /// - A URL with its own user and password keeps them (libcurl sends them).
  /// - Else the netrc file's entry for the URL's host, for the user the URL names if it names one.
  package var credentialsForURL: RequestCredentials? {
    let access = access
    // Most requests carry none: their URL is not read.
    guard access.auth != nil || access.awsSigV4 != nil || access.netrc != nil else { return nil }
    let atOrigin = headerOrigin.map { $0.owns(url) } ?? true
    if atOrigin, let auth = access.auth {
      return .password(user: auth.user, password: auth.password, scheme: auth.scheme)
    }
    if atOrigin, let signature = access.awsSigV4 { return .signature(signature) }
    guard let netrc = access.netrc, let target = TargetHost(url) else { return nil }
    var user: String?
    if let info = Redactor.userInfo(of: url) {
      // A URL's own password is its own; a URL naming only a user gets that user's.
      if info.contains(":") { return nil }
      user = String(decoding: Hex.percentDecoded(Array(info.utf8)), as: UTF8.self)
    }
    let host = target.host.hasPrefix("[") ? String(target.host.dropFirst().dropLast()) : target.host
    guard let found = netrc.credentials(host: host, user: user) else { return nil }
    return .password(user: found.user, password: found.password, scheme: .basic)
  }
}
