import Foundation

extension NginxServer {
  /// A `location` of the server that lists its folders with nginx's autoindex module (built into
  /// nginx-light): `NginxServer(autoindex: [...])`.
  public struct Autoindex: Sendable {
    public enum Format: String, Sendable {
      /// `autoindex_format html`: the `Index of /path/` page.
      case html
      /// `autoindex_format json`: `[{"name", "type", "mtime", "size"}]`.
      case json
    }

    /// The location's prefix, starting and ending with `/` (`/json/`).
    public var location: String
    /// The folder it serves, relative to the served root (`""`: the root itself).
    public var folder: String
    public var format: Format
    /// `autoindex_exact_size` (HTML only): sizes in bytes, else rounded to K, M and G.
    public var exactSize: Bool

    public init(location: String, folder: String = "", format: Format = .html, exactSize: Bool = true) {
      self.location = location
      self.folder = folder
      self.format = format
      self.exactSize = exactSize
    }

    /// The `location` block, serving `root/folder/`.
    func location(root: String) -> String {
      let path = folder.isEmpty ? root + "/" : root + "/" + folder + "/"
      let size = exactSize ? "on" : "off"
      return "\n    location \(location) {\n      alias \(path);\n      autoindex on;\n"
        + "      autoindex_format \(format.rawValue);\n      autoindex_exact_size \(size);\n    }\n"
    }
  }

  /// What `/usr/bin/curl -s` gets from `path` (`/listing/`) on this server, trusting its CA: the
  /// body's bytes, the status and the content type (nil when none was sent).
  public func curl(_ path: String) throws -> (status: Int, contentType: String?, body: [UInt8]) {
    guard let curl = ExternalTool.find("curl") else { throw Problem("curl is not installed") }
    let body = folder.path + "/curl-body"
    let outcome = try ExternalTool.run(
      curl,
      [
        "-s", "--max-time", "30", "--cacert", certificates.caCertificate, "-o", body, "-w",
        "%{http_code}\\n%{content_type}", url(path),
      ], timeout: 60)
    guard outcome.status == 0 else { throw Problem("curl \(path) failed (\(outcome.status)): \(outcome.stderr)") }
    let lines = outcome.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let bytes = FileManager.default.contents(atPath: body).map { [UInt8]($0) } ?? []
    try? FileManager.default.removeItem(atPath: body)
    let type = lines.count > 1 && !lines[1].isEmpty ? lines[1] : nil
    return (Int(lines.first ?? "") ?? 0, type, bytes)
  }
}
