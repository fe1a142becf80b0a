import BatchDL
import BatchDLStore
import Foundation
import TestServer
import TestSupport

/// A manifest run by the built binary against a loopback test server, in a fresh folder.
final class RunFixture {
  let server: TestHTTPServer
  let folder = TemporaryDirectory()

  init() throws {
    server = try TestHTTPServer()
  }

  deinit {
    server.stop()
  }

  /// Writes `ca.pem`, the throw-away CA that `nginx`'s certificate is issued by, for a manifest's
  /// `tls: {ca_file: ca.pem}`.
  func trustCA(of nginx: NginxServer) {
    folder.write("ca.pem", (try? String(contentsOfFile: nginx.certificates.caCertificate, encoding: .utf8)) ?? "")
  }

  /// `yaml` with `BASE` replaced by the server's base URL.
  func manifest(_ yaml: String, name: String = "manifest.yaml") {
    folder.write(name, yaml.replacingOccurrences(of: "BASE", with: server.baseURL))
  }

  /// Runs `batchdl run manifest.yaml --report report.json --events events.jsonl --progress never` plus `extra`.
  @discardableResult
  func run(
    _ extra: [String] = [], environment: [String: String] = [:], timeout: TimeInterval = 60
  ) throws -> BinaryRunner.Outcome {
    try BinaryRunner.run(
      ["run", "manifest.yaml", "--report", "report.json", "--events", "events.jsonl", "--progress", "never"] + extra,
      in: folder.path, environment: environment, timeout: timeout)
  }

  /// Starts `batchdl run manifest.yaml --progress never --quiet` plus `extra`, without waiting for it
  /// (to interrupt it, or to run a second one beside it).
  func start(_ extra: [String] = [], environment: [String: String] = [:]) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: BinaryRunner.executable)
    process.arguments = ["run", "manifest.yaml", "--progress", "never", "--quiet"] + extra
    process.currentDirectoryURL = URL(fileURLWithPath: folder.path)
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    process.environment = env
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
  }

  /// The report's tasks by id.
  func tasks() throws -> [String: [String: Any]] {
    let data = Data((folder.read("report.json") ?? "").utf8)
    let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    let tasks = object?["tasks"] as? [[String: Any]] ?? []
    // Keyed by String, which merges an NFC and an NFD id: the first is kept (tests of such names
    // read the report's array).
    return Dictionary(
      tasks.compactMap { task in (task["id"] as? String).map { ($0, task) } }, uniquingKeysWith: { first, _ in first })
  }

  func summary() throws -> [String: Any] {
    let data = Data((folder.read("report.json") ?? "").utf8)
    let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    return object?["summary"] as? [String: Any] ?? [:]
  }

  /// The events, one object per line.
  func events() -> [[String: Any]] {
    (folder.read("events.jsonl") ?? "").split(separator: "\n").compactMap { line in
      (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
  }

  /// Every file under the folder except the state folder, relative to it.
  func files() -> [String] {
    let root = folder.path
    let enumerator = FileManager.default.enumerator(atPath: root)
    var result: [String] = []
    while let path = enumerator?.nextObject() as? String {
      var isDirectory: ObjCBool = false
      if FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
        result.append(path)
      }
    }
    return result.sorted()
  }

  /// Whether `name` exists with exactly `expected` as its contents.
  func holds(_ name: String, _ expected: [UInt8]) -> Bool {
    bytes(name) == expected
  }

  /// The manifest's own key in the default state folder (`StateFolder.manifestKey`): the name of
  /// its lock, once a run took it.
  func manifestKey() -> String? {
    let locks = (try? FileManager.default.contentsOfDirectory(atPath: folder.path + "/.batchdl/locks")) ?? []
    return locks.first.map { String($0.dropLast(".lock".count)) }
  }

  func bytes(_ name: String) -> [UInt8]? {
    FileManager.default.contents(atPath: folder.path + "/" + name).map { [UInt8]($0) }
  }
}

extension RunFixture {
  /// The most bytes a checkpoint in the fixture's state folder holds (0 when there is none).
  func checkpointBytes() -> Int64 {
    guard let store = try? StateStore.open(folder: folder.path + "/.batchdl", readOnly: true),
      let points = try? store.checkpoints()
    else { return 0 }
    return points.values.map(\.durable).max() ?? 0
  }

  /// What a run stopped before its rename leaves: `bytes` as the partial file `name.batchdl-part`
  /// of the manifest's first request, and a checkpoint of all of them with `etag` and `total`.
  func checkpointWhole(_ bytes: [UInt8], of name: String, etag: String, total: Int) throws {
    let plan = try ManifestCheck.plan(path: folder.path + "/manifest.yaml")
    let partial = folder.path + "/" + name + ".batchdl-part"
    _ = FileManager.default.createFile(atPath: partial, contents: Data(bytes))
    guard let store = try StateFolder(option: nil, manifest: plan.manifest).openStore() else { return }
    try store.update(checkpoints: [
      Checkpoint(
        key: plan.requests[0].key.description, partial: partial, url: server.url("/" + name), etag: etag,
        lastModified: nil, total: Int64(total), durable: Int64(bytes.count))
    ])
  }

  /// Starts `batchdl run` (plus `extra`) and stops it with `signal` once a checkpoint holds at least
  /// `bytes` (or after 20 s); returns the exit status.
  func interrupt(signal: Int32, after bytes: Int64 = 200_000, _ extra: [String] = []) throws -> Int32 {
    let process = try start(extra)
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline && checkpointBytes() < bytes { usleep(50_000) }
    kill(process.processIdentifier, signal)
    process.waitUntilExit()
    return process.terminationStatus
  }
}

extension RunFixture {
  /// The files under the state folder, the report and the events file, and the `outputs`, that
  /// hold any of `spellings` (as bytes), each as `FILE: SPELLING`.
  func leaks(of spellings: [String], outputs: [String] = []) -> [String] {
    var files: [String] = []
    let enumerator = FileManager.default.enumerator(atPath: folder.path + "/.batchdl")
    while let path = enumerator?.nextObject() as? String { files.append(".batchdl/" + path) }
    files += ["report.json", "events.jsonl"]
    var found: [String] = []
    for file in files {
      guard let data = FileManager.default.contents(atPath: folder.path + "/" + file) else { continue }
      for spelling in spellings where data.range(of: Data(spelling.utf8)) != nil {
        found.append("\(file): \(spelling)")
      }
    }
    for (index, output) in outputs.enumerated() {
      for spelling in spellings where output.contains(spelling) { found.append("output \(index): \(spelling)") }
    }
    return found
  }
}

/// A download served slowly (32 KiB every 50 ms), so that a run can be interrupted in its middle.
func trickling(_ body: [UInt8], etag: String) -> Behavior {
  .file(FileResource(body: body, etag: .strong(etag), trickle: Trickle(chunkBytes: 32 << 10, interval: 0.05)))
}

/// N of a request's `Range: bytes=N-`, or nil when it sent none.
func rangeOffset(_ request: RecordedRequest?) -> Int64? {
  guard let range = request?.header("range"), range.hasPrefix("bytes=") else { return nil }
  return Int64(range.dropFirst(6).split(separator: "-").first ?? "")
}
