import Foundation
import TestSupport
import Testing

/// `aws_sigv4:` against a real S3-compatible server that checks every signature (moto with IAM
/// authentication on): objects fetched with a right key, refused with a wrong one, an assumed
/// role's token, and a bucket as an index — paged, hostile keys refused one by one, changed
/// objects fetched again by their ETag, an unchanged bucket costing one request per page.
@Suite(.serialized, .enabled(if: MotoServer.isInstalled, Comment(rawValue: MotoServer.missing)))
struct BucketTests {
  static func body(_ key: String) -> [UInt8] { Array("object \(key)\n".utf8) }

  static func manifest(_ moto: MotoServer, secret: String = "${SECRET}", token: Bool = false, tasks: String) -> String {
    """
    version: 1
    sessions:
      s3:
        retry: {attempts: 1}
        aws_sigv4:
          provider: "\(moto.provider)"
          access_key: "${ACCESS}"
          secret_key: "\(secret)"
    \(token ? "      session_token: \"${TOKEN}\"\n" : "")    tasks:
    \(tasks)
    """
  }

  static func environment(_ moto: MotoServer) -> [String: String] {
    var env = ["ACCESS": moto.accessKey, "SECRET": moto.secretKey]
    if let token = moto.sessionToken { env["TOKEN"] = token }
    return env
  }

  @Test func objectsAreFetchedSignedAndAWrongSecretIsRefusedWith403() throws {
    let moto = try MotoServer(objects: [.init("a/b.txt", Self.body("a/b.txt")), .init("c d+e.bin", Self.body("c"))])
    defer { moto.stop() }
    let fixture = try RunFixture()
    let tasks = """
            - download: \(moto.url("a/b.txt"))
              to: b.txt
            - download: \(moto.url("c%20d%2Be.bin"))
              to: cde.bin
      """
    fixture.manifest(Self.manifest(moto, secret: "wrong-secret-key-0000", tasks: tasks))
    let wrong = try fixture.run(environment: Self.environment(moto))
    #expect(wrong.status == 1)
    let codes = try fixture.tasks().values.compactMap { ($0["error"] as? [String: Any])?["code"] as? String }
    #expect(codes == ["http-403", "http-403"], "\(wrong.stderr)")
    fixture.manifest(Self.manifest(moto, tasks: tasks))
    let right = try fixture.run(environment: Self.environment(moto))
    #expect(right.status == 0, "\(right.stderr)")
    #expect(fixture.holds("b.txt", Self.body("a/b.txt")) && fixture.holds("cde.bin", Self.body("c")))
    #expect(
      fixture.leaks(
        of: [moto.secretKey, moto.accessKey], outputs: [wrong.stdout, wrong.stderr, right.stdout, right.stderr]
      )
      .isEmpty)
  }

  @Test func anAssumedRolesTokenIsSentAndSigned() throws {
    let moto = try MotoServer(objects: [.init("t.txt", Self.body("t"))], session: true)
    defer { moto.stop() }
    let fixture = try RunFixture()
    let tasks = """
            - download: \(moto.url("t.txt"))
              to: t.txt
      """
    fixture.manifest(Self.manifest(moto, tasks: tasks))
    #expect(try fixture.run(environment: Self.environment(moto)).status == 1, "without the token: refused")
    fixture.manifest(Self.manifest(moto, token: true, tasks: tasks))
    let outcome = try fixture.run(environment: Self.environment(moto))
    #expect(outcome.status == 0, "\(outcome.stderr)")
    #expect(fixture.holds("t.txt", Self.body("t")))
    #expect(fixture.leaks(of: [moto.sessionToken ?? "-"], outputs: [outcome.stdout, outcome.stderr]).isEmpty)
  }

  @Test func aBucketIsAnIndexOfThreePagesWithHostileKeysRefusedOneByOne() throws {
    var objects = (0..<2_500).map {
      MotoServer.Object(String(format: "rel/%02d/f%04d.bin", $0 % 7, $0), Self.body("\($0)"))
    }
    objects += [
      .init("rel/../escape.bin", Self.body("escape")), .init("rel/.batchdl/state.db", Self.body("state")),
      .init("rel/manifest.yaml", Self.body("not the manifest")),
      .init("rel/folder/", []), .init("rel/deep/x/y.bin", Self.body("deep")),
    ]
    let moto = try MotoServer(objects: objects)
    defer { moto.stop() }
    let fixture = try RunFixture()
    fixture.manifest(
      Self.manifest(
        moto,
        tasks: """
                - index: \(moto.url("rel/"))
                  depth: 2
                  exclude: ["06/*"]
          """))
    let first = try fixture.run(environment: Self.environment(moto))
    #expect(first.status == 1, "three keys are refused: the night is not a success")
    let tasks = try fixture.tasks()
    let placed = (0..<2_500).filter { $0 % 7 != 6 }
    for number in placed.prefix(50) {
      #expect(fixture.holds(String(format: "%02d/f%04d.bin", number % 7, number), Self.body("\(number)")))
    }
    let completed = tasks.values.filter { ($0["outcome"] as? String) == "completed" }.count
    #expect(completed == placed.count, "\(first.stderr.prefix(2_000))")
    #expect(!fixture.files().contains { $0.hasPrefix("escape") || $0.contains("y.bin") || $0.hasPrefix("06/") })
    #expect(fixture.bytes("manifest.yaml") != Self.body("not the manifest"), "batchdl's own files are never a key's")
    let refused = tasks.filter { ($0.value["error"] as? [String: Any])?["code"] != nil }
    #expect(refused.count == 3, "\(refused.keys.sorted())")
    let summary = try fixture.summary()
    #expect(summary["descriptor_requests"] as? Int == 3, "2,504 keys are three pages of 1,000")

    // A changed object is fetched again by its ETag; the rest cost nothing but the pages.
    try moto.put("rel/00/f0000.bin", Array("changed\n".utf8))
    let second = try fixture.run(environment: Self.environment(moto))
    #expect(second.status == 1)
    #expect(fixture.holds("00/f0000.bin", Array("changed\n".utf8)))
    let again = try fixture.summary()
    #expect(again["descriptor_requests"] as? Int == 3)
    #expect(again["requests"] as? Int == 3 + 1, "\(again)")
  }
}

extension BucketTests {
  @Test func aBucketListingRefusedForAWrongSecretFailsTheNightAndPlacesNothing() throws {
    let moto = try MotoServer(objects: [.init("p/a.txt", Self.body("a"))])
    defer { moto.stop() }
    let fixture = try RunFixture()
    fixture.manifest(
      Self.manifest(
        moto, secret: "wrong-secret-key-0000",
        tasks: """
                - index: \(moto.url("p/"))
                  to: m/
          """))
    let outcome = try fixture.run(environment: Self.environment(moto))
    #expect(outcome.status == 1)
    #expect(!fixture.files().contains { $0.hasPrefix("m/") })
    #expect(outcome.stderr.contains("403"), "\(outcome.stderr)")
    let codes = try fixture.tasks().values.compactMap { ($0["error"] as? [String: Any])?["code"] as? String }
    #expect(codes == ["descriptor"], "\(codes)")
  }
}
