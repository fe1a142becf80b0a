import BatchDL
import Foundation
import TestServer
import TestSupport
import Testing

/// A `${VAR}` value reaches the server in whatever spelling the URL needs, but never the state
/// folder (databases and their WAL files included, as bytes), the report, the events or the output.
@Suite struct SecretStorageTests {
  static let secret = "s3cr|t"

  /// The spellings a leak could take: as written, percent-encoded (either hex case), Base64.
  static let spellings: [String] = {
    let base64 = Data(secret.utf8).base64EncodedString()
    return [secret, "s3cr%7Ct", "s3cr%7ct", base64, String(base64.prefix { $0 != "=" })]
  }()

  func leaks(_ fixture: RunFixture, outputs: [String] = []) -> [String] {
    fixture.leaks(of: Self.spellings, outputs: outputs)
  }

  @Test func checkpointsAndTheHTTPCacheNeverHoldAnEncodedSecret() throws {
    let fixture = try RunFixture()
    let body = TestData.pseudoRandomBytes(count: 3 << 20, seed: 81)
    fixture.server.route(
      "/big.bin",
      trickling(body, etag: "v1"))
    fixture.server.route(
      "/data", .fixed(.json(200, "{}", headers: ["Cache-Control": "max-age=600", "ETag": "\"d1\""])))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - data: BASE/data?token=${TOKEN}
            - download: BASE/big.bin?token=${TOKEN}
              to: big.bin
      """)
    let environment = ["TOKEN": Self.secret]
    let process = try fixture.start(
      ["--report", "report.json", "--events", "events.jsonl"], environment: environment)
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline && fixture.checkpointBytes() < 200_000 { usleep(50_000) }
    kill(process.processIdentifier, SIGINT)
    process.waitUntilExit()
    #expect(process.terminationStatus == 3)
    #expect(fixture.checkpointBytes() > 0)
    // The server did get the secret (percent-encoded in the query).
    #expect(fixture.server.requests(for: "/big.bin").first?.query == "token=s3cr%7Ct")
    #expect(fixture.server.requests(for: "/data").count == 1)
    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path, environment: environment)
    let json = try BinaryRunner.run(
      ["plan", "manifest.yaml", "--json"], in: fixture.folder.path, environment: environment)
    let status = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path, environment: environment)
    #expect(plan.stdout.contains("token=${TOKEN}"), "\(plan.stdout)\(plan.stderr)")
    let found = leaks(
      fixture, outputs: [plan.stdout, plan.stderr, json.stdout, json.stderr, status.stdout, status.stderr])
    #expect(found.isEmpty, "\(found)")
  }

  @Test func aSecretInAHostIsMaskedLowerCasedToo() throws {
    // URL normalization lower-cases a host: `${TOKEN}` = `AbCdEf99` goes out as `abcdef99`.
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        s:
          retry: {attempts: 1}
          tasks:
            - download: http://${HOST_TOKEN}.invalid/f.bin
              to: f.bin
      """)
    let outcome = try fixture.run(environment: ["HOST_TOKEN": "AbCdEf99"])
    #expect(outcome.status == 1)
    let plan = try BinaryRunner.run(
      ["plan", "manifest.yaml", "--json"], in: fixture.folder.path, environment: ["HOST_TOKEN": "AbCdEf99"])
    #expect(fixture.leaks(of: ["AbCdEf99", "abcdef99"], outputs: [outcome.output, plan.output]) == [])
  }

  @Test func aFileNameIsNeverMadeFromASecret() throws {
    let fixture = try RunFixture()
    fixture.server.route("/files/\(Self.secret)", .text("hello"))
    fixture.server.route("/files/s3cr%7Ct", .text("hello"))
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/files/${TOKEN}
      """)
    let environment = ["TOKEN": Self.secret]
    let validate = try BinaryRunner.run(
      ["validate", "manifest.yaml"], in: fixture.folder.path, environment: environment)
    #expect(validate.status == 2)
    #expect(
      validate.stderr.contains("manifest.yaml:5:19: error: the file would be named after the URL"), "\(validate.stderr)"
    )
    #expect(validate.stderr.contains("'to:'"))
    let refused = try fixture.run(environment: environment)
    #expect(refused.status == 2)
    #expect(fixture.server.requests.isEmpty)

    // With a name of its own, the download runs and nothing stored or printed holds the secret.
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: BASE/files/${TOKEN}
              to: greeting.txt
      """)
    let result = try fixture.run(environment: environment)
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(fixture.folder.read("greeting.txt") == "hello")
    let status = try BinaryRunner.run(["status", "manifest.yaml"], in: fixture.folder.path, environment: environment)
    let plan = try BinaryRunner.run(["plan", "manifest.yaml"], in: fixture.folder.path, environment: environment)
    let found = leaks(
      fixture,
      outputs: [
        validate.stdout, validate.stderr, result.stdout, result.stderr, status.stdout, plan.stdout, plan.stderr,
      ])
    #expect(found.isEmpty, "\(found)")
    #expect(!fixture.files().contains { $0.contains("s3cr") })
  }
}
