import Foundation
import TestSupport
import Testing

/// Manifests, list files and options written to break batchdl: each must end in a clear error and
/// exit code 2, never a crash, a hang or unbounded memory, and no message may show a credential.
@Suite struct HostileManifestTests {
  /// A manifest with one session whose `network:` or `timeouts:` block holds `setting`.
  static func manifest(_ block: String, _ setting: String, url: String = "http://127.0.0.1:9/a.bin") -> String {
    """
    version: 1
    sessions:
      main:
        \(block):
          \(setting)
        tasks:
          - download: \(url)
    """
  }

  func folder(_ manifest: String, files: [String: String] = [:]) -> TemporaryDirectory {
    let folder = TemporaryDirectory()
    folder.write("manifest.yaml", manifest)
    for (name, contents) in files { folder.write(name, contents) }
    return folder
  }

  func batchdl(
    _ arguments: [String], in folder: TemporaryDirectory, environment: [String: String] = [:]
  ) throws
    -> BinaryRunner.Outcome
  {
    try BinaryRunner.run(arguments, in: folder.path, environment: environment, timeout: 60)
  }

  // MARK: - Numbers out of range

  @Test(arguments: ["validate", "plan"])
  func bareDurationTooLargeForMilliseconds(command: String) throws {
    let dir = folder(Self.manifest("timeouts", "request: 9223372036854776"))
    let result = try batchdl([command, "manifest.yaml"], in: dir)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(
      result.stderr.contains("manifest.yaml:5:16: error: timeouts.request '9223372036854776' is too long"),
      "\(result.stderr)")
    #expect(result.stderr.contains("at most 3650d"))
  }

  @Test func durationThatFitsButOverflowsLaterIsRefusedBeforeRun() throws {
    let fixture = try RunFixture()
    fixture.manifest(Self.manifest("timeouts", "request: 9223372036854775807ms", url: "BASE/files/a.bin"))
    let validate = try BinaryRunner.run(["validate", "manifest.yaml"], in: fixture.folder.path)
    #expect(validate.status == 2, "\(validate.stderr)")
    #expect(validate.stderr.contains("manifest.yaml:5:16: error: timeouts.request"), "\(validate.stderr)")
    let run = try fixture.run()
    #expect(run.status == 2, "\(run.stderr)")
    #expect(fixture.server.requests.isEmpty)
  }

  @Test(arguments: [
    ("network", "max_concurrent: 4611686018427387904", "5:23", "network.max_concurrent must be from 1 to 1000000"),
    ("network", "max_connections_per_host: 1000001", "5:33", "must be from 1 to 1000000"),
    ("network", "max_concurrent: 99999999999999999999", "5:23", "must be from 1 to 1000000"),
    ("network", "rate_limit: 2048TB/s", "5:19", "rates may be at most 1024TB/s"),
    ("retry", "attempts: 9223372036854775807", "5:17", "retry.attempts must be from 1 to 1000000"),
    ("retry", "backoff: 3651d", "5:16", "durations may be at most 3650d"),
    ("retry", "max_backoff: 99999999999999999999ms", "5:20", "durations may be at most 3650d"),
    ("timeouts", "resource: 1e300s", "5:17", "durations may be at most 3650d"),
    ("cache", "disk: 8000000TB", "5:13", "sizes may be at most 1024TB"),
  ])
  func numbersOutOfRangeAreRefusedByRunWithTheirPosition(
    block: String, setting: String, position: String, message: String
  ) throws {
    let fixture = try RunFixture()
    fixture.manifest(Self.manifest(block, setting, url: "BASE/files/a.bin"))
    let run = try fixture.run()
    #expect(run.status == 2, "\(run.stderr)")
    #expect(run.stderr.contains("manifest.yaml:\(position): error: "), "\(run.stderr)")
    #expect(run.stderr.contains(message), "\(run.stderr)")
    #expect(fixture.server.requests.isEmpty)
  }

  @Test func hugeTaskSizeIsRefused() throws {
    let dir = folder(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: http://127.0.0.1:9/a.bin
              size: 9999999999TB
      """)
    let result = try batchdl(["validate", "manifest.yaml"], in: dir)
    #expect(result.status == 2)
    #expect(result.stderr.contains("manifest.yaml:6:15: error: size '9999999999TB' is too large"), "\(result.stderr)")
  }

  @Test(arguments: [
    ["run", "manifest.yaml", "--jobs", "4611686018427387904"],
    ["run", "manifest.yaml", "--jobs", "0"],
    ["run", "manifest.yaml", "--shard", "auto", "--shards", "4611686018427387904"],
    ["plan", "manifest.yaml", "--shards", "4611686018427387904"],
    ["wait", "manifest.yaml", "--timeout", "nan"],
    ["wait", "manifest.yaml", "--timeout", "1e300"],
    ["wait", "manifest.yaml", "--timeout=-1"],
  ])
  func optionsOutOfRangeAreUsageErrors(arguments: [String]) throws {
    let fixture = try RunFixture()
    fixture.manifest(Self.manifest("network", "max_concurrent: 2", url: "BASE/files/a.bin"))
    let result = try BinaryRunner.run(
      arguments, in: fixture.folder.path, environment: ["JOB_COMPLETION_INDEX": "0"], timeout: 60)
    #expect(result.status == 2, "\(arguments): \(result.stderr)")
    #expect(result.stderr.contains("must be from"), "\(arguments): \(result.stderr)")
    #expect(fixture.server.requests.isEmpty)
  }

  @Test func slurmIndexThatOverflowsIsAUsageError() throws {
    let fixture = try RunFixture()
    fixture.manifest(Self.manifest("network", "max_concurrent: 2", url: "BASE/files/a.bin"))
    let result = try BinaryRunner.run(
      ["run", "manifest.yaml", "--shard", "auto"], in: fixture.folder.path,
      environment: [
        "SLURM_ARRAY_TASK_ID": "9223372036854775807", "SLURM_ARRAY_TASK_MIN": "-1", "SLURM_ARRAY_TASK_COUNT": "4",
      ])
    #expect(result.status == 2, "\(result.stderr)")
    #expect(result.stderr.contains("out of range"), "\(result.stderr)")
  }

  @Test func largestAllowedValuesRun() throws {
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        main:
          timeouts: {request: 3650d, resource: 3650d}
          retry: {attempts: 1000000, backoff: 3650d, max_backoff: 3650d}
          network: {max_concurrent: 1000000, max_connections_per_host: 1000000, rate_limit: 1024TB/s}
          cache: {memory: 1024TB, disk: 1024TB}
          tasks:
            - download: BASE/files/a.bin
              to: a.bin
      """)
    fixture.server.route("/files/a.bin", .text("hello"))
    let result = try fixture.run(["--jobs", "1000000"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(fixture.folder.read("a.bin") == "hello")
  }

  // MARK: - List files that never end

  static let listManifest = """
    version: 1
    sessions:
      main:
        tasks:
          - list: LIST
            to: listed/
    """

  @Test(arguments: ["/dev/zero", "/dev/urandom", "/dev/null"])
  func deviceAsListFileIsRefused(device: String) throws {
    let dir = folder(Self.listManifest.replacingOccurrences(of: "LIST", with: device))
    let started = Date()
    let result = try batchdl(["validate", "manifest.yaml"], in: dir)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(
      result.stderr.contains(
        "manifest.yaml:5:15: error: cannot read the list file \(device): it is a character device, not a regular file"),
      "\(result.stderr)")
    #expect(Date().timeIntervalSince(started) < 50)
  }

  @Test func fifoAsListFileIsRefusedWithoutWaitingForAWriter() throws {
    let dir = folder(Self.listManifest.replacingOccurrences(of: "LIST", with: "urls.fifo"))
    #expect(mkfifo(dir.path + "/urls.fifo", 0o600) == 0)
    let result = try batchdl(["validate", "manifest.yaml"], in: dir)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(
      result.stderr.contains("manifest.yaml:5:15: error: cannot read the list file urls.fifo: it is a FIFO"),
      "\(result.stderr)")
  }

  @Test func listLineLongerThanTheLimitIsRefused() throws {
    let long = "http://127.0.0.1:9/" + String(repeating: "a", count: (1 << 20) + 10) + "\n"
    let dir = folder(
      Self.listManifest.replacingOccurrences(of: "LIST", with: "urls.txt"),
      files: ["urls.txt": "http://127.0.0.1:9/first.bin\n" + long])
    let result = try batchdl(["validate", "manifest.yaml"], in: dir)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(
      result.stderr.contains(
        "manifest.yaml:5:15: error: cannot read the list file urls.txt: line 2 is longer than 1MB"),
      "\(result.stderr)")
  }

  @Test func deviceAsManifestIsRefused() throws {
    let dir = TemporaryDirectory()
    let result = try batchdl(["validate", "/dev/zero"], in: dir)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(result.stderr.contains("/dev/zero:1:1: error: cannot read the manifest: it is a character device"))
  }

  @Test func fifoAsManifestWithoutAWriterDoesNotHang() throws {
    let dir = TemporaryDirectory()
    #expect(mkfifo(dir.path + "/manifest.yaml", 0o600) == 0)
    let result = try batchdl(["validate", "manifest.yaml"], in: dir)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(result.stderr.contains("manifest.yaml:1:1: error: the manifest is empty"), "\(result.stderr)")
  }

  @Test func pipedManifestIsRead() throws {
    let dir = TemporaryDirectory()
    dir.write("source.yaml", Self.manifest("network", "max_concurrent: 2"))
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/bash")
    process.arguments = ["-c", "exec \"$BATCHDL\" validate <(cat source.yaml)"]
    process.environment = ["BATCHDL": BinaryRunner.executable, "PATH": "/usr/bin:/bin"]
    process.currentDirectoryURL = URL(fileURLWithPath: dir.path)
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    #expect(output.contains("valid (1 tasks, 1 requests)"), "\(output)")
  }

  // MARK: - Credentials in messages

  @Test func unknownAfterDoesNotShowUserInfo() throws {
    let dir = folder(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: http://127.0.0.1:9/a.bin
              after: "http://u:SECRET@127.0.0.1:9/missing"
      """)
    let result = try batchdl(["validate", "manifest.yaml"], in: dir)
    #expect(result.status == 2)
    #expect(
      result.stderr.contains(
        "manifest.yaml:6:16: error: after: no task has the id 'http://<redacted>@127.0.0.1:9/missing'"),
      "\(result.stderr)")
    #expect(!result.stderr.contains("SECRET"), "\(result.stderr)")
  }

  @Test func afterMayQuoteADataTaskURLWithItsUserInfo() throws {
    let dir = folder(
      """
      version: 1
      sessions:
        main:
          tasks:
            - data: http://u:SECRET@127.0.0.1:9/token
            - download: http://127.0.0.1:9/a.bin
              after: "http://u:SECRET@127.0.0.1:9/token"
      """)
    let result = try batchdl(["validate", "manifest.yaml"], in: dir)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(!(result.stdout + result.stderr).contains("SECRET"))
  }

  @Test func messagesQuotingUserValuesMaskUserInfoAndSecrets() throws {
    let dir = folder(
      """
      version: 1
      sessions:
        main:
          "http://u:SECRET@example.org/": 1
          tasks:
            - list: urls.txt
            - id: "https://me:SECRET@example.org/x"
              download: http://127.0.0.1:9/a.bin
            - id: "https://me:SECRET@example.org/x"
              download: http://127.0.0.1:9/b.bin
            - data: "http://127.0.0.1:9/q?k=${HOSTILE_TOKEN}"
            - data: "http://127.0.0.1:9/q?k=${HOSTILE_TOKEN}"
              method: POST
              after: "http://127.0.0.1:9/q?k=${HOSTILE_TOKEN}"
      """,
      files: ["urls.txt": "ftp://user:SECRET@example.org/file\nhttp://user:SECRET@exa mple.org/x\n"])
    let result = try batchdl(
      ["validate", "manifest.yaml"], in: dir, environment: ["HOSTILE_TOKEN": "tok-SECRET-value"])
    #expect(result.status == 2)
    #expect(result.stderr.contains("unknown key 'http://<redacted>@example.org/'"), "\(result.stderr)")
    // An id holding user-info is refused (ids are kept in the state folder), shown masked.
    #expect(
      result.stderr.contains("the id 'https://<redacted>@example.org/x' holds the value of a secret"),
      "\(result.stderr)")
    #expect(result.stderr.contains("urls.txt:1:1: error:"), "\(result.stderr)")
    #expect(!result.stderr.contains("SECRET"), "\(result.stderr)")
  }

  /// An id with user-info is refused (the state folder keeps ids, and never a secret); every
  /// command says so with the user-info masked.
  @Test func anIDWithUserInfoIsRefusedMasked() throws {
    let dir = folder(
      """
      version: 1
      sessions:
        main:
          tasks:
            - id: "https://me:SECRET@example.org/x"
              download: http://127.0.0.1:9/a.bin
      """)
    for arguments in [["plan", "manifest.yaml"], ["plan", "manifest.yaml", "--json"]] {
      let result = try batchdl(arguments, in: dir)
      #expect(result.status == 2, "\(result.stderr)")
      #expect(result.stderr.contains("https://<redacted>@example.org/x"), "\(result.stderr)")
      #expect(!(result.stdout + result.stderr).contains("SECRET"), "\(result.stdout)")
    }
  }
}
