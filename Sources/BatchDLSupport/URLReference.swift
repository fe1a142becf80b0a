import CCurl

/// Resolves a reference (a link's `href`) against a base URL with libcurl's URL API (RFC 3986,
/// section 5.2: relative paths, `../`, `//host/`, absolute URLs), with one reusable `CURLU`
/// handle. Not thread-safe.
package final class URLReferenceResolver {
  private let handle: OpaquePointer

  package init() {
    // curl_url() only fails when out of memory.
    guard let handle = curl_url() else { fatalError("libcurl could not allocate a URL handle") }
    self.handle = handle
  }

  deinit {
    curl_url_cleanup(handle)
  }

  /// `reference` resolved against `base`, as libcurl writes the result; nil when libcurl refuses
  /// either (a scheme it does not know, `javascript:`, a malformed host).
  package func resolve(_ reference: String, against base: String) -> String? {
    // Setting a URL on a handle that holds one resolves it against the one held.
    _ = curl_url_set(handle, CURLUPART_URL, nil, 0)
    guard curl_url_set(handle, CURLUPART_URL, base, 0) == CURLUE_OK,
      curl_url_set(handle, CURLUPART_URL, reference, 0) == CURLUE_OK
    else { return nil }
    var value: UnsafeMutablePointer<CChar>?
    guard curl_url_get(handle, CURLUPART_URL, &value, 0) == CURLUE_OK, let value else { return nil }
    defer { curl_free(value) }
    return String(cString: value)
  }
}
