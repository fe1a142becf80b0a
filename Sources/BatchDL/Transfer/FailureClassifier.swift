import CCurl

/// Turns libcurl codes and HTTP statuses into stable error codes, and says which a retry can fix.
public enum FailureClassifier {
  static func classify(_ code: CURLcode, message: String) -> TransferFailure {
    let name: String
    switch code {
    case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: name = "dns"
    case CURLE_COULDNT_CONNECT: name = "connect"
    case CURLE_OPERATION_TIMEDOUT: name = "timeout"
    case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
      CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      name = "tls"
    case CURLE_TOO_MANY_REDIRECTS: name = "too-many-redirects"
    case CURLE_UNSUPPORTED_PROTOCOL: name = "protocol"
    case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM,
      CURLE_HTTP3:
      name = "network"
    case CURLE_WRITE_ERROR: name = "write"
    case CURLE_READ_ERROR: name = "read"
    case CURLE_URL_MALFORMAT: name = "url"
    case CURLE_ABORTED_BY_CALLBACK: name = "cancelled"
    default: name = "curl-\(code.rawValue)"
    }
    return TransferFailure(code: name, message: message)
  }

  static func classify(status: Int, reason: String) -> TransferFailure {
    var message = "HTTP \(status)"
    if !reason.isEmpty { message += " \(reason)" }
    return TransferFailure(code: "http-\(status)", message: message, status: status)
  }

  /// Whether trying again may succeed: connect and DNS errors, timeouts, dropped connections,
  /// 408, 429 and 5xx.
  public static func isRetryable(_ failure: TransferFailure) -> Bool {
    switch failure.code {
    case "connect", "dns", "timeout", "network": return true
    default:
      guard let status = failure.status else { return false }
      return status == 408 || status == 429 || (500...599).contains(status)
    }
  }
}
