import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLSupport

/// Secrets from `${VAR}`: every spelling they take once encoded is masked, and no file name (hence
/// no id, destination or partial file in the state folder) is made from one.
@Suite struct SecretPlanTests {
  @Test func everyEncodedSpellingOfASecretIsMasked() {
    let redactor = Redactor(secrets: [Secret(name: "TOKEN", value: "s3cr|t a")])
    let base64 = Data("s3cr|t a".utf8).base64EncodedString()
    for spelling in [
      "s3cr|t a", "s3cr%7Ct%20a", "s3cr%7ct%20a", "s3cr%7Ct+a", base64, String(base64.prefix { $0 != "=" }),
      "s3cr%7Ct a", "s3cr|t%20a",
    ] {
      let masked = redactor.url("https://example.org/x?token=\(spelling)&n=1")
      #expect(masked == "https://example.org/x?token=${TOKEN}&n=1", "\(spelling) → \(masked)")
    }
    #expect(redactor.text("no secret here: 100%") == "no secret here: 100%")
  }

  @Test func aCheckpointURLFromTheNormalizerIsMasked() throws {
    let normalized = try URLNormalizer().normalize("https://example.org/a.bin?token=s3cr|t").get()
    #expect(normalized.text.contains("s3cr%7Ct"))
    let redactor = Redactor(secrets: [Secret(name: "TOKEN", value: "s3cr|t")])
    #expect(redactor.url(normalized.text) == "https://example.org/a.bin?token=${TOKEN}")
  }

  @Test func aFileIsNotNamedAfterASecretInTheURL() {
    let problems = ManifestFixture.problems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/files/${NAME}
            - download: https://example.org/files/${NAME}
              to: folder/
      """, environment: ["NAME": "s3cr|t.bin"])
    #expect(problems.count == 2, "\(problems)")
    #expect(
      problems.first?.hasPrefix("5:19: error: the file would be named after the URL, as '${NAME}', which holds") == true
    )
    #expect(problems.allSatisfy { $0.contains("add 'to:' with a file name") && !$0.contains("s3cr") })
  }

  @Test func aSecretInTheURLPathIsFineWithAnExplicitName() throws {
    let (_, result) = ManifestFixture.plan(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/files/${NAME}
              to: report.pdf
      """, environment: ["NAME": "s3cr|t.bin"])
    let plan = try result.get()
    #expect(plan.tasks.map { plan.id(of: $0) } == ["report.pdf"])
    #expect(plan.manifest.secrets.map(\.name) == ["NAME"])
  }

  @Test func aVariableWrittenInAPathIsNotASecret() throws {
    let (_, result) = ManifestFixture.plan(
      """
      version: 1
      sessions:
        main:
          dest: out/${CHANNEL}
          tasks:
            - download: https://example.org/${VERSION}/app.tar.gz
              to: app-${VERSION}.tar.gz
            - download: https://example.org/${CHANNEL}/notes.txt
      """, environment: ["VERSION": "1.2.3", "CHANNEL": "stable"])
    let plan = try result.get()
    #expect(plan.manifest.secrets.isEmpty)
    #expect(
      plan.tasks.compactMap { plan.destination(of: $0) } == ["out/stable/app-1.2.3.tar.gz", "out/stable/notes.txt"])
  }

  @Test func aDestinationHoldingASecretValueIsRefused() {
    let problems = ManifestFixture.problems(
      """
      version: 1
      sessions:
        main:
          headers:
            Authorization: "Bearer ${TOKEN}"
          tasks:
            - download: https://example.org/a.bin
              to: keys/tok-3f9a7c1d.bin
      """, environment: ["TOKEN": "tok-3f9a7c1d"])
    #expect(problems.count == 1, "\(problems)")
    #expect(
      problems.first?.hasPrefix("8:13: error: the destination 'keys/${TOKEN}.bin' holds the value of a secret") == true,
      "\(problems)")
  }
}
