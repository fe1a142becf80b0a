import Foundation
import TestSupport
import Testing

/// The systemd units of docs/examples/systemd, checked with `systemd-analyze verify` where the
/// machine has it (Debian's systemd), with the built binary standing in for /usr/bin/batchdl (the package's).
@Suite struct SystemdUnitTests {
  static let examples =
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path + "/docs/examples/systemd"
  static let analyze = "/usr/bin/systemd-analyze"

  func verify(_ folder: TemporaryDirectory, _ units: [String]) throws -> (status: Int32, output: String) {
    let result = try ExternalTool.run(Self.analyze, ["verify", "--man=no"] + units.map { folder.path + "/" + $0 })
    return (result.status, result.output)
  }

  /// The example units, copied into `folder` with the built binary in `ExecStart`.
  func copyUnits(into folder: TemporaryDirectory, timer edit: (String) -> String = { $0 }) throws {
    let service = try String(contentsOfFile: Self.examples + "/batchdl-mirror.service", encoding: .utf8)
    let timer = try String(contentsOfFile: Self.examples + "/batchdl-mirror.timer", encoding: .utf8)
    folder.write(
      "batchdl-mirror.service",
      service.replacingOccurrences(of: "/usr/bin/batchdl", with: BinaryRunner.executable))
    folder.write("batchdl-mirror.timer", edit(timer))
  }

  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: analyze)))
  func theExampleServiceAndTimerVerify() throws {
    let folder = TemporaryDirectory()
    try copyUnits(into: folder)
    let result = try verify(folder, ["batchdl-mirror.service", "batchdl-mirror.timer"])
    #expect(result.status == 0, "\(result.output)")
    #expect(result.output.isEmpty, "\(result.output)")
    let timer = folder.read("batchdl-mirror.timer") ?? ""
    #expect(timer.contains("Persistent=true"))
    #expect(timer.contains("OnCalendar="))
    let start = (folder.read("batchdl-mirror.service") ?? "").split(separator: "\n").first {
      $0.hasPrefix("ExecStart=")
    }
    #expect(start.map { !$0.contains("flock") } == true, "batchdl locks itself")
  }

  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: analyze)))
  func aBrokenTimerDoesNotVerify() throws {
    let folder = TemporaryDirectory()
    try copyUnits(into: folder) { $0.replacingOccurrences(of: "OnCalendar=*-*-* 02:15:00", with: "OnCalendar=at two") }
    let result = try verify(folder, ["batchdl-mirror.service", "batchdl-mirror.timer"])
    #expect(result.status != 0, "\(result.output)")
  }
}
