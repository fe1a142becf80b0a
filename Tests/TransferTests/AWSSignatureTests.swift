import Foundation
import Testing

@testable import BatchDLTransfer

/// AWS Signature Version 4 against AWS's published examples: the S3 examples of "Signature
/// Calculations for the Authorization Header" (GET Object with a Range, ListObjects, GET Bucket
/// lifecycle, PUT Object) and the general SigV4 test suite (`get-vanilla`...). Each signature was
/// also reproduced with an independent implementation (Python's hmac and hashlib).
@Suite struct AWSSignatureTests {
  static let s3Example = AWSSignature(
    provider: AWSProvider(region: "us-east-1", service: "s3"),
    credentials: AWSCredentials(
      accessKey: "AKIAIOSFODNN7EXAMPLE", secretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"))
  /// 20130524T000000Z.
  static let s3Date = Date(timeIntervalSince1970: 1_369_353_600)

  static func value(_ fields: [AWSSignature.Field], _ name: String) -> String? {
    fields.first { $0.name == name }?.value
  }

  @Test func getObjectWithRange() throws {
    let fields = try Self.s3Example.sign(
      method: "GET", url: "https://examplebucket.s3.amazonaws.com/test.txt", headers: [("Range", "bytes=0-9")],
      payloadHash: AWSSignature.emptyPayload, date: Self.s3Date)
    #expect(
      Self.value(fields, "Authorization")
        == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    )
    #expect(Self.value(fields, "x-amz-date") == "20130524T000000Z")
    #expect(Self.value(fields, "x-amz-content-sha256") == AWSSignature.emptyPayload)
    #expect(Self.value(fields, "x-amz-security-token") == nil)
    #expect(fields.map(\.line).contains("x-amz-date: 20130524T000000Z"))
  }

  @Test(
    arguments: [
      // ListObjects: the query sorted and encoded.
      (
        "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J",
        "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
      ),
      (
        "https://examplebucket.s3.amazonaws.com?prefix=J&max-keys=2",
        "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
      ),
      (
        "https://examplebucket.s3.amazonaws.com:443/?prefix=%4A&max-keys=2#x",
        "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
      ),
      // GET Bucket lifecycle: a parameter without a value is signed as `lifecycle=`.
      (
        "https://examplebucket.s3.amazonaws.com/?lifecycle",
        "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
      ),
    ])
  func bucketRequests(url: String, signature: String) throws {
    let fields = try Self.s3Example.sign(
      method: "GET", url: url, payloadHash: AWSSignature.emptyPayload, date: Self.s3Date)
    #expect(Self.value(fields, "Authorization")?.hasSuffix("Signature=\(signature)") == true)
    #expect(
      Self.value(fields, "Authorization")?.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date,") == true)
  }

  /// PUT Object: `$` in the key is `%24` in the canonical path, written raw or encoded.
  @Test(arguments: [
    "https://examplebucket.s3.amazonaws.com/test$file.text", "https://examplebucket.s3.amazonaws.com/test%24file.text",
  ])
  func putObject(url: String) throws {
    let fields = try Self.s3Example.sign(
      method: "PUT", url: url,
      headers: [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
      payloadHash: "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072", date: Self.s3Date)
    #expect(
      Self.value(fields, "Authorization")?.hasSuffix(
        "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
      ) == true)
  }

  /// The general test suite (service `service`, 20150830T123600Z, no `x-amz-content-sha256`):
  /// signed with the lower-level `signature`, which takes the headers as given.
  @Test(
    arguments: [
      ("get-vanilla", "/", "", [] as [String], "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
      (
        "get-vanilla-query-order-key-case", "/", "Param2=value2&Param1=value1", [],
        "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
      ),
      (
        "get-vanilla-query-unreserved", "/",
        "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
        [], "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"
      ),
      ("get-vanilla-utf8-query", "/", "ሴ=bar", [], "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"),
      ("get-utf8", "/ሴ", "", [], "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"),
      (
        "get-header-value-trim", "/", "", ["My-Header1: value1", "My-Header2:  \"a   b   c\""],
        "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"
      ),
    ])
  func generalTestSuite(name: String, path: String, query: String, extra: [String], signature: String) {
    let signer = AWSSignature(
      provider: AWSProvider(region: "us-east-1", service: "service"),
      credentials: AWSCredentials(accessKey: "AKIDEXAMPLE", secretKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"))
    var headers: [(name: String, value: String)] = [
      ("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z"),
    ]
    for line in extra {
      let colon = line.firstIndex(of: ":") ?? line.endIndex
      headers.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
    }
    let computed = signer.signature(
      method: "GET", path: path, query: query, headers: headers, payloadHash: AWSSignature.emptyPayload,
      amzDate: "20150830T123600Z")
    #expect(computed.hex == signature, "\(name)")
    #expect(computed.scope == "20150830/us-east-1/service/aws4_request")
  }

  @Test func sessionTokenIsSignedAndSent() throws {
    var signer = Self.s3Example
    signer.credentials.sessionToken = "token/with+chars="
    let fields = try signer.sign(method: "GET", url: "http://127.0.0.1:9000/bucket/key", date: Self.s3Date)
    #expect(Self.value(fields, "x-amz-security-token") == "token/with+chars=")
    #expect(Self.value(fields, "x-amz-content-sha256") == "UNSIGNED-PAYLOAD")
    #expect(
      Self.value(fields, "Authorization")?.contains(
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") == true)
    #expect(!signer.credentials.description.contains("token/with"))
    #expect(!signer.credentials.description.contains("EXAMPLEKEY"))
    var dumped = ""
    dump(signer, to: &dumped)
    for shown in ["\(signer)", String(reflecting: signer), dumped] {
      #expect(!shown.contains("token/with") && !shown.contains("EXAMPLEKEY"), "\(shown)")
      #expect(shown.contains("AKIAIOSFODNN7EXAMPLE"))
    }
  }

  @Test(
    arguments: [
      ("http://127.0.0.1:9000/b/k", "127.0.0.1:9000", "/b/k", ""),
      ("http://127.0.0.1:80/b/k", "127.0.0.1", "/b/k", ""),
      ("https://s3.example:443", "s3.example", "/", ""),
      ("https://s3.example:8443?list-type=2", "s3.example:8443", "/", "list-type=2"),
      ("https://user:pw@[::1]:9000/b?x=1#frag", "[::1]:9000", "/b", "x=1"),
      ("HTTP://[::1]/b", "[::1]", "/b", ""),
    ])
  func hostHeaderAndParts(url: String, host: String, path: String, query: String) throws {
    #expect(try AWSSignature.target(of: url) == AWSSignature.Target(host: host, path: path, query: query))
  }

  @Test(
    arguments: [
      // Segments decoded then encoded once: `%2F` inside a segment stays, spaces and `+` are encoded.
      ("/b/a%2Fb/c d+e", "/b/a%2Fb/c%20d%2Be"),
      ("/b/%7e~%41", "/b/~~A"),
      ("/b//x/", "/b//x/"),
      ("/b/caf%C3%A9", "/b/caf%C3%A9"),
      ("/b/%2e%2e/x", "/b/../x"),
    ])
  func canonicalPath(path: String, canonical: String) {
    #expect(AWSSignature.canonicalPath(path) == canonical)
  }

  @Test(
    arguments: [
      (
        "list-type=2&prefix=a%2F&continuation-token=1%2F2%2B3%3D",
        "continuation-token=1%2F2%2B3%3D&list-type=2&prefix=a%2F"
      ),
      ("prefix=a/&list-type=2", "list-type=2&prefix=a%2F"),
      ("b=2&a=&a", "a=&a=&b=2"),
      ("a=2&a=1", "a=1&a=2"),
      ("q=a+b", "q=a%20b"),
      ("q=a%2Bb", "q=a%2Bb"),
    ])
  func canonicalQuery(query: String, canonical: String) {
    #expect(AWSSignature.canonicalQuery(query) == canonical)
  }

  @Test(arguments: [
    "aws:amz:us-east-1:s3", "AWS:AMZ:eu-west-3:s3", "aws:amz:garage:s3", "aws:amz:us-east-1:execute-api",
  ])
  func providerIsRead(text: String) throws {
    let provider = try AWSProvider(parsing: text)
    let parts = text.split(separator: ":")
    #expect(provider == AWSProvider(region: String(parts[2]), service: String(parts[3])))
  }

  @Test(
    arguments: [
      ("aws:amz:us-east-1", "3 part(s)"),
      ("aws:amz:us-east-1:s3:x", "5 part(s)"),
      ("", "1 part(s)"),
      ("osc:osc:eu:s3", "starts otherwise"),
      ("aws:amz::s3", "the region"),
      ("aws:amz:us east:s3", "the region"),
      ("aws:amz:us-east-1:", "the service"),
      ("aws:amz:us-east-1:s3/x", "the service"),
    ])
  func malformedProviderIsRefused(text: String, reason: String) {
    do {
      _ = try AWSProvider(parsing: text)
      Issue.record("\(text) was accepted")
    } catch {
      #expect(error.message.contains("aws:amz:REGION:SERVICE"))
      #expect(error.message.contains(reason), "\(error.message)")
    }
  }

  @Test(arguments: ["Host", "x-amz-date", " X-Amz-Content-SHA256", "authorization"])
  func signersOwnHeadersAreRefused(name: String) {
    #expect(throws: AWSSignatureProblem.self) {
      try Self.s3Example.sign(method: "GET", url: "http://h/b", headers: [(name, "x")], date: Self.s3Date)
    }
  }

  @Test(arguments: ["ftp://h/b", "h/b", "http:///b", "http://h:99999/b", "http://h:x/b"])
  func unreadableURLsAreRefused(url: String) {
    #expect(throws: AWSSignatureProblem.self) {
      try Self.s3Example.sign(method: "GET", url: url, date: Self.s3Date)
    }
  }

  @Test func dateIsUTC() {
    #expect(AWSSignature.amzDate(Date(timeIntervalSince1970: 1_440_938_160)) == "20150830T123600Z")
    #expect(AWSSignature.amzDate(Date(timeIntervalSince1970: 1_440_938_160.9)) == "20150830T123600Z")
  }
}
