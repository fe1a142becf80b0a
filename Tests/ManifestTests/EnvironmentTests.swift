import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLSupport

/// `${VAR}` expansion: where it applies, its errors (pointing at the `$`), fallbacks and escapes.
@Suite struct EnvironmentTests {
  @Test func unsetVariablesPointAtTheDollar() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          dest: ${ROOT}/mirror
          headers:
            Authorization: "Bearer ${TOKEN}"
            X-Key: 'key=${KEY}'
          tasks:
            - download: https://${HOST}/a.bin
              to: sub/${NAME}.bin
            - upload: https://example.org/up
              body: "{\\"v\\": \\"${VALUE}\\"}"
      """,
      [
        Expected("4:11", "environment variable ROOT is not set", "export it", "${ROOT:-default}"),
        Expected("6:30", "environment variable TOKEN is not set"),
        Expected("7:19", "environment variable KEY is not set"),
        Expected("9:27", "environment variable HOST is not set"),
        Expected("10:17", "environment variable NAME is not set"),
        Expected("12:26", "environment variable VALUE is not set"),
      ])
  }

  @Test func valuesFromTheEnvironmentAreUsed() throws {
    let manifest = try load(
      """
      version: 1
      sessions:
        main:
          dest: ${ROOT}/mirror
          headers:
            Authorization: "Bearer ${TOKEN}"
          tasks:
            - download: https://${HOST}/files/${NAME}.bin
              to: ${NAME}-copy.bin
              headers: {X-Both: "${A}${B}"}
      """,
      environment: ["ROOT": "out", "TOKEN": "s3cret", "HOST": "example.org", "NAME": "app", "A": "1", "B": "2"])
    let session = try #require(manifest.session("main"))
    #expect(session.dest == "out/mirror")
    #expect(session.header("Authorization") == "Bearer s3cret")
    let spec = try #require(session.specs.first)
    #expect(spec.url == "https://example.org/files/app.bin")
    #expect(spec.to == "app-copy.bin")
    #expect(spec.headers.first?.value == "12")
    // Values substituted into headers and URLs are secrets; paths are not, nor is a variable also
    // written in a path (NAME, in `to:`).
    let secrets = Set(manifest.secrets.map(\.name))
    #expect(secrets.isSuperset(of: ["TOKEN", "HOST", "A", "B"]))
    #expect(!secrets.contains("ROOT") && !secrets.contains("NAME"))
    #expect(manifest.secrets.contains(Secret(name: "TOKEN", value: "s3cret")))
  }

  @Test func fallbacks() throws {
    let yaml = """
      version: 1
      sessions:
        main:
          headers: {X-Env: "${STAGE:-dev}", X-Empty: "${NOTHING:-}"}
          tasks:
            - download: https://example.org/a.bin
              to: ${OUT:-out}/a.bin
      """
    let unset = try #require(try load(yaml).session("main"))
    #expect(unset.header("X-Env") == "dev")
    #expect(unset.header("X-Empty") == "")
    #expect(unset.specs.first?.to == "out/a.bin")
    let set = try #require(
      try load(yaml, environment: ["STAGE": "prod", "OUT": "dist", "NOTHING": "x"]).session("main"))
    #expect(set.header("X-Env") == "prod")
    #expect(set.header("X-Empty") == "x")
    #expect(set.specs.first?.to == "dist/a.bin")
    // A variable set to the empty string is set: its empty value is used, not the fallback.
    let empty = try #require(try load(yaml, environment: ["STAGE": ""]).session("main"))
    #expect(empty.header("X-Env") == "")
  }

  @Test func doubleDollarIsALiteral() throws {
    let manifest = try load(
      """
      version: 1
      sessions:
        main:
          headers: {X-Template: "$${NAME} costs $5, $$ stays"}
          tasks:
            - download: https://example.org/a.bin
      """)
    #expect(manifest.session("main")?.header("X-Template") == "${NAME} costs $5, $$ stays")
    #expect(manifest.secrets.isEmpty)
  }

  @Test func malformedReferences() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          headers:
            X-A: "x ${OPEN"
            X-B: ${1ABC}
            X-C: ${}
          tasks:
            - download: https://example.org/a.bin
      """,
      [
        Expected("5:15", "unterminated '${'", "$${ for a literal"),
        Expected("6:12", "'${1ABC}' is not a variable reference"),
        Expected("7:12", "'${}' is not a variable reference"),
      ])
  }

  @Test func onlyTheFirstProblemOfAValueIsReported() {
    expectProblems(
      minimal(adding: "headers: {X-Two: \"${ONE}${TWO}\"}"),
      [Expected("6:23", "environment variable ONE is not set")])
  }

  @Test func placesWithoutExpansion() throws {
    // on_finished is run by /bin/sh, which expands it; ids and methods are taken as written.
    let manifest = try load(
      """
      version: 1
      sessions:
        main:
          on_finished: echo ${UNSET_AT_LOAD} > done
          tasks:
            - download: https://example.org/a.bin
              id: ${literal}
      """)
    let session = try #require(manifest.session("main"))
    #expect(session.onFinished == "echo ${UNSET_AT_LOAD} > done")
    #expect(session.specs.first?.id == "${literal}")
  }

  @Test func expansionUnitCases() {
    func expand(_ text: String, _ environment: [String: String] = [:]) -> String? {
      try? EnvironmentExpansion.expand(text, environment: environment).get().text
    }
    func offset(_ text: String) -> Int? {
      if case .failure(let problem) = EnvironmentExpansion.expand(text, environment: [:]) { return problem.offset }
      return nil
    }
    #expect(expand("plain") == "plain")
    #expect(expand("$HOME") == "$HOME")
    #expect(expand("${_A1}", ["_A1": "v"]) == "v")
    #expect(expand("a${X}b${X}c", ["X": "-"]) == "a-b-c")
    #expect(expand("${X:-a:-b}") == "a:-b")
    #expect(expand("${X:-${Y}") == "${Y")
    #expect(expand("$${X}") == "${X}")
    #expect(expand("trailing $") == "trailing $")
    #expect(expand("${X}", ["X": "${Y}"]) == "${Y}")
    #expect(offset("abc ${NOPE}") == 4)
    #expect(offset("${") == 0)
    #expect(offset("ok ${9}") == 3)
    #expect(EnvironmentExpansion.isValidName("A_1"))
    #expect(!EnvironmentExpansion.isValidName("1A"))
    #expect(!EnvironmentExpansion.isValidName("A-B"))
    #expect(!EnvironmentExpansion.isValidName(""))
    #expect(!EnvironmentExpansion.isValidName("É"))
  }
}
