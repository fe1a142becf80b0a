import Foundation

/// A real HTTPS proxy on 127.0.0.1, as a client meets one (`proxy: https://...`): nginx's stream
/// module terminates TLS with a certificate of the test's throw-away CA and passes the bytes to
/// a tinyproxy (`TinyProxy`), whose log names every request. An `http://` URL goes to it as a whole
/// URL inside the TLS connection; an `https://` URL is a `CONNECT` inside it (TLS in TLS).
public final class HTTPSProxy: @unchecked Sendable {
  /// Where Debian's libnginx-mod-stream puts the module (scripts/setup installs it).
  public static let streamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"

  /// Whether nginx, its stream module and tinyproxy are installed: a test that needs them is
  /// enabled only then.
  public static var isAvailable: Bool {
    ExternalTool.find("nginx") != nil && FileManager.default.fileExists(atPath: streamModule)
      && TinyProxy.executable != nil
  }

  public let folder = TemporaryDirectory()
  /// The tinyproxy behind the TLS front.
  public let tinyproxy: TinyProxy
  /// The certificates the front shows (`serverCertificate`, for 127.0.0.1 and localhost).
  public let certificates: TestCertificates
  public let port: Int
  private let process: ProxyProcess

  /// `certificates`: the CA and server certificate the front shows (another server's, so that one
  /// `ca_file` trusts both; nil: a CA of its own that nothing else trusts). `credentials` and
  /// `connectPorts` are tinyproxy's.
  public init(
    certificates: TestCertificates? = nil, credentials: TinyProxy.Credentials? = nil, connectPorts: [Int] = []
  ) throws {
    guard let nginx = ExternalTool.find("nginx"), FileManager.default.fileExists(atPath: Self.streamModule) else {
      throw NginxServer.Problem("nginx or its stream module is not installed: scripts/setup installs them")
    }
    let base = folder.path
    if let certificates {
      self.certificates = certificates
    } else {
      try FileManager.default.createDirectory(atPath: base + "/certs", withIntermediateDirectories: true)
      self.certificates = try TestCertificates(in: base + "/certs")
    }
    tinyproxy = try TinyProxy(credentials: credentials, connectPorts: connectPorts)
    let backend = tinyproxy.port
    let shown = self.certificates
    (process, port) = try ProxyProcess.start(name: "nginx (stream)", folder: base, output: base + "/output.txt") {
      port in
      let user = getuid() == 0 ? "user root root;\n" : ""
      let configuration = """
        load_module \(Self.streamModule);
        \(user)worker_processes 1;
        pid \(base)/nginx.pid;
        error_log \(base)/error.log warn;
        events { worker_connections 256; }
        stream {
          server {
            listen 127.0.0.1:\(port) ssl;
            ssl_certificate \(shown.serverCertificate);
            ssl_certificate_key \(shown.serverKey);
            proxy_pass 127.0.0.1:\(backend);
          }
        }

        """
      try configuration.write(toFile: base + "/nginx.conf", atomically: true, encoding: .utf8)
      return (nginx, ["-p", base, "-c", base + "/nginx.conf", "-e", base + "/error.log", "-g", "daemon off;"])
    }
  }

  deinit {
    process.stop()
  }

  /// `https://127.0.0.1:PORT`.
  public var url: String { "https://127.0.0.1:\(port)" }

  /// `https://USER:PASSWORD@127.0.0.1:PORT` with tinyproxy's credentials, else `url`.
  public var urlWithCredentials: String {
    guard let credentials = tinyproxy.credentials else { return url }
    return "https://\(credentials.user):\(credentials.password)@127.0.0.1:\(port)"
  }
}
