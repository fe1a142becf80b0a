import BatchDLSupport
import Foundation

#if canImport(FoundationXML)
  import FoundationXML
#endif

/// What each element's text means, and which files of the document are kept.
extension MetalinkReader {
  package func endSize(_ captured: String) {
    let trimmed = captured.trimmingCharacters(in: .whitespacesAndNewlines)
    guard let size = Int64(trimmed), size >= 0, size <= Limits.bytes, trimmed.allSatisfy(\.isASCII) else {
      error(textMark, "<size> must be a whole number of bytes from 0 to \(Limits.bytes), found \(quoted(trimmed))")
      return
    }
    if let earlier = file?.size, earlier != size {
      error(textMark, "a second <size> (\(size)) disagrees with the first (\(earlier))")
      return
    }
    file?.size = size
  }

  package func endURL(_ captured: String) {
    guard let count = file.map({ $0.urlCount + 1 }) else { return }
    file?.urlCount = count
    if count > Metalink.maxURLsPerFile {
      if count == Metalink.maxURLsPerFile + 1 {
        diagnostics.warning(
          textMark, "file \(quoted(file?.name)) has more than \(Metalink.maxURLsPerFile) <url>s: the rest are ignored")
      }
      return
    }
    let url = captured.trimmingCharacters(in: .whitespacesAndNewlines)
    let shown = ShownText.escaped(Redactor.stripUserInfo(url), limit: 200)
    let lowered = url.lowercased()
    let type = textAttributes["type"]?.lowercased()
    if version == .v3, let type, type != "http" && type != "https" {
      diagnostics.warning(
        textMark,
        "<url type=\"\(ShownText.escaped(type, limit: 40))\"> '\(shown)' is ignored: batchdl fetches http and https URLs only"
      )
      return
    }
    guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
      let scheme = url.range(of: ":").map { ShownText.escaped(url[..<$0.lowerBound], limit: 40) + ":" } ?? "not a URL"
      diagnostics.warning(
        textMark, "<url> '\(shown)' is ignored (\(scheme)): batchdl fetches http and https URLs only")
      return
    }
    if case .failure(let problem) = Metalink.normalizer.withLock({ $0.normalize(url) }) {
      diagnostics.warning(textMark, "<url> is ignored: \(problem.description)")
      return
    }
    let attribute = version == .v4 ? "priority" : "preference"
    var priority: Int?
    if let written = textAttributes[attribute] {
      let range = version == .v4 ? 1...999_999 : 0...100
      if let value = Int(written.trimmingSpaces), range.contains(value) {
        priority = value
      } else {
        diagnostics.warning(
          textMark,
          "<url \(attribute)=\"\(ShownText.escaped(written, limit: 40))\"> is not a whole number from \(range.lowerBound) to \(range.upperBound); the URL is tried after those with one"
        )
      }
    }
    let source = MetalinkSource(url: url, priority: priority, location: textAttributes["location"], mark: textMark)
    urlOrder += 1
    file?.sources.append((source, urlOrder))
  }

  package func endHash(_ captured: String) {
    let typeText = textAttributes["type"] ?? ""
    guard let algorithm = DigestAlgorithm(named: typeText) else { return }  // other types are not used
    switch ExpectedDigest.parse(captured, algorithm: algorithm) {
    case .success(let digest):
      if let earlier = file?.hashes.first(where: { $0.algorithm == algorithm }) {
        if earlier != digest { error(textMark, "a second \(algorithm.rawValue) <hash> disagrees with the first") }
        return
      }
      file?.hashes.append(digest)
    case .failure(let problem):
      error(textMark, "bad <hash type=\"\(ShownText.escaped(typeText, limit: 40))\">: \(problem.message)")
    }
  }

  package func endPieceHash(_ captured: String) {
    // Changed in place: a copy of the draft would copy its hashes for every piece.
    guard let broken = pieces?.broken, !broken, let algorithm = pieces?.algorithm, let length = pieces?.length,
      let mark = pieces?.mark
    else { return }
    let count = pieces?.hashes.count ?? 0
    if count >= Metalink.maxPieces {
      error(mark, "<pieces> lists more than \(Metalink.maxPieces) hashes, the most batchdl reads")
      pieces?.broken = true
      return
    }
    if length < Metalink.minPieceLength && count >= Metalink.maxSmallPieces {
      error(
        mark,
        "<pieces length=\"\(length)\"> lists more than \(Metalink.maxSmallPieces) pieces shorter than \(Metalink.minPieceLength) bytes: pieces that short are for a small file only"
      )
      pieces?.broken = true
      return
    }
    switch ExpectedDigest.parse(captured, algorithm: algorithm) {
    case .success(let digest):
      pieces?.hashes.append(digest.hex)
      pieces?.indices.append(textAttributes["piece"].map { Int($0.trimmingSpaces) ?? -1 })
    case .failure(let problem):
      error(textMark, "bad piece <hash>: \(problem.message)")
      pieces?.broken = true
    }
  }

  package func endPieces() {
    guard let draft = pieces else { return }
    pieces = nil
    guard !draft.broken, let length = draft.length else { return }
    guard let algorithm = draft.algorithm else {
      diagnostics.warning(
        draft.mark,
        "<pieces type=\"\(ShownText.escaped(draft.typeText, limit: 40))\"> is ignored: batchdl checks sha-256, sha-512, sha-1 and md5"
      )
      return
    }
    var hashes = draft.hashes
    if draft.indices.contains(where: { $0 != nil }) {
      // Metalink 3 numbers its pieces: every number from 0 once, in any order.
      let numbered = zip(draft.indices, draft.hashes).map { (index: $0 ?? -1, hash: $1) }
      let sorted = numbered.sorted { $0.index < $1.index }
      guard sorted.enumerated().allSatisfy({ $0.offset == $0.element.index }) else {
        error(draft.mark, "the piece numbers of <pieces> must be 0, 1, 2... each once")
        return
      }
      hashes = sorted.map(\.hash)
    }
    let result = MetalinkPieces(length: length, algorithm: algorithm, hashes: hashes, mark: draft.mark)
    file?.pieces.append(result)
  }

  package func endFile() {
    guard let draft = file else { return }
    file = nil
    let mark = draft.mark
    var name = ""
    func leaveOut(_ message: String, unsafeName: Bool = false) {
      leftOut.append(LeftOutFile(name: draft.name, mark: mark, unsafeName: unsafeName, message: message))
    }
    switch Self.checkName(draft.name) {
    case .success(let value): name = value.path
    case .failure(let problem):
      error(mark, problem.message + "; this file is left out")
      leaveOut(problem.message, unsafeName: draft.name?.isEmpty == false)
      return
    }
    let shown = "'\(ShownText.escaped(name, limit: 200))'"
    let key = ByteString(name)
    if let first = names[key] {
      error(mark, "file \(shown) is listed twice (first at line \(first.line)); the second is left out")
      leaveOut("file \(shown) is listed twice (first at line \(first.line))")
      return
    }
    names[key] = mark
    if draft.broken {
      diagnostics.warning(mark, "file \(shown) is left out because of the errors above")
      leaveOut(draft.problem ?? "file \(shown) has errors")
      return
    }
    if let size = draft.size {
      for pieces in draft.pieces where Int64(pieces.hashes.count) != pieces.count(forSize: size) {
        error(
          pieces.mark,
          "<pieces> of \(shown) lists \(pieces.hashes.count) hashes, but \(size) bytes in pieces of \(pieces.length) make \(pieces.count(forSize: size)); this file is left out"
        )
        leaveOut("<pieces> of \(shown) do not fit its <size>")
        return
      }
    }
    let sources = draft.sources.sorted { lhs, rhs in
      let left = rank(lhs.source.priority)
      let right = rank(rhs.source.priority)
      return left != right ? left < right : lhs.order < rhs.order
    }.map(\.source)
    guard !sources.isEmpty else {
      error(mark, "file \(shown) has no http or https <url>; this file is left out")
      leaveOut("file \(shown) has no http or https <url>")
      return
    }
    let hashes = draft.hashes.sorted { $0.algorithm < $1.algorithm }
    let pieces = draft.pieces.min { $0.algorithm < $1.algorithm }
    if let best = hashes.first, !best.algorithm.isStrong {
      diagnostics.warning(
        mark,
        "file \(shown) has only a \(best.algorithm.rawValue) hash, which is weak: it is checked, but cannot prove the file was not replaced; ask the publisher for sha-256"
      )
    } else if hashes.isEmpty, let pieces, !pieces.algorithm.isStrong {
      // Piece digests are then all that checks the file.
      diagnostics.warning(
        mark,
        "file \(shown) has only \(pieces.algorithm.rawValue) piece hashes, which are weak: they are checked, but cannot prove the file was not replaced; ask the publisher for sha-256"
      )
    }
    files.append(
      MetalinkFile(name: name, mark: mark, size: draft.size, sources: sources, hashes: hashes, pieces: pieces))
  }

  /// Sort key of a source: the lowest first.
  package func rank(_ priority: Int?) -> Int {
    guard let priority else { return Int.max }
    return version == .v3 ? 100 - priority : priority
  }

  /// A file name as a relative path that stays inside its folder, normalized.
  package static func checkName(_ name: String?) -> Result<RelativeDestination, MetalinkProblem> {
    guard let name, !name.isEmpty else { return .failure(MetalinkProblem("<file> has no name (name=\"...\")")) }
    let shown = ShownText.escaped(name)
    if name.hasPrefix("/") {
      return .failure(MetalinkProblem("file name '\(shown)' is absolute; Metalink names are relative to 'to:'"))
    }
    if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
      return .failure(MetalinkProblem("file name '\(shown)' contains a control character"))
    }
    if name.split(separator: "/", omittingEmptySubsequences: false).contains("..") {
      return .failure(MetalinkProblem("file name '\(shown)' contains '..'; it could escape 'to:'"))
    }
    if name.hasSuffix("/") { return .failure(MetalinkProblem("file name '\(shown)' names a folder, not a file")) }
    switch RelativeDestination.parse(name) {
    case .success(let value) where !value.isFolder: return .success(value)
    case .success: return .failure(MetalinkProblem("file name '\(shown)' names the folder itself, not a file"))
    case .failure(let problem): return .failure(MetalinkProblem("file name '\(shown)' \(problem.reason.message)"))
    }
  }

  /// A short description of a libxml2 error code (as `XMLParser` reports it).
  package static func describe(code: Int) -> String {
    switch code {
    case 1: return "libxml2 stopped at one of its limits (a line or a text of more than 10MB, or nesting too deep)"
    case 4: return "the document is empty"
    case 5: return "the document ends before its elements are closed"
    case 9: return "an invalid character"
    case 26: return "an undeclared entity (&name;); write &amp; for '&'"
    case 38, 39, 40, 41: return "a bad attribute (write name=\"value\")"
    case 64: return "an XML declaration (<?xml ...?>) that is not at the very start"
    case 73: return "a '>' is missing"
    case 76: return "a closing tag does not match the element it closes"
    case 85: return "text after the closing </metalink>, or an element left open"
    case 89: return "entities that refer to each other in a loop, or expand too much"
    default: return "libxml2 error \(code)"
    }
  }
}
