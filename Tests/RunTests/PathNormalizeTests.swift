import Testing

@testable import BatchDLSupport

/// `FileAccess.normalize` gives a path back as it is when it is already normal (a fast path), and
/// otherwise what the part-by-part rule on bytes gives: checked against that rule on generated
/// paths (combining marks after a `/` among them).
@Suite struct PathNormalizeTests {
  /// The rule itself, part by part, on the bytes (a `/` followed by a combining mark is still a
  /// `/` to the kernel).
  static func reference(_ path: String) -> String {
    var parts: [String] = []
    for part in Array(path.utf8).split(separator: 0x2F).map({ String(decoding: $0, as: UTF8.self) }) {
      switch part {
      case ".": continue
      case "..": _ = parts.popLast()
      default: parts.append(part)
      }
    }
    return "/" + parts.joined(separator: "/")
  }

  @Test func generatedPathsNormalizeAsThePartByPartRuleSays() {
    let pieces = ["/", "a", "b", ".", "..", "...", ".a", "a.", "é", "e\u{301}", "/\u{301}", "//"]
    var generator = SystemRandomNumberGenerator()
    var seen = 0
    for length in 0..<7 {
      for _ in 0..<400 {
        let path = (0..<length).map { _ in pieces[Int.random(in: 0..<pieces.count, using: &generator)] }.joined()
        for candidate in [path, "/" + path] {
          #expect(FileAccess.normalize(candidate) == Self.reference(candidate), "\(candidate.debugDescription)")
          seen += 1
        }
      }
    }
    #expect(seen == 5_600)
  }

  @Test(arguments: [
    ("/", true), ("/a/b", true), ("/a/b/", false), ("a/b", false), ("/a//b", false), ("/a/./b", false),
    ("/a/../b", false), ("/a/.b/c..", true), ("/..", false), ("/.", false), ("", false), ("/...", true),
  ])
  func theFastPathKnowsANormalPath(_ path: String, _ normal: Bool) {
    #expect(FileAccess.isNormal(path) == normal)
    if normal { #expect(FileAccess.normalize(path) == path) }
  }
}
