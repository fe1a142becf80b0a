import Foundation

/// A real SOCKS5 proxy, microsocks (Debian's), on 127.0.0.1, stopped when the value is released.
/// It resolves the names its clients send (socks5h) itself, and writes a line for each connection
/// it made (`client[5] 127.0.0.1: connected to HOST:PORT`), which is how a test proves that a
/// request went through it and which name it was asked for.
public final class MicroSocks: @unchecked Sendable {
  /// The installed microsocks, or nil (scripts/setup installs it).
  public static var executable: String? { ExternalTool.find("microsocks") }

  public let folder = TemporaryDirectory()
  public let port: Int
  public let credentials: TinyProxy.Credentials?
  private let process: ProxyProcess

  /// `credentials`: required of every client (SOCKS5 user/password authentication; a client
  /// without them is refused at the handshake).
  public init(credentials: TinyProxy.Credentials? = nil) throws {
    guard let microsocks = Self.executable else {
      throw NginxServer.Problem("microsocks is not installed: scripts/setup installs it")
    }
    self.credentials = credentials
    let base = folder.path
    (process, port) = try ProxyProcess.start(name: "microsocks", folder: base, output: base + "/microsocks.log") {
      port in
      var arguments = ["-i", "127.0.0.1", "-p", "\(port)"]
      if let credentials { arguments += ["-u", credentials.user, "-P", credentials.password] }
      return (microsocks, arguments)
    }
  }

  deinit {
    process.stop()
  }

  /// Stops microsocks (its log stays readable until the value is released).
  public func stop() { process.stop() }

  /// `socks5h://127.0.0.1:PORT`: names are resolved by the proxy.
  public var url: String { "socks5h://127.0.0.1:\(port)" }

  /// `socks5h://USER:PASSWORD@127.0.0.1:PORT` with its credentials, else `url`.
  public var urlWithCredentials: String {
    guard let credentials else { return url }
    return "socks5h://\(credentials.user):\(credentials.password)@127.0.0.1:\(port)"
  }

  /// What it wrote so far.
  public func log() -> String {
    (try? String(contentsOfFile: folder.path + "/microsocks.log", encoding: .utf8)) ?? ""
  }

  /// The `HOST:PORT` of each connection it made for a client, oldest first, as the client named it.
  public func connections() -> [String] {
    log().split(separator: "\n").compactMap { line in
      line.range(of: ": connected to ").map { String(line[$0.upperBound...]) }
    }
  }
}
