import BatchDLSupport
import BatchDLTransfer

/// The bucket and key prefix an `index:` URL of an `aws_sigv4` session names, and the URLs made
/// from it: the ListObjectsV2 pages and each object's URL.
///
/// Two forms are read: path-style, `http://HOST:PORT/BUCKET/PREFIX/` (S3-compatible stores, moto,
/// MinIO; also `https://s3.REGION.amazonaws.com/BUCKET/...`), and virtual-hosted,
/// `https://BUCKET.s3.REGION.amazonaws.com/PREFIX/`: a host under `amazonaws.com` with labels
/// before an `s3` or `s3-...` label.
package struct S3Bucket: Hashable, Sendable {
  package enum Style: Hashable, Sendable {
    /// The bucket is the URL's first path segment.
    case path
    /// The bucket is the host's first labels.
    case virtualHosted
  }

  /// `scheme://host[:port]`, the port only when not the scheme's default; no user-info.
  package var origin: String
  /// The bucket name, decoded.
  package var bucket: String
  package var style: Style
  /// The key prefix listed, decoded: empty (the whole bucket) or ending in `/`.
  package var prefix: [UInt8]

  /// Reads a bucket URL. A prefix without a trailing `/` gets one: an index lists a folder
  /// (`photos` would also list `photos2/`). A query or fragment is refused.
  package init(url: String) throws(S3ListingProblem) {
    let target: AWSSignature.Target
    do {
      target = try AWSSignature.target(of: url)
    } catch {
      throw S3ListingProblem("the S3 URL '\(ShownText.escaped(url, limit: 200))' cannot be read: \(error.message)")
    }
    guard !url.contains("?"), !url.contains("#") else {
      throw S3ListingProblem(
        "the S3 URL '\(ShownText.escaped(url, limit: 200))' has a query or fragment; an index names a bucket and a prefix only, as http://HOST/BUCKET/PREFIX/"
      )
    }
    let scheme = url.lowercased().hasPrefix("https://") ? "https" : "http"
    origin = "\(scheme)://\(target.host)"
    var segments = target.path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
      .map { Hex.percentDecoded(Array($0)) }
    if segments.first?.isEmpty == true { segments.removeFirst() }
    if let virtual = Self.virtualHostedBucket(host: target.host) {
      style = .virtualHosted
      bucket = virtual
    } else {
      guard let first = segments.first, !first.isEmpty else {
        throw S3ListingProblem(
          "the S3 URL '\(ShownText.escaped(url, limit: 200))' names no bucket: write http://HOST/BUCKET/PREFIX/ (path-style) or https://BUCKET.s3.REGION.amazonaws.com/PREFIX/"
        )
      }
      style = .path
      bucket = String(decoding: first, as: UTF8.self)
      segments.removeFirst()
    }
    var joined = Array(segments.joined(separator: [UInt8(ascii: "/")]))
    if !joined.isEmpty && joined.last != UInt8(ascii: "/") { joined.append(UInt8(ascii: "/")) }
    prefix = joined
  }

  /// The bucket of a virtual-hosted host (`my.bucket.s3.eu-west-1.amazonaws.com` -> `my.bucket`),
  /// nil for any other host.
  static func virtualHostedBucket(host: String) -> String? {
    var name = host.lowercased()
    if let colon = name.lastIndex(of: ":"), !name[colon...].contains("]") { name = String(name[..<colon]) }
    guard name.hasSuffix(".amazonaws.com") else { return nil }
    let labels = name.split(separator: ".", omittingEmptySubsequences: false)
    guard let s3 = labels.firstIndex(where: { $0 == "s3" || $0.hasPrefix("s3-") }), s3 > 0 else { return nil }
    return labels[..<s3].joined(separator: ".")
  }

  /// The URL of one ListObjectsV2 page: `list-type=2`, the prefix (when not empty), and
  /// `encoding-type=url` (so that a key with a character XML cannot hold is refused alone, not the
  /// whole page); `continuationToken` (the previous page's `nextContinuationToken`) for every page
  /// after the first. Every value is percent-encoded as the signature encodes it (`/` as `%2F`).
  package func listURL(continuationToken: String? = nil) -> String {
    var url = origin + (style == .path ? "/" + AWSSignature.encode(Array(bucket.utf8)) : "/") + "?list-type=2"
    if !prefix.isEmpty { url += "&prefix=" + AWSSignature.encode(prefix) }
    url += "&encoding-type=url"
    if let continuationToken { url += "&continuation-token=" + AWSSignature.encode(Array(continuationToken.utf8)) }
    return url
  }

  /// What becomes of one listed key.
  package enum KeyMapping: Hashable, Sendable {
    /// An object to fetch from `url` into `relativePath` (below the index's `to:`; the key without
    /// the prefix, bytes).
    case object(url: String, relativePath: [UInt8])
    /// A key ending in `/` (or the prefix itself): a folder marker, skipped silently.
    case folderMarker
    /// A key that would escape the destination or cannot be a path; `reason` says why (the key
    /// escaped for display).
    case refused(reason: String)
  }

  /// The object URL (each key segment percent-encoded) and the relative path of `key`, or why the
  /// key is refused: not under the prefix, an empty, `.` or `..` segment, a leading `/`, NUL or
  /// another control character, a segment longer than 255 bytes.
  package func map(key: [UInt8]) -> KeyMapping {
    let shown = "'\(ShownText.escaped(String(decoding: key, as: UTF8.self), limit: 200))'"
    guard key.starts(with: prefix) else {
      return .refused(reason: "the key \(shown) is not under the listed prefix")
    }
    let rest = Array(key[prefix.count...])
    if rest.isEmpty || rest.last == UInt8(ascii: "/") {
      if !rest.contains(where: { $0 < 0x20 || $0 == 0x7F }) { return .folderMarker }
    }
    if let control = rest.first(where: { $0 < 0x20 || $0 == 0x7F }) {
      return .refused(
        reason:
          "the key \(shown) holds \(control == 0 ? "a NUL byte" : "a control character"); it cannot be a file name")
    }
    if rest.first == UInt8(ascii: "/") {
      return .refused(reason: "the key \(shown) has '/' right after the prefix: it would be an absolute path")
    }
    let segments = rest.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
    for segment in segments {
      if segment.isEmpty {
        return .refused(reason: "the key \(shown) has an empty segment ('//'); it cannot be a relative path")
      }
      if segment.elementsEqual([UInt8(ascii: ".")]) || segment.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) {
        return .refused(reason: "the key \(shown) has a '.' or '..' segment: it would leave its folder")
      }
      if segment.count > 255 {
        return .refused(reason: "the key \(shown) has a segment longer than 255 bytes; no file name can hold it")
      }
    }
    let encodedKey = Array(key).split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
      .map { AWSSignature.encode(Array($0)) }.joined(separator: "/")
    let base = origin + (style == .path ? "/" + AWSSignature.encode(Array(bucket.utf8)) : "")
    return .object(url: base + "/" + encodedKey, relativePath: rest)
  }
}
