import Foundation
import TestSupport
import Testing

/// Runs the built `batchdl` binary and checks its output and exit codes.
@Suite struct CommandLineTests {
  static let validManifest = """
    version: 1
    sessions:
      main:
        dest: out/
        headers:
          Authorization: "Bearer ${E2E_TOKEN}"
        tasks:
          - download: http://127.0.0.1/files/a.bin
          - download: HTTP://127.0.0.1:80/files/./a.bin#frag
            to: copy/a.bin
          - download: http://127.0.0.1:9/files/b.bin?key=${E2E_TOKEN}
            priority: high
          - list: urls.txt
            to: listed/
    """

  static let urls = """
    # two hosts
    http://127.0.0.1:9/l/1.bin
    http://localhost:9/l/2.bin
    http://127.0.0.1:9/l/3.bin   three.bin
    """

  func folder(_ manifest: String = validManifest) -> TemporaryDirectory {
    let folder = TemporaryDirectory()
    folder.write("manifest.yaml", manifest)
    folder.write("urls.txt", Self.urls)
    return folder
  }

  let token = ["E2E_TOKEN": "s3cr3t-token-value"]

  @Test func validateAcceptsAValidManifest() throws {
    let dir = folder()
    let result = try BinaryRunner.run(["validate", "manifest.yaml"], in: dir.path, environment: token)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("manifest.yaml: valid (6 tasks, 5 requests)"))
  }

  @Test func validateReportsEveryProblemWithPositionsAndExits2() throws {
    let dir = folder(
      """
      version: 1
      sessions:
        main:
          kind: defualt
          tasks:
            - dowload: http://127.0.0.1:9/a
            - download: http://127.0.0.1:9/b
              to: ../escape.bin
            - download: http://127.0.0.1:9/c
              timeout: 5s
      """)
    let result = try BinaryRunner.run(["validate", "manifest.yaml"], in: dir.path)
    #expect(result.status == 2)
    let lines = result.stderr.split(separator: "\n").map(String.init)
    #expect(
      lines.contains {
        $0.hasPrefix("manifest.yaml:4:11: error: unknown kind 'defualt'") && $0.contains("did you mean 'default'?")
      })
    #expect(lines.contains { $0.hasPrefix("manifest.yaml:6:9: error:") && $0.contains("did you mean 'download'?") })
    #expect(lines.contains { $0.hasPrefix("manifest.yaml:8:13: error: to '../escape.bin'") })
    #expect(lines.contains { $0.hasPrefix("manifest.yaml:10:9: error: unknown key 'timeout'") })
    #expect(lines.last == "manifest.yaml: 4 errors; nothing was sent")
    #expect(result.stdout.isEmpty)
  }

  @Test func validateChecksEveryManifestGiven() throws {
    let dir = folder()
    dir.write("bad.yaml", "version: 2\nsessions: {}\n")
    let result = try BinaryRunner.run(
      ["validate", "manifest.yaml", "bad.yaml", "missing.yaml"], in: dir.path, environment: token)
    #expect(result.status == 2)
    #expect(result.stdout.contains("manifest.yaml: valid"))
    #expect(result.stderr.contains("bad.yaml:1:10: error: unsupported manifest version 2"))
    #expect(result.stderr.contains("missing.yaml:1:1: error: cannot read the manifest: No such file or directory"))
  }

  @Test func unsetVariableIsAnErrorAtItsPosition() throws {
    let dir = folder()
    let result = try BinaryRunner.run(["validate", "manifest.yaml"], in: dir.path, environment: ["E2E_TOKEN": ""])
    #expect(result.status == 0)
    let unset = try BinaryRunner.run(["plan", "manifest.yaml"], in: dir.path)
    #expect(unset.status == 2)
    #expect(unset.stderr.contains("manifest.yaml:6:30: error: environment variable E2E_TOKEN is not set"))
  }

  @Test func planListsEachRequestOnceWithTheTasksSharingIt() throws {
    let dir = folder()
    let result = try BinaryRunner.run(["plan", "manifest.yaml"], in: dir.path, environment: token)
    #expect(result.status == 0, "\(result.stderr)")
    let lines = result.stdout.split(separator: "\n").map(String.init)
    #expect(lines.first == "plan for manifest.yaml: 6 tasks → 5 requests, 1 shared by several tasks")
    // High priority first; the shared request lists both destinations.
    #expect(lines[1].hasPrefix("#1  GET http://127.0.0.1:9/files/b.bin?key=${E2E_TOKEN}"))
    let shared = try #require(
      lines.firstIndex { $0.contains("GET http://127.0.0.1/files/a.bin") || $0.contains("/files/a.bin ") })
    #expect(lines[shared + 1] == "    download → out/a.bin" || lines[shared + 1] == "    download → out/copy/a.bin")
  }

  @Test func planJSONAndShardsCoverEveryRequestOnce() throws {
    let dir = folder()
    func requests(_ extra: [String]) throws -> [[String: Any]] {
      let result = try BinaryRunner.run(["plan", "manifest.yaml", "--json"] + extra, in: dir.path, environment: token)
      #expect(result.status == 0, "\(result.stderr)")
      let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
      #expect(object?["format"] as? String == "batchdl-plan/1")
      return object?["requests"] as? [[String: Any]] ?? []
    }
    let all = Set(try requests([]).compactMap { $0["key"] as? String })
    #expect(all.count == 5)
    var seen: [String] = []
    for index in 0..<3 {
      seen += try requests(["--shard", "\(index)/3"]).compactMap { $0["key"] as? String }
    }
    #expect(seen.count == 5)
    #expect(Set(seen) == all)
  }

  @Test func secretsNeverReachTheOutput() throws {
    let dir = folder()
    for arguments in [["plan", "manifest.yaml"], ["plan", "manifest.yaml", "--json"], ["validate", "manifest.yaml"]] {
      let result = try BinaryRunner.run(arguments, in: dir.path, environment: token)
      #expect(result.status == 0)
      #expect(!result.stdout.contains("s3cr3t"))
      #expect(!result.stderr.contains("s3cr3t"))
    }
  }

  @Test func usageErrorsExit2() throws {
    let dir = folder()
    for arguments in [
      ["plan", "manifest.yaml", "--shard", "3/3"], ["plan"], ["validate"], ["frobnicate"],
      ["plan", "manifest.yaml", "--bogus"],
    ] {
      let result = try BinaryRunner.run(arguments, in: dir.path, environment: token)
      #expect(result.status == 2, "\(arguments): \(result.stderr)")
      #expect(!result.stderr.isEmpty)
    }
  }

  @Test func everyCommandHasHelpWithAnExample() throws {
    for command in [
      "validate", "plan", "run", "status", "wait", "cache stats", "cache clear", "report diff", "report merge",
      "report html",
    ] {
      let result = try BinaryRunner.run(command.split(separator: " ").map(String.init) + ["--help"])
      #expect(result.status == 0)
      #expect(result.stdout.contains("Example:"), "\(command)")
    }
    let version = try BinaryRunner.run(["--version"])
    #expect(version.status == 0)
    #expect(!version.stdout.isEmpty)
    for shell in ["bash", "zsh", "fish"] {
      let completion = try BinaryRunner.run(["--generate-completion-script", shell])
      #expect(completion.status == 0)
      #expect(completion.stdout.contains("validate"), "\(shell)")
    }
  }

  @Test func theBundledExamplesValidate() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("manifests").path
    let names = try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.hasSuffix(".yaml") }.sorted()
    #expect(!names.isEmpty)
    let result = try BinaryRunner.run(["validate"] + names, in: root)
    #expect(result.status == 0, "\(result.stderr)")
  }
}
