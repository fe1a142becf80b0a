import Foundation
import TestSupport
import Testing

@testable import BatchDLManifest
@testable import BatchDLTransfer

/// The signer against a server that checks signatures: moto with IAM authentication on. Requests
/// go out with curl, carrying the signer's headers; the listing pages are read with `S3Listing`
/// and the objects fetched by the URLs `S3Bucket` makes of their keys.
@Suite(.serialized) struct AWSSignatureMotoTests {
  static let keys = ["a/0.txt", "a/1.txt", "a/2.txt", "a/sp ace+plus$&=,;:@.txt", "a/%2e%2e/x", "a/caf\u{E9}/b"]

  static func body(_ key: String) -> [UInt8] { Array("body of \(key)\n".utf8) }

  struct Answer {
    var status: Int
    var body: [UInt8]
  }

  /// GET `url` with curl (no proxy, no URL globbing), with the headers `signer` adds.
  static func get(_ url: String, _ signer: AWSSignature) throws -> Answer {
    guard let curl = ExternalTool.find("curl") else { throw MotoServer.Problem("curl is not installed") }
    let folder = TemporaryDirectory()
    let fields = try signer.sign(method: "GET", url: url, date: Date())
    var arguments = ["-s", "-g", "--noproxy", "*", "-o", folder.path + "/body", "-w", "%{http_code}"]
    for field in fields { arguments += ["-H", field.line] }
    let outcome = try ExternalTool.run(curl, arguments + [url], timeout: 60)
    let body = FileManager.default.contents(atPath: folder.path + "/body").map { [UInt8]($0) } ?? []
    return Answer(status: Int(outcome.stdout) ?? -1, body: body)
  }

  static func signer(_ moto: MotoServer, secret: String? = nil, token: String?? = nil) throws -> AWSSignature {
    AWSSignature(
      provider: try AWSProvider(parsing: moto.provider),
      credentials: AWSCredentials(
        accessKey: moto.accessKey, secretKey: secret ?? moto.secretKey, sessionToken: token ?? moto.sessionToken))
  }

  /// Every page of the listing of `bucket`, two keys a page.
  static func list(_ bucket: S3Bucket, _ signer: AWSSignature) throws -> [S3ListingPage] {
    var pages: [S3ListingPage] = []
    var token: String?
    for _ in 0..<20 {
      let answer = try get(bucket.listURL(continuationToken: token) + "&max-keys=2", signer)
      #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
      let page = try S3Listing.parse(answer.body).get()
      pages.append(page)
      guard page.isTruncated else { break }
      token = page.nextContinuationToken
    }
    return pages
  }

  @Test(.enabled(if: MotoServer.isInstalled, Comment(rawValue: MotoServer.missing)))
  func signedRequestsAreAcceptedAndAWrongSecretIsRefused() throws {
    let moto = try MotoServer(objects: Self.keys.map { MotoServer.Object($0, Self.body($0)) })
    let signer = try Self.signer(moto)
    let bucket = try S3Bucket(url: moto.url("a/"))

    // The listing, paged with continuation tokens: every key once, in order.
    let pages = try Self.list(bucket, signer)
    #expect(pages.count == 3)
    #expect(pages.dropLast().allSatisfy { $0.isTruncated && $0.nextContinuationToken != nil })
    let listed = pages.flatMap(\.objects)
    #expect(
      listed.map(\.key).sorted { $0.lexicographicallyPrecedes($1) }
        == Self.keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
    #expect(listed.allSatisfy { $0.etag?.hasPrefix("\"") == true && $0.lastModified != nil })

    // Each object by the URL made of its key: its bytes, its listed size.
    for object in listed {
      guard case .object(let url, _) = bucket.map(key: object.key) else {
        Issue.record("\(object.keyText) is not an object")
        continue
      }
      let answer = try Self.get(url, signer)
      #expect(answer.status == 200, "\(url): \(String(decoding: answer.body, as: UTF8.self))")
      #expect(answer.body == Self.body(object.keyText))
      #expect(Int64(answer.body.count) == object.size)
    }

    // A wrong secret: 403, SignatureDoesNotMatch, for an object and for a listing.
    let wrong = try Self.signer(moto, secret: moto.secretKey + "x")
    let refused = try Self.get(moto.url("a/0.txt"), wrong)
    #expect(refused.status == 403)
    let listing = try Self.get(bucket.listURL(), wrong)
    #expect(listing.status == 403)
    if case .failure(let problem) = S3Listing.parse(listing.body) {
      #expect(problem.code == "SignatureDoesNotMatch")
    } else {
      Issue.record("a refused listing was read as a page")
    }
  }

  @Test(.enabled(if: MotoServer.isInstalled, Comment(rawValue: MotoServer.missing)))
  func aSessionTokenIsSentAndChecked() throws {
    let moto = try MotoServer(objects: [MotoServer.Object("k", Array("token".utf8))], session: true)
    #expect(moto.sessionToken != nil)
    #expect(moto.accessKey.hasPrefix("ASIA"))
    let accepted = try Self.get(moto.url("k"), try Self.signer(moto))
    #expect(accepted.status == 200)
    #expect(accepted.body == Array("token".utf8))
    let bucket = try S3Bucket(url: moto.url())
    let listing = try Self.get(bucket.listURL(), try Self.signer(moto))
    #expect(try S3Listing.parse(listing.body).get().objects.map(\.keyText) == ["k"])
    // Without the token, or with another one, the role's key is refused.
    #expect(try Self.get(moto.url("k"), try Self.signer(moto, token: .some(nil))).status == 403)
    let forged = try Self.get(moto.url("k"), try Self.signer(moto, token: (moto.sessionToken ?? "") + "x"))
    #expect(forged.status == 400 || forged.status == 403)
  }

  /// The bucket of the issue's run: 2,500 objects are three pages of S3's default 1,000 keys, each
  /// read whole and mapped to a relative path, the hostile keys among them refused one by one.
  @Test(.enabled(if: MotoServer.isInstalled, Comment(rawValue: MotoServer.missing)))
  func twoThousandFiveHundredObjectsAreThreePages() throws {
    let hostile = ["pub/../escape", "pub//abs", "pub/dir/", "pub/ctl\u{1}x"]
    let keys = (0..<2500).map { "pub/\($0 % 10)/\($0).bin" } + hostile
    let started = Date()
    let moto = try MotoServer(objects: keys.map { MotoServer.Object($0, Array("\($0)".utf8)) })
    let filled = Date().timeIntervalSince(started)
    let signer = try Self.signer(moto)
    let bucket = try S3Bucket(url: moto.url("pub/"))
    var pages: [S3ListingPage] = []
    var token: String?
    for _ in 0..<10 {
      let answer = try Self.get(bucket.listURL(continuationToken: token), signer)
      #expect(answer.status == 200)
      let page = try S3Listing.parse(answer.body).get()
      pages.append(page)
      guard page.isTruncated else { break }
      token = page.nextContinuationToken
    }
    #expect(pages.count == 3)
    #expect(pages.map(\.objects.count) == [1000, 1000, 504])
    var placed: [[UInt8]] = []
    var refused: [String] = []
    var markers = 0
    for object in pages.flatMap(\.objects) {
      switch bucket.map(key: object.key) {
      case .object(_, let path): placed.append(path)
      case .folderMarker: markers += 1
      case .refused(let reason): refused.append(reason)
      }
    }
    #expect(placed.count == 2500)
    #expect(Set(placed).count == 2500)
    #expect(markers == 1)
    #expect(refused.count == 3, "\(refused)")
    #expect(filled < 120, "filling moto with 2,504 objects took \(filled) s")
  }
}
