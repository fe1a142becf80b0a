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
      routes that manifests/demo.yaml uses.

      Example:
        batchdl-testserver --demo &
        batchdl run manifests/demo.yaml
      """
  )

  @Option(help: "The port to listen on (0 picks a free one).")
  var port: UInt16 = 8765

  @Flag(help: "Serve the routes of manifests/demo.yaml.")
  var demo = false

  @Option(help: "Seconds each socket read or write may wait.")
  var ioTimeout: Double = 5

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
    print("listening on \(server.baseURL)")
    fflush(nil)

    var received: Int32 = 0
    while sigwait(&signals, &received) != 0 {}
    server.stop()
    print("stopped (signal \(received))")
    fflush(nil)
  }
}
