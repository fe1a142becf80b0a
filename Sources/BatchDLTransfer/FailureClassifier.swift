import CCurl

/// Turns libcurl codes and HTTP statuses into stable error codes, and says which a retry can fix.
public enum FailureClassifier {
  /// `inHead`: the failure came before the response head was complete.
  package static func classify(_ code: CURLcode, message: String, inHead: Bool = false) -> TransferFailure {
    let name: FailureCode
    switch code {
    case CURLE_OUT_OF_MEMORY where inHead:
      // libcurl 7.88 says "out of memory" when a header line passes its limit.
      return TransferFailure(code: .badResponse, message: headTooLarge)
    case CURLE_RECV_ERROR where inHead && isHeadTooLarge(message):
      return TransferFailure(code: .badResponse, message: headTooLarge + " (libcurl: \(message))")
    case CURLE_RECV_ERROR where message.hasPrefix("CONNECT tunnel failed, response "):
      // libcurl 7.88's words when an HTTP proxy answers a CONNECT with an error.
      let status = Int(message.dropFirst("CONNECT tunnel failed, response ".count).prefix { $0.isNumber })
      var failure = TransferFailure(
        code: .proxy,
        message: "the proxy refused the tunnel: \(message)"
          + (status == 407 ? " (the proxy wants credentials: give them as the user-info of proxy:)" : ""))
      failure.status = status
      return failure
    case CURLE_PROXY:
      return TransferFailure(code: .proxy, message: "the proxy could not carry the request: \(message)")
    case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: name = .dns
    case CURLE_COULDNT_CONNECT: name = .connect
    case CURLE_OPERATION_TIMEDOUT: name = .timeout
    case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
      CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      return TransferFailure(code: .tls, message: message + tlsHint(code, message: message))
    case CURLE_TOO_MANY_REDIRECTS: name = .tooManyRedirects
    case CURLE_UNSUPPORTED_PROTOCOL: name = .protocol
    case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM,
      CURLE_HTTP3:
      name = .network
    case CURLE_WRITE_ERROR: name = .write
    case CURLE_READ_ERROR: name = .read
    case CURLE_URL_MALFORMAT: name = .url
    case CURLE_ABORTED_BY_CALLBACK: name = .cancelled
    case CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_CONTENT_ENCODING:
      return TransferFailure(code: .badResponse, message: "the server's response could not be read: \(message)")
    case CURLE_OUT_OF_MEMORY: name = .internal
    default: name = .curl(Int(code.rawValue))
    }
    return TransferFailure(code: name, message: message)
  }

  /// A response head larger than libcurl takes: the same failure over HTTP/1.1 and HTTP/2, which
  /// another try does not fix.
  package static let headTooLarge =
    "the server's response head passes the size libcurl accepts (100 KB for one header line, 300 KB in all over HTTP/1.1; 128 KB in all over HTTP/2)"

  /// Whether libcurl 7.88's words for a receive error before the head was complete say the head
  /// passed its limits: over HTTP/1.1 it names them; over HTTP/2 its header callback, which fails
  /// only when the head passes its buffer (128 KB), makes nghttp2 answer -902.
  package static func isHeadTooLarge(_ message: String) -> Bool {
    message.contains("Too large response headers")
      || (message.contains("nghttp2_session_mem_recv") && message.contains("-902"))
  }

  /// What to set, after libcurl's words, for the TLS failures a session's `tls:` settings answer.
  package static func tlsHint(_ code: CURLcode, message: String) -> String {
    switch code {
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      return ": the server's public key does not match tls.pinned_pubkey"
    case CURLE_SSL_CERTPROBLEM:
      return ": the client certificate or its key could not be used (tls.client_cert, tls.client_key, tls.key_password)"
    case CURLE_SSL_CONNECT_ERROR where message.lowercased().contains("protocol version"):
      return
        ": the server and batchdl share no TLS version (batchdl offers TLS 1.2 and 1.3, or those from the session's tls.min_version on)"
    case CURLE_SSL_CACERT_BADFILE:
      return ": the CA certificates could not be read (tls.ca_file, tls.ca_path)"
    case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_ISSUER_ERROR:
      let text = message.lowercased()
      if text.contains("name") && !text.contains("issuer") {
        return ": the server's certificate is not issued for this host name"
      }
      return
        ": the server's certificate is not trusted: if a private CA issued it, give that CA's certificate in the session's tls.ca_file (or a folder of them in tls.ca_path)"
    default:
      return ""
    }
  }

  /// For a request that spoke HTTP/2 to an `http://` URL without asking first and got no answer.
  package static let priorKnowledgeHint =
    "; network.http_version: 2 speaks HTTP/2 to http:// URLs without asking first (h2c with prior knowledge), and this server may speak only HTTP/1.1 there: use auto or 1.1 for it"

  package static func classify(status: Int, reason: String) -> TransferFailure {
    var message = "HTTP \(status)"
    if !reason.isEmpty { message += " \(reason)" }
    return TransferFailure(code: .http(status), message: message, status: status)
  }

  // Which failures are worth another try: `isRetryable` on the same source, `isSourceFailure` on
  // another one (JobLife decides with both; RetryPolicy.delay says when).

  /// Whether trying again may succeed: connect and DNS errors, timeouts, dropped connections,
  /// bodies that stopped short or answered another range, 408, 429 and 5xx.
  public static func isRetryable(_ failure: TransferFailure) -> Bool {
    switch failure.code {
    case .connect, .dns, .timeout, .network, .incomplete, .rangeMismatch: return true
    // A SOCKS failure has no status (the proxy may not reach the origin for a moment); an HTTP
    // proxy's 407 or 403 is not fixed by asking again.
    case .proxy where failure.status == nil: return true
    default:
      guard let status = failure.status else { return false }
      return status == 408 || status == 429 || (500...599).contains(status)
    }
  }

  /// Whether a failure is the source's own (another source may do better), not the task's or
  /// this machine's.
  package static func isSourceFailure(_ failure: TransferFailure) -> Bool {
    switch failure.code {
    case .connect, .dns, .tls, .timeout, .network, .incomplete, .rangeMismatch, .badResponse, .protocol,
      .tooManyRedirects, .checksumMismatch, .sizeMismatch, .curl, .proxy:
      return true
    case .http(let status):
      return status == 404 || status == 410 || status == 408 || status == 429 || (500...599).contains(status)
    default:
      return false
    }
  }
}
