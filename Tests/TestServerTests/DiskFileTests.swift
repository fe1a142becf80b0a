import Foundation
import TestServer
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Files served from disk (`FileResource.onDisk`, `batchdl-testserver --serve-file`): validators,
/// ranges, `If-Range` and the per-response rate limit.
@Suite struct DiskFileTests {
  let bytes = TestData.pseudoRandomBytes(count: 300_000, seed: 21)

  @Test func onDiskServesTheFileWithValidatorsAndRanges() throws {
    let path = temporaryFile(bytes)
    defer { try? FileManager.default.removeItem(atPath: path) }
    // A known modification time, for the ETag and Last-Modified.
    var times = [timespec(tv_sec: 1_704_067_200, tv_nsec: 0), timespec(tv_sec: 1_704_067_200, tv_nsec: 0)]
    #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
    let file = try FileResource.onDisk(path)
    #expect(file.body == bytes)
    #expect(file.etag == .strong("65920080-493e0"))
    #expect(file.rateLimit == nil)
    let server = try TestHTTPServer()
    server.route("/big.bin", .file(file))

    let whole = try curl("-i", server.url("/big.bin"))
    #expect(whole.reply.status == 200)
    #expect(whole.reply.body == bytes)
    #expect(whole.reply.headers["etag"] == "\"65920080-493e0\"")
    #expect(whole.reply.headers["last-modified"] == "Mon, 01 Jan 2024 00:00:00 GMT")
    #expect(whole.reply.headers["accept-ranges"] == "bytes")

    let ranged = try curl(
      "-i", "-H", "Range: bytes=1000-1999", "-H", "If-Range: \"65920080-493e0\"", server.url("/big.bin")
    ).reply
    #expect(ranged.status == 206)
    #expect(ranged.headers["content-range"] == "bytes 1000-1999/300000")
    #expect(ranged.body == Array(bytes[1000...1999]))
    let stale = try curl("-i", "-H", "Range: bytes=1000-1999", "-H", "If-Range: \"other\"", server.url("/big.bin"))
    #expect(stale.reply.status == 200)
    #expect(stale.reply.body == bytes)
    let cached = try curl("-i", "-H", "If-None-Match: \"65920080-493e0\"", server.url("/big.bin")).reply
    #expect(cached.status == 304)
    server.stop()
  }

  @Test func onDiskRefusesWhatIsNotARegularFile() {
    #expect(throws: TestServerError.self) { try FileResource.onDisk("/nonexistent/batchdl-testserver.bin") }
    #expect(throws: TestServerError.self) { try FileResource.onDisk(NSTemporaryDirectory()) }
  }

  @Test func serveFileOptionPacesEveryResponseFromItsFirstByte() throws {
    let path = temporaryFile(bytes)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let server = try ServerProcess(["--port", "0", "--serve-file", path, "--rate-limit", "1000000"])
    defer { server.stop() }
    let url = server.baseURL + "/" + URL(fileURLWithPath: path).lastPathComponent

    // 300,000 bytes at 1 MB/s in pieces of 50,000: the last piece is due 0.25 s after the first.
    let whole = try curl("-i", url)
    #expect(whole.status == 0, "\(whole.errorText)")
    #expect(whole.reply.body == bytes)
    #expect(whole.seconds >= 0.25)
    let etag = try #require(whole.reply.headers["etag"])

    // A range asked of a connection that has sent nothing yet gets no burst either: 150,000 bytes
    // take 0.1 s at least.
    let ranged = try curl("-i", "-H", "Range: bytes=100000-249999", "-H", "If-Range: \(etag)", url)
    #expect(ranged.reply.status == 206)
    #expect(ranged.reply.headers["content-range"] == "bytes 100000-249999/300000")
    #expect(ranged.reply.body == Array(bytes[100_000...249_999]))
    #expect(ranged.seconds >= 0.1)
    let stale = try curl("-i", "-H", "Range: bytes=100000-", "-H", "If-Range: \"old\"", url)
    #expect(stale.reply.status == 200)
    #expect(stale.reply.body == bytes)
    #expect(try curl("-i", server.baseURL + "/elsewhere").reply.status == 404)
  }

  @Test func rateLimitNeedsAServedFile() throws {
    let outcome = try ServerProcess.runToEnd(["--port", "0", "--rate-limit", "1000"])
    #expect(outcome.status != 0)
    #expect(outcome.errorText.contains("--rate-limit applies to --serve-file files"))
    let missing = try ServerProcess.runToEnd(["--port", "0", "--serve-file", "/nonexistent/x.bin"])
    #expect(missing.status == 1)
    #expect(missing.errorText.contains("cannot open /nonexistent/x.bin"))
  }
}

/// Why the `batchdl-testserver` executable did not start.
struct ServerProcessError: Error, CustomStringConvertible {
  var description: String
}

/// The built `batchdl-testserver` executable, started and stopped by a test.
final class ServerProcess {
  let process = Process()
  let baseURL: String
  private let output = Pipe()

  /// The executable beside the test bundle in the build folder (`swift build --build-tests`
  /// builds it with the tests).
  static var executable: String {
    var folder = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").deletingLastPathComponent()
    for _ in 0..<4 {
      let candidate = folder.appendingPathComponent("batchdl-testserver").path
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
      folder = folder.deletingLastPathComponent()
    }
    for bundle in Bundle.allBundles {
      let candidate = bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("batchdl-testserver").path
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return ".build/debug/batchdl-testserver"
  }

  /// Starts the server and waits (5 s at most) for its "listening on URL" line, which comes after
  /// the lines of the files it serves: the routes are in place by then.
  init(_ arguments: [String]) throws {
    process.executableURL = URL(fileURLWithPath: Self.executable)
    process.arguments = arguments
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    var text = ""
    var line: Substring?
    let deadline = Date().addingTimeInterval(5)
    while line == nil, Date() < deadline {
      let data = output.fileHandleForReading.availableData
      if data.isEmpty { break }
      text += String(decoding: data, as: UTF8.self)
      line = text.split(separator: "\n").first { $0.hasPrefix("listening on ") && text.contains($0 + "\n") }
    }
    guard let line else {
      process.terminate()
      process.waitUntilExit()
      throw ServerProcessError(description: "batchdl-testserver did not start: \(text)")
    }
    baseURL = String(line.dropFirst("listening on ".count))
  }

  /// Sends SIGTERM and waits for the process to end.
  func stop() {
    guard process.isRunning else { return }
    process.terminate()
    process.waitUntilExit()
  }

  /// Runs the server with arguments it should refuse or fail on, and waits (10 s at most).
  static func runToEnd(_ arguments: [String]) throws -> (status: Int32, errorText: String) {
    let process = Process()
    let errors = Pipe()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = errors
    try process.run()
    let deadline = Date().addingTimeInterval(10)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
      process.terminate()
      process.waitUntilExit()
      return (-1, "still running after 10 s")
    }
    let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return (process.terminationStatus, text)
  }
}
