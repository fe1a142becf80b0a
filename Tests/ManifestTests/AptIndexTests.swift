import Testing

@testable import BatchDLManifest

/// The `Packages` and `Sources` readers: pool files, conflicts, hostile paths, limits, chunks.
@Suite struct AptIndexTests {
  static let hashA = String(repeating: "a", count: 64)
  static let hashB = String(repeating: "b", count: 64)

  static func stanza(_ name: String, _ filename: String, size: Int = 10, sha256: String = hashA) -> String {
    """
    Package: \(name)
    Version: 1.0-1
    Architecture: amd64
    Description: a package
     with a long description
     .
     of lines
    Filename: \(filename)
    Size: \(size)
    SHA256: \(sha256)


    """
  }

  static func read(
    _ text: String, kind: AptIndexReader.Kind = .packages, limits: AptIndexReader.Limits = .init()
  )
    -> Result<AptIndex, AptIndexProblem>
  {
    AptIndexReader.read(Array(text.utf8), kind: kind, limits: limits)
  }

  static func paths(_ index: AptIndex) -> [String] {
    index.files.map { String(decoding: $0.path, as: UTF8.self) }
  }

  @Test func readsPackages() throws {
    let text =
      Self.stanza("hello", "pool/main/h/hello/hello_1.0_amd64.deb", size: 1234)
      + "\n\n" + Self.stanza("bye", "pool/main/b/bye/bye_1.0_amd64.deb", sha256: Self.hashB.uppercased())
      + Self.stanza("hello", "pool/main/h/hello/hello_1.0_amd64.deb", size: 1234)
    let index = try Self.read(text).get()
    #expect(Self.paths(index) == ["pool/main/h/hello/hello_1.0_amd64.deb", "pool/main/b/bye/bye_1.0_amd64.deb"])
    #expect(index.files[0].size == 1234 && index.files[0].package == "hello" && index.files[0].version == "1.0-1")
    #expect(index.files[0].architecture == "amd64" && index.files[0].line == 1)
    #expect(index.files[1].sha256 == Self.hashB)
    #expect(index.refused.isEmpty && index.stanzas == 3)
  }

  /// The same text fed in chunks of every size from 1 byte gives the same result.
  @Test func chunksOfAnySizeGiveTheSameResult() throws {
    let text = Array(
      (Self.stanza("a", "pool/a.deb") + Self.stanza("b", "pool/b.deb", size: 3) + "Package: c\nFilename: pool/c.deb")
        .utf8)
    let whole = try AptIndexReader.read(text, kind: .packages).get()
    for size in [1, 2, 3, 7, 64, 1000] {
      var reader = AptIndexReader(kind: .packages)
      var start = 0
      while start < text.count {
        reader.feed(Array(text[start..<min(start + size, text.count)]))
        start += size
      }
      let chunked = try reader.finish().get()
      #expect(chunked.files == whole.files, "chunks of \(size)")
      #expect(chunked.refused == whole.refused, "chunks of \(size)")
    }
    #expect(whole.files.count == 2 && whole.refused.count == 1)
  }

  /// Hostile `Filename:` values: each refused alone, the other paragraph kept.
  @Test(arguments: [
    ("../../etc/passwd", "'..'"),
    ("pool/../../../x.deb", "'..'"),
    ("/etc/passwd", "absolute"),
    ("./pool/a.deb", "'.' segment"),
    ("pool//a.deb", "empty segment"),
    ("dists/stable/Release", "'dists/'"),
    ("dists/stable/InRelease", "'dists/'"),
    ("dists/stable/main/binary-amd64/Packages", "'dists/'"),
    ("pool/.batchdl/state.sqlite", "state folder"),
    (".batchdl/x", "state folder"),
    ("pool/a.deb.batchdl-part", "partial file"),
    ("pool/\u{7F}.deb", "control character"),
  ])
  func refusesHostilePaths(path: String, reason: String) throws {
    let index = try Self.read(Self.stanza("evil", path) + Self.stanza("good", "pool/g.deb")).get()
    #expect(Self.paths(index) == ["pool/g.deb"])
    #expect(index.refused.count == 1)
    #expect(index.refused.first?.path == Array(path.utf8))
    #expect(index.refused.first?.reason.contains(reason) == true, "\(index.refused)")
  }

  @Test func nonUTF8PathIsRefused() throws {
    var bytes =
      Array("Package: x\nFilename: pool/".utf8) + [0xFF, 0xFE] + Array(".deb\nSize: 1\nSHA256: \(Self.hashA)\n".utf8)
    bytes += Array(("\n" + Self.stanza("good", "pool/g.deb")).utf8)
    let index = try AptIndexReader.read(bytes, kind: .packages).get()
    #expect(index.files.count == 1)
    #expect(index.refused.first?.reason.contains("not UTF-8") == true)
  }

  /// Paragraphs missing a field, or with one that is malformed, are refused with their line.
  @Test(arguments: [
    ("Package: x\nSize: 1\nSHA256: \(hashA)\n", "no Filename", 1),
    ("Package: x\nFilename: pool/x.deb\nSHA256: \(hashA)\n", "no Size", 1),
    ("Package: x\nFilename: pool/x.deb\nSize: 1\n", "no SHA256", 1),
    ("Package: x\nFilename: pool/x.deb\nSize: 1\nSHA256: \(hashA)\nSHA256: \(hashB)\n", "comes twice", 5),
    ("Package: x\nFilename: pool/x.deb\nSize: -1\nSHA256: \(hashA)\n", "Size", 3),
    ("Package: x\nFilename: pool/x.deb\nSize: 1\nSHA256: abc\n", "SHA256", 4),
    ("Package: x\nFilename: pool/x.deb\nSize: 1\nSHA256: \(hashA)\ngarbage line\n", "no field", 5),
    ("Package: x\nFilename: pool/x.deb\n pool/y.deb\nSize: 1\nSHA256: \(hashA)\n", "more than one line", 1),
  ])
  func refusesBrokenParagraphs(text: String, words: String, line: Int) throws {
    let index = try Self.read(Self.stanza("good", "pool/g.deb") + "\n" + text).get()
    #expect(Self.paths(index) == ["pool/g.deb"])
    #expect(index.refused.count == 1)
    #expect(index.refused.first?.reason.contains(words) == true, "\(index.refused)")
    #expect(index.refused.first?.line == line + 12)
  }

  @Test func conflictingParagraphsRefuseThePath() throws {
    let text =
      Self.stanza("a", "pool/x.deb") + Self.stanza("b", "pool/y.deb") + Self.stanza("a2", "pool/x.deb", size: 11)
      + Self.stanza("a3", "pool/x.deb") + Self.stanza("c", "pool/z.deb", sha256: Self.hashB)
      + Self.stanza("c2", "pool/z.deb", sha256: Self.hashA)
    let index = try Self.read(text).get()
    #expect(Self.paths(index) == ["pool/y.deb"])
    #expect(index.refused.count == 3)
    #expect(index.refused.allSatisfy { $0.reason.contains("different sizes or digests") })
  }

  @Test func readsSources() throws {
    let text = """
      Package: hello
      Binary: hello
      Version: 1.0-1
      Directory: pool/main/h/hello
      Files:
       0123456789abcdef0123456789abcdef 100 hello_1.0-1.dsc
      Checksums-Sha256:
       \(Self.hashA) 100 hello_1.0-1.dsc
       \(Self.hashB) 2000 hello_1.0.orig.tar.gz
       \(Self.hashA) 5 ../../../etc/passwd
       \(Self.hashA) 5 sub/dir.txt
       \(Self.hashA) 5

      Package: nodir
      Checksums-Sha256:
       \(Self.hashA) 1 a.dsc

      Package: escape
      Directory: ../outside
      Checksums-Sha256:
       \(Self.hashA) 1 a.dsc

      Package: nosums
      Directory: pool/main/n/nosums

      """
    let index = try Self.read(text, kind: .sources).get()
    #expect(Self.paths(index) == ["pool/main/h/hello/hello_1.0-1.dsc", "pool/main/h/hello/hello_1.0.orig.tar.gz"])
    #expect(index.files[1].size == 2000 && index.files[1].package == "hello")
    #expect(index.refused.count == 6, "\(index.refused)")
    let reasons = index.refused.map(\.reason).joined(separator: "\n")
    for words in ["'..'", "contains '/'", "2 words", "no Directory", "no Checksums-Sha256"] {
      #expect(reasons.contains(words), "\(words) in \(reasons)")
    }
  }

  @Test func limitsRefuseTheWholeIndex() {
    var limits = AptIndexReader.Limits()
    limits.maxStanzas = 2
    guard
      case .failure(let stanzas) = Self.read(
        String(repeating: Self.stanza("a", "pool/a.deb"), count: 3), limits: limits)
    else {
      Issue.record("more than maxStanzas accepted")
      return
    }
    #expect(stanzas.message.contains("more than 2 paragraphs"))
    limits = AptIndexReader.Limits()
    limits.maxBytes = 100
    guard
      case .failure(let bytes) = Self.read(String(repeating: Self.stanza("a", "pool/a.deb"), count: 3), limits: limits)
    else {
      Issue.record("more than maxBytes accepted")
      return
    }
    #expect(bytes.message.contains("longer than 100 bytes"))
    limits = AptIndexReader.Limits()
    limits.maxLineBytes = 50
    guard case .failure(let line) = Self.read("Package: " + String(repeating: "x", count: 60) + "\n", limits: limits)
    else {
      Issue.record("a line past maxLineBytes accepted")
      return
    }
    #expect(line.message.contains("longer than 50 bytes") && line.line == 1)
    limits = AptIndexReader.Limits()
    limits.maxFiles = 1
    guard
      case .failure(let files) = Self.read(
        Self.stanza("a", "pool/a.deb") + Self.stanza("b", "pool/b.deb"), limits: limits)
    else {
      Issue.record("more than maxFiles accepted")
      return
    }
    #expect(files.message.contains("more than 1 files"))
  }

  @Test func refusalsListedAreBounded() throws {
    var limits = AptIndexReader.Limits()
    limits.maxListedRefusals = 3
    let index = try Self.read(String(repeating: Self.stanza("evil", "../x.deb"), count: 10), limits: limits).get()
    #expect(index.refused.count == 3 && index.refusedCount == 10)
  }

  @Test func whiteSpaceLinesSeparateParagraphsAndCommentsAreSkipped() throws {
    let text =
      "Package: a\r\nFilename: pool/a.deb  \r\n# a comment\r\nSize: 1\r\nSHA256: \(Self.hashA)\r\n \t \r\n"
      + "Package: b\nFilename: pool/b.deb\nSize: 2\nSHA256: \(Self.hashB)"
    let index = try Self.read(text).get()
    #expect(Self.paths(index) == ["pool/a.deb", "pool/b.deb"])
    #expect(index.stanzas == 2)
  }
}
