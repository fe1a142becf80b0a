import Foundation
import TestServer
import Testing

/// The upload sink, header echo and the local SHA-256.
@Suite struct UploadTests {
  let server: TestHTTPServer

  init() throws {
    server = try TestHTTPServer()
    server.route("/upload", .uploadSink)
  }

  @Test func uploadIsRecordedWithItsSHA256() throws {
    let bytes = TestData.pseudoRandomBytes(count: 300_000, seed: 7)
    let file = temporaryFile(bytes)
    defer { try? FileManager.default.removeItem(atPath: file) }
    let result = try curl("-i", "-T", file, server.url("/upload"))
    let reply = result.reply
    #expect(reply.status == 201, "\(result.errorText)")
    #expect(reply.headers["content-type"] == "application/json")
    let digest = SHA256Digest.hex(bytes)
    #expect(reply.bodyText == "{\"bytes\": 300000, \"sha256\": \"\(digest)\"}")
    let logged = server.requests(for: "/upload")
    #expect(logged.count == 1)
    #expect(logged.first?.method == "PUT")
    #expect(logged.first?.body == bytes)
  }

  @Test func chunkedUploadWithExpectContinue() throws {
    let bytes = Array("a chunked upload body\n".utf8)
    let file = temporaryFile(bytes)
    defer { try? FileManager.default.removeItem(atPath: file) }
    let result = try curl(
      "-i", "-H", "Transfer-Encoding: chunked", "-H", "Expect: 100-continue", "--data-binary", "@" + file,
      server.url("/upload"))
    #expect(result.text.hasPrefix("HTTP/1.1 100 Continue\r\n"))
    let reply = result.reply
    #expect(reply.status == 201)
    #expect(reply.bodyText.contains("\"bytes\": 22"))
    #expect(reply.bodyText.contains(SHA256Digest.hex(bytes)))
    let logged = server.requests(for: "/upload").first
    #expect(logged?.body == bytes)
    #expect(logged?.headers["transfer-encoding"] == "chunked")
  }

  @Test func echoHeadersAnswersTheRequestHeadersAsJSON() throws {
    server.route("/echo", .echoHeaders)
    let result = try curl("-H", "Authorization: Bearer abc\"d", "-A", "agent/1", server.url("/echo"))
    #expect(result.text.hasPrefix("{"))
    #expect(result.text.contains("\"authorization\": \"Bearer abc\\\"d\""))
    #expect(result.text.contains("\"user-agent\": \"agent/1\""))
  }

  @Test func sha256MatchesKnownVectors() {
    #expect(SHA256Digest.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    #expect(SHA256Digest.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
    #expect(SHA256Digest.hex(long) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
  }

  @Test func demoRoutesServeWhatTheDemoManifestNeeds() throws {
    server.installDemoRoutes()
    #expect(try curl(server.url("/files/hello.txt")).output == Array("hello, world\n".utf8))
    let blob = try curl("-i", server.url("/files/blob-1m.bin")).reply
    #expect(blob.body.count == 1 << 20)
    #expect(blob.headers["etag"] != nil)
    #expect(blob.headers["last-modified"] != nil)
    #expect(try curl("-i", server.url("/api/releases.json")).reply.headers["content-type"] == "application/json")
    for name in ["a", "b", "c"] {
      #expect(try curl(server.url("/files/\(name).txt")).text == "file \(name)\n")
    }
    let upload = try curl("-X", "PUT", "--data-binary", "x", server.url("/upload/report.txt"))
    #expect(upload.text.contains("\"bytes\": 1"))
  }
}
