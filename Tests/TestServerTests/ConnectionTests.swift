import Foundation
import TestServer
import Testing

/// Connections: keep-alive, counters, loopback-only binding, stopping.
@Suite struct ConnectionTests {
  let server: TestHTTPServer

  init() throws {
    server = try TestHTTPServer()
    server.route("/a", .text("a\n"))
    server.route("/b", .text("b\n"))
  }

  @Test func connectionsAreKeptAlive() throws {
    let result = try curl(server.url("/a"), server.url("/b"))
    #expect(result.text == "a\nb\n")
    #expect(server.totalConnections == 1)
    let ids = server.requests.map(\.connectionID)
    #expect(ids == [1, 1])
  }

  @Test func connectionCloseIsHonoured() throws {
    let result = try curl("-H", "Connection: close", server.url("/a"), server.url("/b"))
    #expect(result.text == "a\nb\n")
    #expect(server.totalConnections == 2)
  }

  @Test func pipelinedRequestsOnARawSocket() throws {
    let connection = try #require(RawConnection(port: server.port))
    connection.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    let text = connection.readAll()
    #expect(text.components(separatedBy: "HTTP/1.1 200 OK").count == 3)
    #expect(text.hasSuffix("b\n"))
  }

  @Test func malformedRequestIs400() throws {
    let connection = try #require(RawConnection(port: server.port))
    connection.send("NONSENSE\r\n\r\n")
    #expect(connection.readAll().hasPrefix("HTTP/1.1 400 Bad Request"))
  }

  @Test func countsParallelConnectionsAndRequests() throws {
    server.route("/slow", .file(FileResource(body: Array("slow\n".utf8), stallAfterHeaders: 1)))
    let running = try (0..<3).map { _ in try RunningCurl([server.url("/slow")]) }
    let results = running.map { $0.wait() }
    #expect(results.allSatisfy { $0.status == 0 && $0.text == "slow\n" })
    #expect(server.maxOpenConnections == 3)
    #expect(server.maxActiveRequests == 3)
    #expect(server.totalConnections == 3)
    server.resetStats()
    #expect(server.totalConnections == 0)
    #expect(server.maxActiveRequests == 0)
  }

  @Test func openConnectionsDropToZeroAfterClientsLeave() throws {
    _ = try curl(server.url("/a"))
    var open = server.openConnections
    for _ in 0..<50 where open > 0 {
      Thread.sleep(forTimeInterval: 0.02)
      open = server.openConnections
    }
    #expect(open == 0)
    #expect(server.maxOpenConnections == 1)
  }

  @Test func bindsLoopbackOnly() throws {
    #expect(server.baseURL == "http://127.0.0.1:\(server.port)")
    // 127.0.0.2 reaches a socket bound to 0.0.0.0, never one bound to 127.0.0.1.
    let other = try curl("http://127.0.0.2:\(server.port)/a")
    #expect(other.status == 7)
    #expect(RawConnection(port: server.port, host: 0x7f00_0002) == nil)
    let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
    let portHex = String(server.port, radix: 16, uppercase: true)
    let padded = String(repeating: "0", count: 4 - portHex.count) + portHex
    var listeners: [String] = []
    for line in table.split(separator: "\n") {
      let fields = line.split(separator: " ").map(String.init)
      let suffix = ":" + padded
      if fields.count > 3 && fields[1].hasSuffix(suffix) && fields[3] == "0A" { listeners.append(fields[1]) }
    }
    #expect(listeners == ["0100007F:" + padded])
  }

  @Test func stopEndsStalledResponsesAndRefusesNewConnections() throws {
    server.route("/stall", .file(FileResource(body: Array("late\n".utf8), stallAfterHeaders: 30)))
    let running = try RunningCurl([server.url("/stall")])
    for _ in 0..<100 where server.activeRequests == 0 { Thread.sleep(forTimeInterval: 0.02) }
    let started = Date()
    server.stop()
    #expect(Date().timeIntervalSince(started) < 2)
    let result = running.wait()
    #expect(result.status == 18)
    #expect(try curl(server.url("/a")).status == 7)
    server.stop()
  }

  @Test func idleConnectionIsClosedByStop() throws {
    let connection = try #require(RawConnection(port: server.port))
    for _ in 0..<100 where server.openConnections == 0 { Thread.sleep(forTimeInterval: 0.01) }
    #expect(server.openConnections == 1)
    server.stop()
    #expect(connection.readAll().isEmpty)
    #expect(server.openConnections == 0)
  }
}
