import Foundation
import Testing

@testable import BatchDLManifest

/// Bucket URLs (path-style and virtual-hosted), the ListObjectsV2 URLs made from them, and listed
/// keys mapped to object URLs and relative paths, hostile keys refused one by one.
@Suite struct S3BucketTests {
  @Test(
    arguments: [
      ("http://127.0.0.1:9000/bucket/PREFIX/", "http://127.0.0.1:9000", "bucket", S3Bucket.Style.path, "PREFIX/"),
      ("http://127.0.0.1:9000/bucket/PREFIX", "http://127.0.0.1:9000", "bucket", .path, "PREFIX/"),
      ("http://127.0.0.1:9000/bucket/", "http://127.0.0.1:9000", "bucket", .path, ""),
      ("http://127.0.0.1:9000/bucket", "http://127.0.0.1:9000", "bucket", .path, ""),
      ("http://127.0.0.1:80/bucket/a%20b/c/", "http://127.0.0.1", "bucket", .path, "a b/c/"),
      ("https://s3.eu-west-1.amazonaws.com/bucket/x/", "https://s3.eu-west-1.amazonaws.com", "bucket", .path, "x/"),
      (
        "https://examplebucket.s3.eu-west-1.amazonaws.com/photos/", "https://examplebucket.s3.eu-west-1.amazonaws.com",
        "examplebucket", .virtualHosted, "photos/"
      ),
      (
        "https://my.dotted.bucket.s3.amazonaws.com/", "https://my.dotted.bucket.s3.amazonaws.com", "my.dotted.bucket",
        .virtualHosted, ""
      ),
      (
        "https://b.s3-us-west-2.amazonaws.com:443/p/q/", "https://b.s3-us-west-2.amazonaws.com", "b", .virtualHosted,
        "p/q/"
      ),
    ])
  func readsBucketURLs(url: String, origin: String, bucket: String, style: S3Bucket.Style, prefix: String) throws {
    let value = try S3Bucket(url: url)
    #expect(value.origin == origin)
    #expect(value.bucket == bucket)
    #expect(value.style == style)
    #expect(value.prefix == Array(prefix.utf8))
  }

  @Test(arguments: [
    "http://127.0.0.1:9000/", "http://127.0.0.1:9000", "http://h/b/?x=1", "http://h/b/#f", "ftp://h/b/",
  ])
  func refusesWhatNamesNoBucket(url: String) {
    #expect(throws: S3ListingProblem.self) { try S3Bucket(url: url) }
  }

  @Test func listURLs() throws {
    let path = try S3Bucket(url: "http://127.0.0.1:9000/bucket/PREFIX/")
    #expect(path.listURL() == "http://127.0.0.1:9000/bucket?list-type=2&prefix=PREFIX%2F&encoding-type=url")
    #expect(
      path.listURL(continuationToken: "1/2+3=4 5")
        == "http://127.0.0.1:9000/bucket?list-type=2&prefix=PREFIX%2F&encoding-type=url&continuation-token=1%2F2%2B3%3D4%205"
    )
    let whole = try S3Bucket(url: "http://127.0.0.1:9000/bucket/")
    #expect(whole.listURL() == "http://127.0.0.1:9000/bucket?list-type=2&encoding-type=url")
    let virtual = try S3Bucket(url: "https://examplebucket.s3.us-east-1.amazonaws.com/a b/é/")
    #expect(
      virtual.listURL()
        == "https://examplebucket.s3.us-east-1.amazonaws.com/?list-type=2&prefix=a%20b%2F%C3%A9%2F&encoding-type=url")
  }

  static let bucket: S3Bucket = {
    do { return try S3Bucket(url: "http://127.0.0.1:9000/bucket/a/") } catch { fatalError("\(error)") }
  }()

  @Test(
    arguments: [
      ("a/x.txt", "http://127.0.0.1:9000/bucket/a/x.txt", "x.txt"),
      ("a/sub/dir/f", "http://127.0.0.1:9000/bucket/a/sub/dir/f", "sub/dir/f"),
      (
        "a/sp ace+plus$&=?#.txt", "http://127.0.0.1:9000/bucket/a/sp%20ace%2Bplus%24%26%3D%3F%23.txt",
        "sp ace+plus$&=?#.txt"
      ),
      // `%2e%2e` is a name of six characters, not `..`: its `%` is sent as `%25`.
      ("a/%2e%2e/x", "http://127.0.0.1:9000/bucket/a/%252e%252e/x", "%2e%2e/x"),
      ("a/..x/x..", "http://127.0.0.1:9000/bucket/a/..x/x..", "..x/x.."),
      ("a/café", "http://127.0.0.1:9000/bucket/a/caf%C3%A9", "café"),
      ("a/back\\slash", "http://127.0.0.1:9000/bucket/a/back%5Cslash", "back\\slash"),
    ])
  func objectsMapToURLAndPath(key: String, url: String, path: String) {
    #expect(Self.bucket.map(key: Array(key.utf8)) == .object(url: url, relativePath: Array(path.utf8)))
  }

  @Test func virtualHostedObjectURL() throws {
    let bucket = try S3Bucket(url: "https://examplebucket.s3.amazonaws.com/")
    #expect(
      bucket.map(key: Array("a/b c".utf8))
        == .object(url: "https://examplebucket.s3.amazonaws.com/a/b%20c", relativePath: Array("a/b c".utf8)))
  }

  @Test(arguments: ["a/", "a/sub/", "a/sub/deeper/"])
  func folderMarkersAreSkipped(key: String) {
    #expect(Self.bucket.map(key: Array(key.utf8)) == .folderMarker)
  }

  @Test(
    arguments: [
      ("a/../x", "'..'"),
      ("a/..", "'..'"),
      ("a/./x", "'..'"),
      ("a/sub/../../etc/passwd", "'..'"),
      ("a//etc/passwd", "absolute"),
      ("a/x//y", "empty segment"),
      ("/etc/passwd", "not under the listed prefix"),
      ("b/x", "not under the listed prefix"),
      ("a/x\u{0}y", "NUL"),
      ("a/x\ny", "control character"),
      ("a/x\u{7F}", "control character"),
      ("a/ctl\u{1}/", "control character"),
      ("a/" + String(repeating: "n", count: 256), "255 bytes"),
    ])
  func escapingKeysAreRefusedOneByOne(key: String, reason: String) {
    guard case .refused(let message) = Self.bucket.map(key: Array(key.utf8)) else {
      Issue.record("\(key.debugDescription) was not refused")
      return
    }
    #expect(message.contains(reason), "\(message)")
    #expect(!message.contains("\n"))
    #expect(!message.contains("\u{0}"))
  }

  @Test func aKeyThatIsNotUTF8IsMappedByItsBytes() {
    let key: [UInt8] = Array("a/".utf8) + [0xFF, 0xFE]
    #expect(
      Self.bucket.map(key: key) == .object(url: "http://127.0.0.1:9000/bucket/a/%FF%FE", relativePath: [0xFF, 0xFE]))
  }
}
