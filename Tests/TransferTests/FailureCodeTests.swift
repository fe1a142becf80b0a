import CCurl
import Foundation
import Testing

@testable import BatchDL

@Suite struct FailureCodeTests {
  static let numbered: [FailureCode] = [.http(200), .http(404), .http(599), .curl(0), .curl(7), .curl(99)]

  @Test func everyCodeReadsBackFromItsString() {
    for code in FailureCode.named + Self.numbered {
      #expect(FailureCode(rawValue: code.rawValue) == code, "\(code)")
      #expect(code.description == code.rawValue)
    }
    #expect(Set((FailureCode.named).map(\.rawValue)).count == FailureCode.named.count)
  }

  @Test func theStringsAreTheOnesReportsWrite() {
    #expect(FailureCode.http(404).rawValue == "http-404")
    #expect(FailureCode.curl(56).rawValue == "curl-56")
    #expect(FailureCode.rangeMismatch.rawValue == "range-mismatch")
    #expect(FailureCode.protocol.rawValue == "protocol")
    #expect("\(TransferFailure(code: .diskFull, message: "no space"))" == "disk-full: no space")
  }

  @Test func otherStringsAreNoCode() {
    for text in ["", "http-", "http-x", "http-007", "curl-", "curl-+1", "HTTP-404", "range_mismatch", "failed"] {
      #expect(FailureCode(rawValue: text) == nil, "\(text)")
    }
  }

  /// docs/run.md's table of error codes names every code, and only those.
  @Test func theDocumentedCodesAreTheCodes() throws {
    let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("docs/run.md")
    let text = try String(contentsOf: docs, encoding: .utf8)
    let table =
      try #require(text.components(separatedBy: "## Error codes").dropFirst().first)
      .components(separatedBy: "\n\n").dropFirst().first ?? ""
    var documented: Set<String> = []
    for line in table.split(separator: "\n") where line.hasPrefix("| `") {
      let first = line.split(separator: "|").first ?? ""
      for name in first.split(separator: "`") where !name.contains(",") && !name.allSatisfy(\.isWhitespace) {
        documented.insert(String(name))
      }
    }
    let named = Set(FailureCode.named.map(\.rawValue))
    #expect(documented.subtracting(["http-NNN", "curl-N"]) == named)
    #expect(documented.isSuperset(of: ["http-NNN", "curl-N"]))
  }
}

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
