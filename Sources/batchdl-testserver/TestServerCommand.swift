import ArgumentParser
import Foundation
import TestServer

#if canImport(Glibc)
  import Glibc
#endif

/// Runs the loopback test server until SIGINT or SIGTERM.
@main
struct TestServerCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "batchdl-testserver",
    abstract: "A loopback HTTP/1.1 test server for batchdl's demo and end-to-end tests.",
    discussion: """
      Listens on 127.0.0.1 only and serves until SIGINT or SIGTERM. With --demo it answers the \
      routes that manifests/demo.yaml uses. With --serve-file it serves files from disk at /NAME \
      (their last path component), with ranges, If-Range and an ETag, each response paced to \
      --rate-limit bytes per second from its first byte (unlike nginx's limit_rate, no burst).

      Examples:
        batchdl-testserver --demo &
        batchdl run manifests/demo.yaml
        batchdl-testserver --port 8785 --serve-file big.bin --rate-limit 8388608
      """
  )

  @Option(help: "The port to listen on (0 picks a free one).")
  var port: UInt16 = 8765

  @Flag(help: "Serve the routes of manifests/demo.yaml.")
  var demo = false

  @Option(help: "Seconds each socket read or write may wait.")
  var ioTimeout: Double = 5

  @Option(
    name: .customLong("serve-file"),
    help: "Serve this file (read into memory at the start) at /NAME, its last path component; may be repeated.")
  var serveFiles: [String] = []

  @Option(help: "The most body bytes per second each response of a --serve-file file sends.")
  var rateLimit: Int?

  func validate() throws {
    if let rateLimit, rateLimit < 1 { throw ValidationError("--rate-limit must be at least 1 (bytes per second)") }
    if rateLimit != nil && serveFiles.isEmpty { throw ValidationError("--rate-limit applies to --serve-file files") }
    let names = serveFiles.map { URL(fileURLWithPath: $0).lastPathComponent }
    if Set(names).count != names.count { throw ValidationError("two --serve-file files have the same name") }
  }

  func run() throws {
    // Block the signals before any thread starts, so that only sigwait below receives them.
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGINT)
    sigaddset(&signals, SIGTERM)
    pthread_sigmask(SIG_BLOCK, &signals, nil)

    let server: TestHTTPServer
    do {
      server = try TestHTTPServer(port: port, ioTimeout: ioTimeout)
    } catch {
      FileHandle.standardError.write(Data("batchdl-testserver: \(error)\n".utf8))
      throw ExitCode(1)
    }
    if demo { server.installDemoRoutes() }
    for path in serveFiles {
      let file: FileResource
      do {
        file = try FileResource.onDisk(path, rateLimit: rateLimit)
      } catch {
        server.stop()
        FileHandle.standardError.write(Data("batchdl-testserver: \(error)\n".utf8))
        throw ExitCode(1)
      }
      let route = "/" + URL(fileURLWithPath: path).lastPathComponent
      server.route(route, .file(file))
      print("serving \(path) at \(server.url(route)) (\(file.body.count) bytes)")
    }
    print("listening on \(server.baseURL)")
    fflush(nil)

    var received: Int32 = 0
    while sigwait(&signals, &received) != 0 {}
    server.stop()
    print("stopped (signal \(received))")
    fflush(nil)
  }
}
