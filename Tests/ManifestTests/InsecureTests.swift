import TestSupport
import Testing

@testable import BatchDL

@Suite struct InsecureTests {
  @Test func insecureSessionsAreAcceptedWithAWarning() throws {
    let (_, result) = ManifestFixture.plan(
      """
      version: 1
      sessions:
        lab:
          insecure: true
          tasks:
            - download: https://self-signed.example/a.bin
      """)
    let plan = try result.get()
    #expect(plan.manifest.sessions[0].insecure)
    #expect(
      plan.warnings.map(\.description).contains {
        $0.hasSuffix(
          "4:15: warning: insecure: true turns off TLS certificate checks; anyone on the path can read and alter the transfers"
        )
      })
  }

  @Test func insecureMustBeABoolean() {
    let problems = ManifestFixture.problems(
      """
      version: 1
      sessions:
        lab:
          insecure: yes
          tasks: []
      """)
    #expect(problems.contains { $0.hasPrefix("4:15: error: insecure must be true or false") })
  }
}
