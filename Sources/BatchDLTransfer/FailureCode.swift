import Foundation

/// The stable code of a failed task, as reports, events and the state folder write it
/// (`http-404`, `timeout`, `connect`...); docs/run.md lists them all.
public enum FailureCode: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
  /// The final response had this status (after redirects): `http-NNN`.
  case http(Int)
  /// Any other libcurl failure, numbered as in libcurl's `CURLcode`: `curl-N`.
  case curl(Int)
  case connect, dns, timeout, network, incomplete
  case rangeMismatch, resumeRestart, badResponse, tls, tooManyRedirects, `protocol`
  case write, read, diskFull, url, cancelled, `internal`
  case bodyTooLarge, unsafePath, dependency, policy, checksumMismatch, sizeMismatch, state, cacheMiss
  /// Every source of a download (its URL and mirrors) failed; the error lists each one's.
  case allSourcesFailed
  /// A document the task's entry depends on (a Metalink document given by URL) could not be
  /// fetched or read.
  case descriptor
  /// A document's file whose destination another task writes, or needs as a folder.
  case conflict
  /// The response is longer than the task's `max_size` (declared, or as it streamed): the file is
  /// too large, wherever it comes from, and nothing of it is kept. Not `body-too-large`, which is
  /// a data task's body outgrowing what batchdl keeps in memory.
  case tooLarge
  /// A download covered by `checksums:` whose file has no entry there (and no digest of its own).
  case checksumMissing
  /// The checksum file the download is checked with has a bad, missing or unknown-key signature.
  case signature
  /// The proxy refused or could not carry the request (a `CONNECT` answered with an error, a
  /// SOCKS failure); `status` holds an HTTP proxy's answer.
  case proxy

  /// Every code without a number (`http-NNN` and `curl-N` excepted).
  public static let named: [FailureCode] = [
    .connect, .dns, .timeout, .network, .incomplete, .rangeMismatch, .resumeRestart, .badResponse, .tls,
    .tooManyRedirects, .protocol, .write, .read, .diskFull, .url, .cancelled, .internal, .bodyTooLarge,
    .unsafePath, .dependency, .policy, .checksumMismatch, .sizeMismatch, .state, .cacheMiss, .allSourcesFailed,
    .descriptor, .conflict, .checksumMissing, .signature, .tooLarge, .proxy,
  ]

  public var rawValue: String {
    switch self {
    case .http(let status): "http-\(status)"
    case .curl(let code): "curl-\(code)"
    case .connect: "connect"
    case .dns: "dns"
    case .timeout: "timeout"
    case .network: "network"
    case .incomplete: "incomplete"
    case .rangeMismatch: "range-mismatch"
    case .resumeRestart: "resume-restart"
    case .badResponse: "bad-response"
    case .tls: "tls"
    case .tooManyRedirects: "too-many-redirects"
    case .protocol: "protocol"
    case .write: "write"
    case .read: "read"
    case .diskFull: "disk-full"
    case .url: "url"
    case .cancelled: "cancelled"
    case .internal: "internal"
    case .bodyTooLarge: "body-too-large"
    case .unsafePath: "unsafe-path"
    case .dependency: "dependency"
    case .policy: "policy"
    case .checksumMismatch: "checksum-mismatch"
    case .sizeMismatch: "size-mismatch"
    case .state: "state"
    case .cacheMiss: "cache-miss"
    case .allSourcesFailed: "all-sources-failed"
    case .descriptor: "descriptor"
    case .conflict: "conflict"
    case .tooLarge: "too-large"
    case .checksumMissing: "checksum-missing"
    case .signature: "signature"
    case .proxy: "proxy"
    }
  }

  /// The code a report or the state folder wrote; nil for a string no code writes.
  public init?(rawValue: String) {
    if let code = Self.numbered(rawValue, prefix: "http-") {
      self = .http(code)
    } else if let code = Self.numbered(rawValue, prefix: "curl-") {
      self = .curl(code)
    } else if let code = Self.named.first(where: { $0.rawValue == rawValue }) {
      self = code
    } else {
      return nil
    }
  }

  public var description: String { rawValue }

  /// Whether a task that failed with this code leaves nothing behind: no partial file, no
  /// checkpoint for a later run to continue (a file past `max_size` is not wanted in part either).
  package var discardsPartial: Bool { self == .tooLarge }

  /// The number after `prefix`, only when writing it back gives `text` again (no `http-007`).
  private static func numbered(_ text: String, prefix: String) -> Int? {
    guard text.hasPrefix(prefix), let number = Int(text.dropFirst(prefix.count)),
      prefix + String(number) == text
    else { return nil }
    return number
  }
}

extension TransferFailure {
  /// A system call on a file failed with `code` while batchdl tried to `what`: `disk-full` for no
  /// space or quota left (with what to do), else `write`. The one errno mapper of the files a
  /// run writes (partial files, segments, placing, copies).
  package static func system(errno code: Int32, doing what: String) -> TransferFailure {
    let reason = String(cString: strerror(code))
    if code == ENOSPC || code == EDQUOT {
      return TransferFailure(code: .diskFull, message: "cannot \(what): \(reason); free some space and run again")
    }
    return TransferFailure(code: .write, message: "cannot \(what): \(reason)")
  }
}
