import Foundation

/// A real HTTP proxy, tinyproxy (Debian's), on 127.0.0.1 in the foreground with a configuration of
/// the test's, stopped when the value is released. It forwards plain requests (`GET http://...`)
/// and tunnels HTTPS (`CONNECT host:port`); its log names every request it received, which is how
/// a test proves that a request went through it.
public final class TinyProxy: @unchecked Sendable {
  /// A proxy user and password (`BasicAuth`): without them tinyproxy answers 407.
  public struct Credentials: Sendable {
    public var user: String
    public var password: String
    public init(user: String, password: String) {
      self.user = user
      self.password = password
    }
  }

  /// The installed tinyproxy, or nil (scripts/setup installs it): a test that needs it is enabled
  /// only when it is there.
  public static var executable: String? { ExternalTool.find("tinyproxy") }

  public let folder = TemporaryDirectory()
  public let port: Int
  public let credentials: Credentials?
  private let process: ProxyProcess

  /// `credentials`: required of every client (`BasicAuth`); `connectPorts`: the only ports
  /// `CONNECT` may reach (none: every port); `maxClients`: the connections it serves at once
  /// (tinyproxy's default is 100, and a client over it waits).
  public init(credentials: Credentials? = nil, connectPorts: [Int] = [], maxClients: Int = 256) throws {
    guard let tinyproxy = Self.executable else {
      throw NginxServer.Problem("tinyproxy is not installed: scripts/setup installs it")
    }
    self.credentials = credentials
    let base = folder.path
    let log = base + "/tinyproxy.log"
    (process, port) = try ProxyProcess.start(name: "tinyproxy", folder: base, output: base + "/output.txt") { port in
      var lines = [
        "Listen 127.0.0.1", "Port \(port)", "Timeout 60", "MaxClients \(maxClients)", "Allow 127.0.0.1",
        "LogFile \"\(log)\"", "LogLevel Info",
      ]
      lines += connectPorts.map { "ConnectPort \($0)" }
      if let credentials { lines.append("BasicAuth \(credentials.user) \(credentials.password)") }
      try (lines.joined(separator: "\n") + "\n").write(
        toFile: base + "/tinyproxy.conf", atomically: true, encoding: .utf8)
      _ = FileManager.default.createFile(atPath: log, contents: nil)
      return (tinyproxy, ["-d", "-c", base + "/tinyproxy.conf"])
    }
  }

  deinit {
    process.stop()
  }

  /// Stops tinyproxy (its log stays readable until the value is released).
  public func stop() { process.stop() }

  /// `http://127.0.0.1:PORT`.
  public var url: String { "http://127.0.0.1:\(port)" }

  /// `http://USER:PASSWORD@127.0.0.1:PORT` with its credentials, else `url`.
  public var urlWithCredentials: String {
    guard let credentials else { return url }
    return "http://\(credentials.user):\(credentials.password)@127.0.0.1:\(port)"
  }

  /// Its log so far.
  public func log() -> String {
    (try? String(contentsOfFile: folder.path + "/tinyproxy.log", encoding: .utf8)) ?? ""
  }

  /// The request lines it received, oldest first: `GET http://127.0.0.1:8080/a HTTP/1.1`,
  /// `CONNECT 127.0.0.1:8443 HTTP/1.1`.
  public func requestLines() -> [String] {
    log().split(separator: "\n").compactMap { line in
      guard let range = line.range(of: "Request (file descriptor ") else { return nil }
      let rest = line[range.upperBound...]
      guard let colon = rest.range(of: "): ") else { return nil }
      return String(rest[colon.upperBound...])
    }
  }

  /// The request lines that name `target` (a URL, or the `host:port` of a CONNECT).
  public func requestLines(naming target: String) -> [String] {
    requestLines().filter { $0.split(separator: " ").dropFirst().first.map(String.init) == target }
  }
}
