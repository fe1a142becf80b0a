import Foundation
import Testing

@testable import BatchDLManifest

/// ListObjectsV2 pages as S3 and moto write them, and hostile ones: what the parser keeps, and
/// what it refuses with a reason.
@Suite struct S3ListingTests {
  static func page(_ body: String, truncated: String = "false", token: String? = nil, extra: String = "") -> [UInt8] {
    let tokenElement = token.map { "<NextContinuationToken>\($0)</NextContinuationToken>" } ?? ""
    return Array(
      """
      <?xml version="1.0" encoding="UTF-8"?>
      <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix>a/</Prefix>\
      <KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>\(truncated)</IsTruncated>\(tokenElement)\(extra)\(body)\
      </ListBucketResult>
      """.utf8)
  }

  static func contents(
    _ key: String, size: String = "6", etag: String = "&quot;744d6dbfdbed0707e1db5a0d9967710f&quot;"
  )
    -> String
  {
    "<Contents><Key>\(key)</Key><LastModified>2026-11-28T16:36:14.000Z</LastModified><ETag>\(etag)</ETag>"
      + "<Size>\(size)</Size><StorageClass>STANDARD</StorageClass></Contents>"
  }

  static func parsed(_ bytes: [UInt8]) throws -> S3ListingPage {
    try S3Listing.parse(bytes).get()
  }

  static func problem(_ bytes: [UInt8]) -> S3ListingProblem? {
    if case .failure(let problem) = S3Listing.parse(bytes) { return problem }
    return nil
  }

  @Test func readsAMotoPage() throws {
    let page = try Self.parsed(
      Self.page(
        Self.contents("a/0000.txt") + Self.contents("a/b &amp; c&lt;d&gt;.txt", size: "0", etag: "\"x\"")
          + "<CommonPrefixes><Prefix>a/sub/</Prefix></CommonPrefixes>",
        truncated: "true", token: "31a50024ff75eca9ad81af0994f86f51"))
    #expect(page.isTruncated)
    #expect(page.nextContinuationToken == "31a50024ff75eca9ad81af0994f86f51")
    #expect(page.keyCount == 2)
    #expect(page.prefix == Array("a/".utf8))
    #expect(page.objects.map(\.keyText) == ["a/0000.txt", "a/b & c<d>.txt"])
    #expect(page.objects.map(\.size) == [6, 0])
    // The ETag keeps its quotes, written as entities or not.
    #expect(page.objects.map(\.etag) == ["\"744d6dbfdbed0707e1db5a0d9967710f\"", "\"x\""])
    #expect(page.objects[0].lastModified == "2026-11-28T16:36:14.000Z")
    #expect(page.commonPrefixes == [Array("a/sub/".utf8)])
  }

  @Test func urlEncodedKeysAreDecoded() throws {
    let page = try Self.parsed(
      Self.page(
        Self.contents("a/%252e%252e/x") + Self.contents("a/sp+ace%2Bplus%24") + Self.contents("a/ctl%01x")
          + Self.contents("a/caf%C3%A9"),
        extra: "<EncodingType>url</EncodingType>"))
    #expect(
      page.objects.map(\.key) == [
        Array("a/%2e%2e/x".utf8), Array("a/sp ace+plus$".utf8), Array("a/ctl\u{1}x".utf8), Array("a/café".utf8),
      ])
  }

  @Test func keysAreBytesNotNormalizedText() throws {
    let nfc = "caf\u{E9}"
    let nfd = "cafe\u{301}"
    let page = try Self.parsed(Self.page(Self.contents("a/" + nfc) + Self.contents("a/" + nfd)))
    #expect(page.objects.count == 2)
    #expect(page.objects[0].key != page.objects[1].key)
    #expect(page.objects[1].key == Array(("a/" + nfd).utf8))
  }

  @Test func aPageOfFiveThousandObjects() throws {
    let body = (0..<5000).map { Self.contents("a/\($0).bin", size: "\($0)") }.joined()
    let page = try Self.parsed(Self.page(body))
    #expect(page.objects.count == 5000)
    #expect(page.objects[4999].keyText == "a/4999.bin")
    #expect(page.objects[4999].size == 4999)
  }

  @Test func anErrorDocumentGivesItsCodeAndMessage() {
    let bytes = Array(
      """
      <?xml version="1.0" encoding="utf-8"?>
      <Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided. Check your key and signing method.</Message><RequestId>1gA7</RequestId></Error>
      """.utf8)
    let problem = Self.problem(bytes)
    #expect(problem?.code == "SignatureDoesNotMatch")
    #expect(problem?.message.contains("SignatureDoesNotMatch: The request signature we calculated") == true)
  }

  @Test(
    arguments: [
      // Billion laughs: refused before any expansion.
      """
      <?xml version="1.0"?>
      <!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
      <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
      <ListBucketResult><Contents><Key>&lol3;</Key><Size>1</Size></Contents></ListBucketResult>
      """,
      // An external entity that would read a file.
      """
      <?xml version="1.0"?>
      <!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><ListBucketResult><Contents><Key>&x;</Key><Size>1</Size></Contents></ListBucketResult>
      """,
      "<!DOCTYPE ListBucketResult><ListBucketResult></ListBucketResult>",
    ])
  func aDTDIsRefused(text: String) {
    #expect(Self.problem(Array(text.utf8))?.message.contains("<!DOCTYPE>") == true)
  }

  @Test func anUndeclaredEntityIsRefused() {
    let problem = Self.problem(Self.page(Self.contents("a/&nope;")))
    #expect(problem != nil)
  }

  @Test(arguments: ["-1", "1.5", "", " ", "1e3", "0x10", "99999999999999999999", "+5"])
  func aSizeThatIsNotAWholeNumberIsRefused(size: String) {
    let problem = Self.problem(Self.page(Self.contents("a/x", size: size)))
    #expect(problem?.message.contains("not a whole number of bytes") == true, "\(String(describing: problem))")
  }

  @Test func aMissingSizeIsRefused() {
    let bytes = Self.page("<Contents><Key>a/x</Key></Contents>")
    #expect(Self.problem(bytes)?.message.contains("missing") == true)
  }

  @Test(arguments: [nil, ""] as [String?])
  func aTruncatedPageWithoutATokenIsRefused(token: String?) {
    let problem = Self.problem(Self.page(Self.contents("a/x"), truncated: "true", token: token))
    #expect(problem?.message.contains("NextContinuationToken") == true)
  }

  @Test(
    arguments: [
      ("<ListAllMyBucketsResult><Buckets/></ListAllMyBucketsResult>", "<ListAllMyBucketsResult>"),
      ("<html><body>login</body></html>", "<html>"),
      ("", "empty"),
      ("<ListBucketResult><Contents><Key>a</Key>", "well-formed"),
      ("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>", "no <Key>"),
      ("<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>", "not true or false"),
      ("<ListBucketResult><KeyCount>-2</KeyCount></ListBucketResult>", "<KeyCount>"),
      ("<ListBucketResult><EncodingType>base64</EncodingType></ListBucketResult>", "url only"),
    ])
  func whatIsNotAListingIsRefused(text: String, reason: String) {
    let problem = Self.problem(Array(text.utf8))
    #expect(problem?.message.contains(reason) == true, "\(String(describing: problem))")
  }

  @Test func nestingAndSizeAreBounded() {
    let deep =
      "<ListBucketResult>" + String(repeating: "<x>", count: 100) + String(repeating: "</x>", count: 100)
      + "</ListBucketResult>"
    #expect(Self.problem(Array(deep.utf8))?.message.contains("deep") == true)
    let long = Self.page(Self.contents("a/" + String(repeating: "k", count: S3Listing.maxText + 1)))
    #expect(Self.problem(long)?.message.contains("more than") == true)
    #expect(Self.problem([UInt8](repeating: 0x20, count: S3Listing.maxBytes + 1))?.message.contains("MiB") == true)
  }

  @Test func elementsElsewhereAreIgnored() throws {
    // A <Key> or <Size> outside <Contents>, and a <Contents> nested deeper, list nothing.
    let page = try Self.parsed(
      Self.page(
        "<Key>a/stray</Key><Owner><Contents><Key>a/deep</Key><Size>1</Size></Contents></Owner>"
          + Self.contents("a/real")))
    #expect(page.objects.map(\.keyText) == ["a/real"])
  }
}
