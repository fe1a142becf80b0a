import Foundation

/// The header lines of a request signed with AWS Signature Version 4 (`aws_sigv4:`), made when
/// the request is set up: a retry, a resumed download and a redirect's hop each get a signature
/// of their own, of the URL libcurl is given.
enum AccessSigning {
  static func headers(for spec: borrowing TransferSpec, settings: AWSSigV4Settings) throws -> [String] {
    let signer = AWSSignature(
      provider: AWSProvider(region: settings.region, service: settings.service),
      credentials: AWSCredentials(
        accessKey: settings.accessKey, secretKey: settings.secretKey, sessionToken: settings.sessionToken))
    do {
      return try signer.sign(method: spec.method, url: spec.url, date: Date()).map(\.line)
    } catch {
      throw TransferFailure(code: .url, message: "the request cannot be signed for aws_sigv4: \(error.message)")
    }
  }
}
