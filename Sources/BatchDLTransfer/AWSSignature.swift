import BatchDLSupport
import Crypto
import Foundation

/// Why an AWS Signature Version 4 value is refused: a malformed `provider`, a URL the signer cannot
/// read, a header the signer sets itself.
package struct AWSSignatureProblem: Error, Hashable, Sendable, CustomStringConvertible {
  package var message: String
  package init(_ message: String) { self.message = message }
  package var description: String { message }
}

/// The `provider` of `aws_sigv4`, `aws:amz:REGION:SERVICE`: what the signature's credential scope
/// names (`us-east-1`, `s3`).
package struct AWSProvider: Hashable, Sendable {
  package var region: String
  package var service: String

  package init(region: String, service: String) {
    self.region = region
    self.service = service
  }

  /// Reads `aws:amz:REGION:SERVICE` (the first two parts in any case; REGION and SERVICE of
  /// letters, digits, `-`, `_` and `.`). The manifest decoder calls it to refuse a bad `provider`
  /// at load time; the message says what was expected.
  package init(parsing text: String) throws(AWSSignatureProblem) {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    let shown = "'\(text.unicodeScalars.prefix(80).map { $0.isASCII && $0.value >= 0x20 ? String($0) : "?" }.joined())'"
    let expected = "aws_sigv4's provider is aws:amz:REGION:SERVICE, e.g. aws:amz:us-east-1:s3"
    guard parts.count == 4 else {
      throw AWSSignatureProblem("\(expected); \(shown) has \(parts.count) part(s) separated by ':', not 4")
    }
    guard parts[0].lowercased() == "aws", parts[1].lowercased() == "amz" else {
      throw AWSSignatureProblem(
        "\(expected); \(shown) starts otherwise: batchdl signs AWS4-HMAC-SHA256 with x-amz- headers only")
    }
    func isScopePart(_ part: Substring) -> Bool {
      !part.isEmpty && part.utf8.count <= 64
        && part.utf8.allSatisfy { byte in
          AWSSignature.isUnreserved(byte) && byte != UInt8(ascii: "~")
        }
    }
    guard isScopePart(parts[2]) else {
      throw AWSSignatureProblem(
        "\(expected); the region of \(shown) is empty or has characters other than a-z, 0-9, '-', '_', '.'")
    }
    guard isScopePart(parts[3]) else {
      throw AWSSignatureProblem(
        "\(expected); the service of \(shown) is empty or has characters other than a-z, 0-9, '-', '_', '.'")
    }
    region = String(parts[2])
    service = String(parts[3])
  }
}

/// The key a request is signed with. Every field is a secret except `accessKey`; the value never
/// prints them (`description` masks them).
package struct AWSCredentials: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
  CustomReflectable
{
  package var accessKey: String
  package var secretKey: String
  /// STS session token, sent as `x-amz-security-token` (and signed); nil for long-term keys.
  package var sessionToken: String?

  package init(accessKey: String, secretKey: String, sessionToken: String? = nil) {
    self.accessKey = accessKey
    self.secretKey = secretKey
    self.sessionToken = sessionToken
  }

  package var description: String {
    "AWSCredentials(accessKey: \(accessKey), secretKey: ***\(sessionToken == nil ? "" : ", sessionToken: ***"))"
  }

  package var debugDescription: String { description }

  /// `dump` and the default description of a value that holds credentials show them masked too.
  package var customMirror: Mirror {
    Mirror(
      self,
      children: ["accessKey": accessKey, "secretKey": "***", "sessionToken": sessionToken == nil ? "nil" : "***"])
  }
}

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`) for one request, as S3 checks it: batchdl signs
/// itself because libcurl 7.88's `CURLOPT_AWS_SIGV4` signs a URL with a query wrongly.
///
/// The canonical request is built from the URL the request is sent to: each path segment is
/// percent-decoded and encoded again with AWS's rules (unreserved bytes kept, every other byte
/// `%XX` upper case; S3 does not encode twice), the query parameters are decoded (`+` as a space,
/// as S3 and moto read it) and encoded the same way (`/` as `%2F`, an empty value as `name=`),
/// sorted by name then value. Pass the URL exactly as libcurl will send it (the engine's
/// normalized URL): the `Host` header libcurl sends is its host, with `:port` only when the port
/// is not the scheme's default.
package struct AWSSignature: Sendable {
  /// The payload hash of a request whose body is not signed (S3 transfers: a GET has no body).
  package static let unsignedPayload = "UNSIGNED-PAYLOAD"
  /// The payload hash of an empty body: SHA-256 of nothing, in hex.
  package static let emptyPayload = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

  /// One header line the signer adds to the request.
  package struct Field: Hashable, Sendable {
    package var name: String
    package var value: String
    /// `Name: value`, as libcurl's header list takes it.
    package var line: String { "\(name): \(value)" }
  }

  package var provider: AWSProvider
  package var credentials: AWSCredentials

  package init(provider: AWSProvider, credentials: AWSCredentials) {
    self.provider = provider
    self.credentials = credentials
  }

  /// The headers to add to `method url` sent at `date`: `Authorization`, `x-amz-date`,
  /// `x-amz-content-sha256` and, with a session token, `x-amz-security-token` (a secret: the
  /// caller keeps it out of logs). `headers` are other headers the request sends that are to be
  /// signed too (`Range`...); `Host` and the three `x-amz-` headers above are the signer's own and
  /// are refused there. `payloadHash` is `unsignedPayload` for S3 transfers, or the SHA-256 hex of
  /// the body.
  package func sign(
    method: String, url: String, headers: [(name: String, value: String)] = [],
    payloadHash: String = AWSSignature.unsignedPayload, date: Date
  ) throws(AWSSignatureProblem) -> [Field] {
    let target = try Self.target(of: url)
    let amzDate = Self.amzDate(date)
    var signed: [(name: String, value: String)] = [
      ("host", target.host), ("x-amz-date", amzDate), ("x-amz-content-sha256", payloadHash),
    ]
    if let token = credentials.sessionToken { signed.append(("x-amz-security-token", token)) }
    let own = Set(signed.map(\.name))
    for header in headers {
      let name = header.name.trimmingCharacters(in: .whitespaces).lowercased()
      guard !own.contains(name), name != "authorization" else {
        throw AWSSignatureProblem("the header '\(name)' is set by the AWS signer; remove it from the request's headers")
      }
      signed.append((name, header.value))
    }
    let signature = self.signature(
      method: method, path: target.path, query: target.query, headers: signed, payloadHash: payloadHash,
      amzDate: amzDate)
    var fields = [
      Field(
        name: "Authorization",
        value:
          "AWS4-HMAC-SHA256 Credential=\(credentials.accessKey)/\(signature.scope), SignedHeaders=\(signature.signedHeaders), Signature=\(signature.hex)"
      ),
      Field(name: "x-amz-date", value: amzDate),
      Field(name: "x-amz-content-sha256", value: payloadHash),
    ]
    if let token = credentials.sessionToken { fields.append(Field(name: "x-amz-security-token", value: token)) }
    return fields
  }

  /// What `sign` computes, with its intermediate values (for the tests). The canonical request
  /// holds the session token when there is one: keep it out of logs.
  package struct Computed: Sendable {
    package var canonicalRequest: String
    package var stringToSign: String
    /// `DATE/REGION/SERVICE/aws4_request`.
    package var scope: String
    /// The signed header names, lower case, sorted, joined by `;`.
    package var signedHeaders: String
    /// The signature, lower-case hex.
    package var hex: String
  }

  /// The signature of a request given its raw path and query (as they stand in the URL) and every
  /// header to sign, `host` included (`amzDate` is `YYYYMMDDTHHMMSSZ`).
  package func signature(
    method: String, path: String, query: String, headers: [(name: String, value: String)], payloadHash: String,
    amzDate: String
  ) -> Computed {
    var canonical: [String: String] = [:]
    for header in headers {
      let name = header.name.trimmingCharacters(in: .whitespaces).lowercased()
      let value = Self.canonicalValue(header.value)
      canonical[name] = canonical[name].map { $0 + "," + value } ?? value
    }
    let names = canonical.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    let signedHeaders = names.joined(separator: ";")
    let headerBlock = names.map { "\($0):\(canonical[$0] ?? "")\n" }.joined()
    let canonicalRequest = [
      method, Self.canonicalPath(path), Self.canonicalQuery(query), headerBlock, signedHeaders, payloadHash,
    ].joined(separator: "\n")
    let day = String(amzDate.prefix(8))
    let scope = "\(day)/\(provider.region)/\(provider.service)/aws4_request"
    let stringToSign = [
      "AWS4-HMAC-SHA256", amzDate, scope, Self.hex(SHA256.hash(data: Array(canonicalRequest.utf8))),
    ].joined(separator: "\n")
    var key = SymmetricKey(data: Array(("AWS4" + credentials.secretKey).utf8))
    for part in [day, provider.region, provider.service, "aws4_request"] {
      key = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key)))
    }
    let mac = HMAC<SHA256>.authenticationCode(for: Array(stringToSign.utf8), using: key)
    return Computed(
      canonicalRequest: canonicalRequest, stringToSign: stringToSign, scope: scope, signedHeaders: signedHeaders,
      hex: Self.hex(mac))
  }

  // MARK: - Canonical parts

  /// The parts of a URL the signature covers.
  package struct Target: Hashable, Sendable {
    /// The `Host` header's value: the host as written, `:port` only when not the scheme's default.
    package var host: String
    /// The path as written (`/` when empty), undecoded.
    package var path: String
    /// The query as written (after `?`, before `#`), undecoded; empty when none.
    package var query: String
  }

  /// Splits an `http://` or `https://` URL into what is signed.
  package static func target(of url: String) throws(AWSSignatureProblem) -> Target {
    let lower = url.lowercased()
    let scheme: String
    if lower.hasPrefix("https://") {
      scheme = "https"
    } else if lower.hasPrefix("http://") {
      scheme = "http"
    } else {
      throw AWSSignatureProblem("an AWS-signed URL starts with http:// or https://")
    }
    var rest = Substring(url.dropFirst(scheme.count + 3))
    if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
    var authority = rest[..<authorityEnd]
    rest = rest[authorityEnd...]
    if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
    var host = authority
    var port: Substring?
    if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
      host = authority[..<colon]
      port = authority[authority.index(after: colon)...]
    }
    guard !host.isEmpty else { throw AWSSignatureProblem("an AWS-signed URL needs a host") }
    if let given = port, !given.isEmpty {
      guard given.allSatisfy(\.isASCII), let number = Int(given), (1...65535).contains(number) else {
        throw AWSSignatureProblem("the port of an AWS-signed URL is a number from 1 to 65535")
      }
      port = number == (scheme == "https" ? 443 : 80) ? nil : Substring(String(number))
    } else {
      port = nil
    }
    let pathEnd = rest.firstIndex(of: "?") ?? rest.endIndex
    let path = rest[..<pathEnd]
    let query = pathEnd < rest.endIndex ? rest[rest.index(after: pathEnd)...] : ""
    return Target(
      host: String(host) + (port.map { ":" + $0 } ?? ""), path: path.isEmpty ? "/" : String(path),
      query: String(query))
  }

  /// Each segment of `path` decoded and encoded with AWS's rules (S3's form: no second encoding).
  package static func canonicalPath(_ path: String) -> String {
    let segments = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
    let encoded = segments.map { encode(percentDecoded(Array($0), plusIsSpace: false)) }.joined(separator: "/")
    return encoded.hasPrefix("/") ? encoded : "/" + encoded
  }

  /// `url` with its path in the canonical form the signature covers, to be sent as is: a server
  /// that signs the path it receives (moto) and one that decodes it first (S3) then agree, where a
  /// `+`, `=` or `&` left raw in a path would be read one way and signed another.
  package static func urlWithCanonicalPath(_ url: String) -> String {
    guard let schemeEnd = url.range(of: "://") else { return url }
    let rest = url[schemeEnd.upperBound...]
    guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }), rest[slash] == "/" else {
      return url
    }
    let end = rest[slash...].firstIndex(where: { $0 == "?" || $0 == "#" }) ?? rest.endIndex
    return String(url[..<slash]) + canonicalPath(String(rest[slash..<end])) + rest[end...]
  }

  /// The query's parameters decoded, encoded with AWS's rules and sorted by name, then value.
  package static func canonicalQuery(_ query: String) -> String {
    guard !query.isEmpty else { return "" }
    let pairs = query.utf8.split(separator: UInt8(ascii: "&")).map { parameter -> (String, String) in
      let bytes = Array(parameter)
      let equals = bytes.firstIndex(of: UInt8(ascii: "=")) ?? bytes.endIndex
      let name = encode(percentDecoded(Array(bytes[..<equals]), plusIsSpace: true))
      let value =
        equals < bytes.endIndex ? encode(percentDecoded(Array(bytes[(equals + 1)...]), plusIsSpace: true)) : ""
      return (name, value)
    }
    return
      pairs
      .sorted { ($0.0, $0.1) < ($1.0, $1.1) }
      .map { "\($0.0)=\($0.1)" }.joined(separator: "&")
  }

  /// A header value as signed: spaces around it dropped, runs of spaces inside made one.
  package static func canonicalValue(_ value: String) -> String {
    value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
  }

  /// AWS's `UriEncode`: unreserved bytes (`A-Z a-z 0-9 - _ . ~`) kept, every other byte `%XX`.
  package static func encode(_ bytes: [UInt8]) -> String {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    let digits = Array("0123456789ABCDEF".utf8)
    for byte in bytes {
      if isUnreserved(byte) {
        out.append(byte)
      } else {
        out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]]
      }
    }
    return String(decoding: out, as: UTF8.self)
  }

  package static func isUnreserved(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
      UInt8(ascii: "~"):
      return true
    default:
      return false
    }
  }

  /// `%XX` decoded (a `%` without two hex digits kept); `+` as a space when `plusIsSpace`.
  static func percentDecoded(_ bytes: [UInt8], plusIsSpace: Bool) -> [UInt8] {
    guard plusIsSpace else { return Hex.percentDecoded(bytes) }
    // `+` written as `%2B` must stay a plus: `+` becomes a space before the escapes are decoded.
    return Hex.percentDecoded(bytes.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 })
  }

  /// `YYYYMMDDTHHMMSSZ` in UTC.
  package static func amzDate(_ date: Date) -> String {
    var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
      + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
  }

  static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for byte in digest { out += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
    return String(decoding: out, as: UTF8.self)
  }
}
