import CCurl
import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLTransfer

/// TLS failures say which of the session's `tls:` settings answers them, after libcurl's words.
@Suite struct TLSFailureTests {
  @Test(arguments: [
    (
      CURLE_PEER_FAILED_VERIFICATION,
      "SSL certificate problem: unable to get local issuer certificate",
      "give that CA's certificate in the session's tls.ca_file"
    ),
    (
      CURLE_PEER_FAILED_VERIFICATION,
      "SSL certificate problem: self-signed certificate in certificate chain",
      "give that CA's certificate in the session's tls.ca_file"
    ),
    (
      CURLE_PEER_FAILED_VERIFICATION,
      "SSL: no alternative certificate subject name matches target host name 'example.org'",
      "not issued for this host name"
    ),
    (CURLE_SSL_PINNEDPUBKEYNOTMATCH, "SSL: public key does not match pinned public key", "tls.pinned_pubkey"),
    (CURLE_SSL_CERTPROBLEM, "unable to set private key file: 'client.key' type PEM", "tls.key_password"),
    (CURLE_SSL_CACERT_BADFILE, "error setting certificate file: ca.pem", "tls.ca_file"),
  ])
  func aTLSFailureNamesTheSetting(code: CURLcode, message: String, hint: String) {
    let failure = FailureClassifier.classify(code, message: message)
    #expect(failure.code == .tls)
    #expect(failure.message.hasPrefix(message))
    #expect(failure.message.contains(hint), "\(failure.message)")
    #expect(!FailureClassifier.isRetryable(failure))
  }

  @Test func aHandshakeFailureKeepsLibcurlsWordsAlone() {
    let failure = FailureClassifier.classify(CURLE_SSL_CONNECT_ERROR, message: "handshake failure")
    #expect(failure.code == .tls && failure.message == "handshake failure")
  }

  @Test func noCommonVersionNamesMinVersion() {
    let failure = FailureClassifier.classify(
      CURLE_SSL_CONNECT_ERROR, message: "OpenSSL/3.0.19: error:0A00042E:SSL routines::tlsv1 alert protocol version")
    #expect(failure.code == .tls)
    #expect(failure.message.contains("tls.min_version"))
  }
}
