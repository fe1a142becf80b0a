import Foundation
import TestServer
import TestSupport
import Testing

/// Which sessions' requests share connections, against a real nginx over TLS with HTTP/2: only
/// those of one connection identity (what they trust, present and speak, `ConnectionIdentity`),
/// never by libcurl's own matching, which compares a client certificate's path but not its key's
/// password, and reuses a connection of another `http_version`.
@Suite(.serialized) struct ConnectionPoolTests {
  /// `count` files of 3 KB under `folder/` on `nginx`, and the task lines that fetch them into
  /// `folder/` (indented by six spaces, under a session's `tasks:`).
  static func files(_ folder: String, count: Int, on nginx: NginxServer) -> String {
    var lines: [String] = []
    for index in 0..<count {
      let name = "\(folder)/f\(index).bin"
      nginx.put(name, FileResource.versionBytes(index + 1, length: 3000))
      lines.append("      - download: \(nginx.url("/" + name))\n        to: \(name)")
    }
    return lines.joined(separator: "\n")
  }

  /// The connections nginx logged for the requests under `/folder/`.
  static func connections(_ folder: String, _ nginx: NginxServer) -> Set<Int> {
    Set(nginx.requests().filter { $0.uri.hasPrefix("/\(folder)/") }.map(\.connection))
  }

  @Test func aWrongKeyPasswordFailsBesideTheRightOneOnTheSameCertificate() throws {
    let nginx = try NginxServer(clientCertificates: true)
    let certificates = nginx.certificates
    let client =
      "ca_file: \(certificates.caCertificate), client_cert: \(certificates.clientCertificate), client_key: \(certificates.clientKey)"
    let fixture = try RunFixture()
    fixture.manifest(
      """
      version: 1
      sessions:
        right:
          tls: {\(client), key_password: "\(certificates.clientKeyPassword)"}
          network: {max_concurrent: 4}
          tasks:
      \(Self.files("right", count: 12, on: nginx))
        wrong:
          tls: {\(client), key_password: not-the-password}
          retry: {attempts: 1}
          network: {max_concurrent: 4}
          tasks:
      \(Self.files("wrong", count: 12, on: nginx))
      """)
    let outcome = try fixture.run()
    #expect(outcome.status == 1, "\(outcome.stderr)")
    let tasks = try fixture.tasks()
    for index in 0..<12 {
      #expect(fixture.holds("right/f\(index).bin", FileResource.versionBytes(index + 1, length: 3000)))
      #expect(!fixture.folder.exists("wrong/f\(index).bin"), "a key that cannot be opened fetches nothing")
      let error = tasks["wrong/f\(index).bin"]?["error"] as? [String: Any]
      #expect(error?["code"] as? String == "tls", "\(String(describing: tasks["wrong/f\(index).bin"]))")
    }
    #expect(nginx.requests().allSatisfy { !$0.uri.hasPrefix("/wrong/") }, "no request of `wrong` reached nginx")
    #expect(!outcome.output.contains("not-the-password"))
  }

  @Test func sessionsOfOtherIdentitiesNeverShareAConnection() throws {
    // Five sessions that trust the same CA; three differ from the first in one setting each, the
    // last is the first's twin, which has a pool of its own all the same: every session keeps its
    // cookies, and its cookie store is in its share (`ShareKey`). Each fetches its own files.
    let nginx = try NginxServer()
    let ca = "ca_file: \(nginx.certificates.caCertificate)"
    let sessions: [(name: String, settings: String)] = [
      ("auto", "tls: {\(ca)}"),
      ("two", "tls: {\(ca)}\n    network: {http_version: \"2\", max_concurrent: 4}"),
      ("tls12", "tls: {\(ca), min_version: \"1.2\"}"),
      ("pinned", "tls: {\(ca), pinned_pubkey: \"\(nginx.certificates.serverPin)\"}"),
      ("twin", "tls: {\(ca)}"),
    ]
    let fixture = try RunFixture()
    var yaml = "version: 1\nsessions:\n"
    for session in sessions {
      yaml += "  \(session.name):\n    \(session.settings)\n    tasks:\n"
      yaml += Self.files(session.name, count: 8, on: nginx) + "\n"
    }
    fixture.manifest(yaml)
    let outcome = try fixture.run()
    #expect(outcome.status == 0, "\(outcome.stderr)")
    for session in sessions {
      for index in 0..<8 {
        #expect(fixture.holds("\(session.name)/f\(index).bin", FileResource.versionBytes(index + 1, length: 3000)))
      }
    }
    #expect(nginx.requests().allSatisfy { $0.proto == "HTTP/2.0" })
    let pools = sessions.map { Self.connections($0.name, nginx) }
    for (i, first) in pools.enumerated() {
      #expect(!first.isEmpty)
      for (j, second) in pools.enumerated() where j > i {
        #expect(
          first.isDisjoint(with: second),
          "\(sessions[i].name) \(first.sorted()) and \(sessions[j].name) \(second.sorted()) share a connection")
      }
    }
  }
}
