import Foundation
import TestSupport

/// Compressed inputs made by the tests with Python's gzip, lzma and zlib modules and the gzip and
/// xz tools, in a temporary folder the value owns. The suites keep theirs in a `static let`, never
/// released: those folders are removed when the test process exits.
struct Fixtures {
  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  /// Helpers the scripts use: `w(name, data)` writes a file and `expect(name, data, raw)` writes a
  /// case with its expected output (`name.expected`); `text(n)` is n bytes of Packages-like
  /// stanzas (random digests, so that it compresses as a real index does, about 3:1).
  static let prelude = """
    import gzip, lzma, zlib, hashlib, random, subprocess, struct
    def w(name, data):
        with open(name, 'wb') as f:
            f.write(data)
    def expect(name, data, raw):
        w(name, data)
        w(name + '.expected', raw)
    def text(n, seed=1):
        r = random.Random(seed)
        parts = []
        size = 0
        i = 0
        while size < n:
            s = ('Package: pkg%d\\nVersion: 1.%d-%d\\nArchitecture: amd64\\nMaintainer: M <m%d@example.org>\\n'
                 'Filename: pool/main/p/pkg%d/pkg%d_1.0_amd64.deb\\nSize: %d\\nSHA256: %064x\\n'
                 'Description: package number %d\\n\\n') % (
                i, r.randint(0, 99), r.randint(1, 9), i, i, i, r.randint(1000, 10**7), r.getrandbits(256), i)
            parts.append(s)
            size += len(s)
            i += 1
        return ''.join(parts).encode()[:n]
    def tool(args, data):
        return subprocess.run(args, input=data, stdout=subprocess.PIPE, check=True).stdout
    def gz(data):
        return gzip.compress(data, mtime=0)
    def xz(data, **options):
        return lzma.compress(data, format=lzma.FORMAT_XZ, **options)
    def flip(data, i):
        b = bytearray(data)
        b[i] ^= 0x55
        return bytes(b)
    def xz_check_id(data, check):
        b = bytearray(data)
        b[7] = check
        b[8:12] = struct.pack('<I', zlib.crc32(bytes(b[6:8])))
        return bytes(b)
    def zeros_gz(n):
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = bytes(1 << 20)
        return b''.join(c.compress(block) for _ in range(n >> 20)) + c.flush()
    def zeros_xz(n):
        c = lzma.LZMACompressor(format=lzma.FORMAT_XZ)
        block = bytes(1 << 20)
        return b''.join(c.compress(block) for _ in range(n >> 20)) + c.flush()
    """

  let folder: TemporaryDirectory

  /// Runs `script` (after the prelude) in a new folder.
  init(_ script: String) throws {
    folder = TemporaryDirectory()
    LeftFolders.remember(folder.path)
    let outcome = try ExternalTool.run(
      "/usr/bin/python3", ["-c", Self.prelude + "\n" + script], in: folder.path, timeout: 600)
    guard outcome.status == 0, !outcome.timedOut else {
      throw Failure(description: "the fixture script failed: \(outcome.output)")
    }
  }

  /// The path of `name` in the folder.
  func path(_ name: String) -> String { folder.path + "/" + name }

  /// The bytes of `name`, or nil when there is no such file.
  func bytes(_ name: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path(name)).map { [UInt8]($0) }
  }
}

/// Fixture folders removed at the process's exit, for those a static keeps alive.
enum LeftFolders {
  private static let lock = NSLock()
  nonisolated(unsafe) private static var paths: [String] = []
  private static let registered: Void = { atexit { LeftFolders.removeAll() } }()

  static func remember(_ path: String) {
    _ = registered
    lock.withLock { paths.append(path) }
  }

  private static func removeAll() {
    for path in lock.withLock({ paths }) { try? FileManager.default.removeItem(atPath: path) }
  }
}
