import Foundation

/// moto (`moto[server]`, an S3-compatible server that checks signatures) on 127.0.0.1, with IAM
/// authentication on: a bucket of given objects, readable with the access key of an IAM user
/// allowed everything (or an assumed role's session credentials). Started by a test, stopped
/// when the value is released. scripts/setup installs it in a venv under
/// ~/.cache/batchdl-tools/moto; without it the tests that need it are skipped
/// (`.enabled(if: MotoServer.isInstalled, Comment(rawValue: MotoServer.missing))`).
public final class MotoServer: @unchecked Sendable {
  public struct Problem: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
  }

  /// One object to put in the bucket.
  public struct Object: Sendable {
    public var key: String
    public var body: [UInt8]
    public init(_ key: String, _ body: [UInt8]) {
      self.key = key
      self.body = body
    }
  }

  /// The venv scripts/setup makes (under `$HOME`, as the script names it).
  public static let venv =
    (ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()) + "/.cache/batchdl-tools/moto"
  public static var serverPath: String { venv + "/bin/moto_server" }
  public static var pythonPath: String { venv + "/bin/python" }
  /// moto's server and its venv's python are there.
  public static var isInstalled: Bool {
    FileManager.default.isExecutableFile(atPath: serverPath) && FileManager.default.isExecutableFile(atPath: pythonPath)
  }
  /// Why a test that needs moto is skipped.
  public static let missing =
    "moto is not installed in ~/.cache/batchdl-tools/moto (run scripts/setup)"

  public let folder = TemporaryDirectory()
  public let port: Int
  public let bucket: String
  public let region: String
  /// The key's id (`AKIA...`, or `ASIA...` with a session).
  public let accessKey: String
  /// A secret: the tests keep it out of what they print.
  public let secretKey: String
  /// The assumed role's session token, when `session` was asked for.
  public let sessionToken: String?
  private var process: Process?

  /// Starts moto and fills `bucket` with `objects` (put from one Python process: 2,500 take
  /// seconds). With `session`, the credentials are an assumed role's: key, secret and token.
  public init(
    bucket: String = "bucket", region: String = "us-east-1", objects: [Object] = [], session: Bool = false
  )
    throws
  {
    guard Self.isInstalled else { throw Problem(Self.missing) }
    self.bucket = bucket
    self.region = region
    let base = folder.path
    var started: (Process, Int)?
    var lastProblem = Problem("moto did not start")
    for _ in 0..<5 where started == nil {
      let port = try NginxServer.freePort()
      let process = Process()
      process.executableURL = URL(fileURLWithPath: Self.serverPath)
      process.arguments = ["-H", "127.0.0.1", "-p", String(port)]
      var environment = ProcessInfo.processInfo.environment
      // The setup script's first three calls (the user, its policy, its key) go unsigned; every
      // later request must carry a valid signature.
      environment["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
      for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "http_proxy", "https_proxy"] {
        environment[name] = nil
      }
      process.environment = environment
      process.standardInput = FileHandle.nullDevice
      _ = FileManager.default.createFile(atPath: base + "/moto.log", contents: nil)
      let log = try FileHandle(forWritingTo: URL(fileURLWithPath: base + "/moto.log"))
      process.standardOutput = log
      process.standardError = log
      try process.run()
      try? log.close()
      let deadline = Date().addingTimeInterval(20)
      while process.isRunning && Date() < deadline && !NginxServer.accepts(port: port) { usleep(50_000) }
      if process.isRunning && NginxServer.accepts(port: port) {
        started = (process, port)
      } else {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let text = (try? String(contentsOfFile: base + "/moto.log", encoding: .utf8)) ?? ""
        lastProblem = Problem("moto did not start on port \(port): \(text.suffix(2000))")
      }
    }
    guard let (process, port) = started else { throw lastProblem }
    self.process = process
    self.port = port
    do {
      let credentials = try Self.fill(
        endpoint: "http://127.0.0.1:\(port)", bucket: bucket, region: region, objects: objects, session: session,
        folder: folder)
      accessKey = credentials.access_key
      secretKey = credentials.secret_key
      sessionToken = credentials.session_token
    } catch {
      Self.stop(process)
      self.process = nil
      throw error
    }
  }

  deinit {
    stop()
  }

  /// Stops the server (SIGTERM; SIGKILL after 5 s).
  public func stop() {
    guard let process else { return }
    self.process = nil
    Self.stop(process)
  }

  private static func stop(_ process: Process) {
    if process.isRunning {
      process.terminate()
      let deadline = Date().addingTimeInterval(5)
      while process.isRunning && Date() < deadline { usleep(20_000) }
      if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
    process.waitUntilExit()
  }

  /// Puts `body` at `key`, signed with the fixture's credentials by boto3 in the fixture's
  /// Python: a bucket changing between runs.
  public func put(_ key: String, _ body: [UInt8]) throws {
    let file = folder.path + "/put-\(UUID().uuidString)"
    try Data(body).write(to: URL(fileURLWithPath: file))
    let process = Process()
    process.executableURL = URL(fileURLWithPath: Self.pythonPath)
    process.arguments = [
      "-c",
      "import boto3, sys; boto3.client('s3', endpoint_url=sys.argv[1], region_name=sys.argv[2], aws_access_key_id=sys.argv[3], aws_secret_access_key=sys.argv[4], aws_session_token=sys.argv[5] or None).put_object(Bucket=sys.argv[6], Key=sys.argv[7], Body=open(sys.argv[8], 'rb').read())",
      endpoint, region, accessKey, secretKey, sessionToken ?? "", bucket, key, file,
    ]
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw Problem("boto3 could not put \(key): exit \(process.terminationStatus)")
    }
  }

  /// `http://127.0.0.1:PORT`.
  public var endpoint: String { "http://127.0.0.1:\(port)" }

  /// The path-style URL of `path` in the bucket: `http://127.0.0.1:PORT/BUCKET/PATH` (`path` as
  /// it goes in a URL, encoded by the caller).
  public func url(_ path: String = "") -> String { "\(endpoint)/\(bucket)/\(path)" }

  /// The `aws_sigv4` provider of this server: `aws:amz:REGION:s3`.
  public var provider: String { "aws:amz:\(region):s3" }

  /// What the script writes on its standard output.
  private struct Credentials: Decodable {
    var access_key: String
    var secret_key: String
    var session_token: String?
  }

  private struct Spec: Encodable {
    struct Item: Encodable {
      var key: String
      var body: String
    }
    var endpoint: String
    var region: String
    var bucket: String
    var objects: [Item]
    var session: Bool
  }

  /// The script that makes the user, the bucket and the objects.
  public static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/moto-bucket.py").path

  private static func fill(
    endpoint: String, bucket: String, region: String, objects: [Object], session: Bool, folder: TemporaryDirectory
  ) throws -> Credentials {
    let spec = Spec(
      endpoint: endpoint, region: region, bucket: bucket,
      objects: objects.map { .init(key: $0.key, body: Data($0.body).base64EncodedString()) }, session: session)
    let input = String(decoding: try JSONEncoder().encode(spec), as: UTF8.self)
    let outcome = try ExternalTool.run(
      pythonPath, [script], input: input,
      environment: [
        "AWS_ACCESS_KEY_ID": nil, "AWS_SECRET_ACCESS_KEY": nil, "AWS_SESSION_TOKEN": nil, "AWS_PROFILE": nil,
        "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "http_proxy": nil,
        "https_proxy": nil, "HTTP_PROXY": nil, "HTTPS_PROXY": nil, "no_proxy": "127.0.0.1",
      ], in: folder.path, timeout: 300)
    guard outcome.status == 0, !outcome.timedOut else {
      throw Problem("the moto setup script failed (status \(outcome.status)): \(outcome.stderr.suffix(3000))")
    }
    do {
      return try JSONDecoder().decode(Credentials.self, from: Data(outcome.stdout.utf8))
    } catch {
      throw Problem("the moto setup script wrote no credentials: \(outcome.stdout.prefix(500))")
    }
  }
}
