import Foundation

/// A throw-away certificate authority made with `openssl` in a folder of the test's: the CA, a
/// server certificate for 127.0.0.1 and localhost that it issued, a client certificate whose key is
/// encrypted with `clientKeyPassword`, and a second CA that issued nothing the server shows.
public struct TestCertificates: Sendable {
  public let caCertificate: String
  public let serverCertificate: String
  public let serverKey: String
  public let clientCertificate: String
  public let clientKey: String
  public let clientKeyPassword: String
  public let otherCACertificate: String
  /// The server's public key as libcurl's `sha256//BASE64` pin.
  public let serverPin: String
  /// The pin of a key the server does not have.
  public let otherPin: String
  /// The server's public key as a PEM file (a pin given as a file).
  public let serverPublicKey: String

  /// Makes every file in `folder` (which must exist).
  public init(in folder: String) throws {
    func openssl(_ arguments: [String]) throws -> String {
      guard let tool = ExternalTool.find("openssl") else { throw NginxServer.Problem("openssl is not installed") }
      let outcome = try ExternalTool.run(tool, arguments, in: folder, timeout: 60)
      guard outcome.status == 0 else {
        throw NginxServer.Problem("openssl \(arguments.joined(separator: " ")) failed: \(outcome.stderr)")
      }
      return outcome.stdout
    }
    let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    for name in ["ca", "other-ca"] {
      _ = try openssl(
        ["req", "-x509"] + curve + [
          "-nodes", "-keyout", "\(name).key", "-out", "\(name).pem", "-days", "3", "-subj",
          "/CN=batchdl test \(name)",
        ])
    }
    _ = try openssl(
      ["req"] + curve + ["-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"])
    try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
      toFile: folder + "/server.ext", atomically: true, encoding: .utf8)
    _ = try openssl([
      "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
      "server.pem", "-days", "3", "-extfile", "server.ext",
    ])
    let password = "client-key-password-\(UInt32.random(in: 1000...999_999))"
    _ = try openssl(
      ["req"] + curve + [
        "-passout", "pass:\(password)", "-keyout", "client.key", "-out", "client.csr", "-subj",
        "/CN=batchdl test client",
      ])
    _ = try openssl([
      "x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
      "client.pem", "-days", "3",
    ])
    _ = try openssl(["pkey", "-in", "server.key", "-pubout", "-out", "server.pub"])
    _ = try openssl(["pkey", "-in", "other-ca.key", "-pubout", "-out", "other.pub"])
    func pin(_ publicKey: String) throws -> String {
      let der = folder + "/\(publicKey).der"
      _ = try openssl(["pkey", "-pubin", "-in", publicKey, "-outform", "DER", "-out", der])
      _ = try openssl(["dgst", "-sha256", "-binary", "-out", der + ".sha256", der])
      let bytes = try Data(contentsOf: URL(fileURLWithPath: der + ".sha256"))
      return "sha256//" + bytes.base64EncodedString()
    }
    caCertificate = folder + "/ca.pem"
    serverCertificate = folder + "/server.pem"
    serverKey = folder + "/server.key"
    clientCertificate = folder + "/client.pem"
    clientKey = folder + "/client.key"
    clientKeyPassword = password
    otherCACertificate = folder + "/other-ca.pem"
    serverPublicKey = folder + "/server.pub"
    serverPin = try pin("server.pub")
    otherPin = try pin("other.pub")
  }
}

/// A real nginx on 127.0.0.1 serving a folder over TLS (HTTP/2 by default) with a certificate from
/// a throw-away CA, started by a test and stopped when the value is released: the server users
/// meet, where the bundled test server speaks HTTP/1.1 only.
///
/// Its access log records, for each request, what the tests check: the protocol, whether the TLS
/// session was resumed, the connection and its request count, and the range headers received.
public final class NginxServer: @unchecked Sendable {
  public struct Problem: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
  }

  /// One line of the access log.
  public struct Request: Sendable {
    public var method: String
    public var uri: String
    public var status: Int
    /// `HTTP/2.0` or `HTTP/1.1`.
    public var proto: String
    /// nginx's `$ssl_session_reused`: `r` when the connection resumed a TLS session.
    public var sessionReused: Bool
    public var connection: Int
    public var connectionRequests: Int
    public var range: String?
    public var ifRange: String?
    public var ifNoneMatch: String?
    public var authorization: String?
  }

  public let folder = TemporaryDirectory()
  public let certificates: TestCertificates
  public let port: Int
  private var process: Process?

  /// The folder served at `/`: the `root` given to `init`, else `www` in the server's folder.
  public let root: String

  /// `http2`: offer h2 by ALPN; `serverDirectives`: more lines in the `server` block (e.g.
  /// `keepalive_requests 5;`, a `location` proxying to the test server); `clientCertificates`:
  /// require a client certificate issued by the test CA; `autoindex`: locations that list their
  /// folders (NginxAutoindex.swift); `root`: an existing folder to serve (a mirror's `dest`, a
  /// fixture's repository) instead of a new `www`.
  public init(
    http2: Bool = true, serverDirectives: String = "", clientCertificates: Bool = false, autoindex: [Autoindex] = [],
    root: String? = nil
  ) throws {
    guard let nginx = ExternalTool.find("nginx") else {
      throw Problem("nginx is not installed: scripts/setup installs nginx-light")
    }
    _ = Self.orphansReaped
    let base = folder.path
    let root = root ?? base + "/www"
    self.root = root
    try "\(getpid())\n".write(toFile: base + "/owner.pid", atomically: true, encoding: .utf8)
    try FileManager.default.createDirectory(atPath: base + "/www", withIntermediateDirectories: true)
    try FileManager.default.createDirectory(atPath: base + "/certs", withIntermediateDirectories: true)
    try FileManager.default.createDirectory(atPath: base + "/logs", withIntermediateDirectories: true)
    certificates = try TestCertificates(in: base + "/certs")
    var lastProblem = Problem("nginx did not start")
    for _ in 0..<5 {
      let port = try Self.freePort()
      let config = Self.configuration(
        base: base, root: root, port: port, http2: http2,
        serverDirectives: serverDirectives + autoindex.map { $0.location(root: root) }.joined(),
        clientCA: clientCertificates ? certificates.caCertificate : nil, certificates: certificates)
      try config.write(toFile: base + "/nginx.conf", atomically: true, encoding: .utf8)
      let process = Process()
      process.executableURL = URL(fileURLWithPath: nginx)
      process.arguments = ["-p", base, "-c", base + "/nginx.conf", "-e", base + "/logs/error.log", "-g", "daemon off;"]
      process.standardInput = FileHandle.nullDevice
      process.standardOutput = FileHandle.nullDevice
      process.standardError = FileHandle.nullDevice
      try process.run()
      let deadline = Date().addingTimeInterval(10)
      while process.isRunning && Date() < deadline && !Self.accepts(port: port) { usleep(20_000) }
      if process.isRunning && Self.accepts(port: port) {
        self.port = port
        self.process = process
        return
      }
      if process.isRunning { process.terminate() }
      process.waitUntilExit()
      let log = (try? String(contentsOfFile: base + "/logs/error.log", encoding: .utf8)) ?? ""
      lastProblem = Problem("nginx did not start on port \(port): \(log)")
    }
    throw lastProblem
  }

  deinit {
    stop()
  }

  /// Stops nginx (SIGQUIT lets it finish what it sends; SIGKILL after 5 s).
  public func stop() {
    guard let process else { return }
    self.process = nil
    if process.isRunning {
      kill(process.processIdentifier, SIGQUIT)
      let deadline = Date().addingTimeInterval(5)
      while process.isRunning && Date() < deadline { usleep(20_000) }
      if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
    process.waitUntilExit()
  }

  /// `https://127.0.0.1:PORT/path` (`path` starts with `/`).
  public func url(_ path: String) -> String { "https://127.0.0.1:\(port)\(path)" }

  /// Writes `bytes` as the served file `name` (folders made on the way); returns its path.
  @discardableResult
  public func put(_ name: String, _ bytes: [UInt8]) -> String {
    let path = root + "/" + name
    try? FileManager.default.createDirectory(
      atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    return path
  }

  /// The requests nginx has logged so far, oldest first.
  public func requests() -> [Request] {
    let text = (try? String(contentsOfFile: folder.path + "/logs/access.log", encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { line in
      // nginx writes a quote in a logged header as \x22.
      let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map {
        $0.replacingOccurrences(of: "\\x22", with: "\"")
      }
      guard fields.count >= 11, let status = Int(fields[2]) else { return nil }
      func optional(_ value: String) -> String? { value == "-" || value.isEmpty ? nil : value }
      return Request(
        method: fields[0], uri: fields[1], status: status, proto: fields[3], sessionReused: fields[4] == "r",
        connection: Int(fields[5]) ?? 0, connectionRequests: Int(fields[6]) ?? 0, range: optional(fields[7]),
        ifRange: optional(fields[8]), ifNoneMatch: optional(fields[9]), authorization: optional(fields[10]))
    }
  }

  /// The requests for `uri`.
  public func requests(for uri: String) -> [Request] { requests().filter { $0.uri == uri } }

  /// The `ETag` nginx sends for a file: `"MTIME-SIZE"` in hex.
  public func etag(of name: String) -> String? {
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: root + "/" + name),
      let date = attributes[.modificationDate] as? Date, let size = attributes[.size] as? Int
    else { return nil }
    return "\"\(String(Int(date.timeIntervalSince1970), radix: 16))-\(String(size, radix: 16))\""
  }

  private static func configuration(
    base: String, root: String, port: Int, http2: Bool, serverDirectives: String, clientCA: String?,
    certificates: TestCertificates
  ) -> String {
    // As root, nginx would run its workers as nobody, who cannot read the test's 0700 folder.
    let user = getuid() == 0 ? "user root root;\n" : ""
    let client =
      clientCA.map { "    ssl_client_certificate \($0);\n    ssl_verify_client on;\n" } ?? ""
    return """
      \(user)worker_processes 1;
      pid \(base)/logs/nginx.pid;
      error_log \(base)/logs/error.log warn;
      events { worker_connections 1024; }
      http {
        log_format tests "$request_method\\t$uri\\t$status\\t$server_protocol\\t$ssl_session_reused\\t$connection\\t$connection_requests\\t$http_range\\t$http_if_range\\t$http_if_none_match\\t$http_authorization";
        access_log \(base)/logs/access.log tests;
        client_body_temp_path \(base)/logs/body;
        proxy_temp_path \(base)/logs/proxy;
        fastcgi_temp_path \(base)/logs/fastcgi;
        uwsgi_temp_path \(base)/logs/uwsgi;
        scgi_temp_path \(base)/logs/scgi;
        default_type application/octet-stream;
        sendfile on;
        server {
          listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : "");
          ssl_certificate \(certificates.serverCertificate);
          ssl_certificate_key \(certificates.serverKey);
          ssl_session_cache shared:tests:1m;
      \(client)    root "\(root)";
      \(serverDirectives)
        }
      }

      """
  }

  /// Stops the servers of test processes that died without stopping them (a test run killed
  /// half-way), once per process: each server's folder names its test process in `owner.pid`.
  static let orphansReaped: Bool = {
    let temporary = NSTemporaryDirectory()
    let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []
    for name in names where name.hasPrefix("batchdl-test-") {
      let base = (temporary as NSString).appendingPathComponent(name)
      guard let owner = try? String(contentsOfFile: base + "/owner.pid", encoding: .utf8),
        let ownerPID = pid_t(owner.trimmingCharacters(in: .whitespacesAndNewlines)),
        kill(ownerPID, 0) != 0, errno == ESRCH
      else { continue }
      if let server = try? String(contentsOfFile: base + "/logs/nginx.pid", encoding: .utf8),
        let serverPID = pid_t(server.trimmingCharacters(in: .whitespacesAndNewlines))
      {
        kill(serverPID, SIGTERM)
      }
      try? FileManager.default.removeItem(atPath: base)
    }
    return true
  }()

  /// A port nothing listens on now (the kernel's choice for a socket bound to port 0).
  static func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw Problem("no socket: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw Problem("cannot bind a port: \(String(cString: strerror(errno)))") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  /// Whether something accepts TCP connections on 127.0.0.1:port.
  static func accepts(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }
}
