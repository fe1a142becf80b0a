/// The header lines a request signed with AWS Signature Version 4 adds.
enum AccessSigning {
  static func headers(for spec: borrowing TransferSpec, settings: AWSSigV4Settings) -> [String] {
    []
  }
}
