// libFuzzer harness for the manifest layer: what `batchdl validate` and `batchdl plan` do with a
// manifest and its list file, fed arbitrary bytes. Built only by scripts/fuzz (see docs/design.md).
//
// An input is a manifest, optionally followed by a line `#--list--` and the bytes of `list.txt`
// (which the manifest names as `list: list.txt`). A crash, a trap, a timeout or an out-of-memory
// under libFuzzer's -timeout and -rss_limit_mb is a finding.

import BatchDL
import BatchDLManifest
import BatchDLPlan

#if canImport(Glibc)
  import Glibc
#endif

/// A folder of its own for the manifest's path and its list file.
private let folder: String = {
  var template = Array("/tmp/batchdl-fuzz-XXXXXX".utf8CString)
  let made = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.flatMap { mkdtemp($0) } }
  guard made != nil else { fatalError("cannot create a folder under /tmp") }
  return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}()

/// What `${VAR}` expands from.
private let environment = [
  "TOKEN": "fuzz-token-value", "HOME": "/home/fuzz", "EMPTY": "", "USER": "fuzz", "DIR": "out",
]

private let separator = Array("\n#--list--\n".utf8)

/// Where `separator` starts in `bytes`, if it does.
private func split(_ bytes: [UInt8]) -> (manifest: [UInt8], list: [UInt8]?) {
  guard bytes.count >= separator.count else { return (bytes, nil) }
  for start in 0...(bytes.count - separator.count) where bytes[start] == separator[0] {
    if bytes[start..<(start + separator.count)].elementsEqual(separator) {
      return (Array(bytes[..<start]), Array(bytes[(start + separator.count)...]))
    }
  }
  return (bytes, nil)
}

private func write(_ bytes: [UInt8], to path: String) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
  guard fd >= 0 else { fatalError("cannot write \(path)") }
  defer { close(fd) }
  var offset = 0
  while offset < bytes.count {
    let count = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { fatalError("cannot write \(path)") }
    offset += count
  }
}

/// Discards what the plan listing prints.
private struct Sink: TextOutputStream {
  var count = 0
  mutating func write(_ string: String) { count += string.utf8.count }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  let (manifestBytes, list) = split(bytes)
  let listPath = folder + "/list.txt"
  write(list ?? [], to: listPath)
  let path = folder + "/manifest.yaml"
  let (manifest, diagnostics) = ManifestLoader.read(manifestBytes, path: path, environment: environment)
  var sink = Sink()
  for diagnostic in diagnostics { sink.write(diagnostic.description) }
  guard let manifest else { return 0 }
  do {
    let plan = try Planner().plan(manifest, warnings: diagnostics)
    let listing = PlanListing(plan: plan, shardCount: 3)
    listing.writeText(to: &sink)
    listing.writeJSON(to: &sink)
  } catch {
    for diagnostic in error.diagnostics { sink.write(diagnostic.description) }
  }
  return 0
}
