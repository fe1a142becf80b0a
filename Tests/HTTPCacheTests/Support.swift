import Foundation
import TestSupport

@testable import BatchDL
@testable import BatchDLStore
@testable import BatchDLTransfer

/// The time every test starts at: Tue, 14 Nov 2023 22:13:20 GMT.
let start = Date(timeIntervalSince1970: 1_700_000_000)

/// `seconds` after `start`.
func at(_ seconds: TimeInterval) -> Date { start.addingTimeInterval(seconds) }

/// A response head with `status` and `fields` (names lower-cased, as the parser gives them).
func head(_ status: Int = 200, _ fields: [(String, String)] = []) -> ResponseHead {
  var head = ResponseHead()
  head.status = status
  head.reason = status == 200 ? "OK" : ""
  head.fields = fields.map { (name: $0.0.lowercased(), value: $0.1) }
  return head
}

/// The IMF-fixdate of `date`.
func httpDate(_ date: Date) -> String {
  let formatter = DateFormatter()
  formatter.locale = Locale(identifier: "en_US_POSIX")
  formatter.timeZone = TimeZone(identifier: "GMT")
  formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
  return formatter.string(from: date)
}

/// `count` bytes of `byte`.
func bytes(_ count: Int, _ byte: UInt8 = 0x61) -> [UInt8] { [UInt8](repeating: byte, count: count) }

/// A cache under `folder/cache`.
func makeCache(_ folder: TemporaryDirectory, memory: Int64 = 1 << 20, disk: Int64 = 1 << 20) -> HTTPCache {
  HTTPCache(folder: folder.path + "/cache", memory: memory, disk: disk)
}

/// Every regular file under `path`, recursively, with its contents.
func filesUnder(_ path: String) -> [(path: String, data: Data)] {
  guard let walker = FileManager.default.enumerator(atPath: path) else { return [] }
  var result: [(path: String, data: Data)] = []
  while let relative = walker.nextObject() as? String {
    let full = path + "/" + relative
    var isFolder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: full, isDirectory: &isFolder), !isFolder.boolValue,
      let data = FileManager.default.contents(atPath: full)
    else { continue }
    result.append((full, data))
  }
  return result
}

extension CacheDecision {
  /// `use`, `revalidate`, `fetch` or `missing`, for short expectations.
  var kind: String {
    switch self {
    case .useCached: return "use"
    case .revalidate: return "revalidate"
    case .fetch: return "fetch"
    case .missing: return "missing"
    }
  }

  /// The cached response of `.useCached` and `.revalidate`.
  var response: CachedResponse? {
    switch self {
    case .useCached(let response): return response
    case .revalidate(let response, _, _): return response
    case .fetch, .missing: return nil
    }
  }
}
