import CCurl

/// A libcurl call that failed while setting a transfer up: a programming or resource error, with
/// libcurl's own words.
public struct CurlSetupError: Error, CustomStringConvertible {
  public var message: String
  public var description: String { message }
}

/// One-time process-wide libcurl initialisation.
package enum CurlGlobal {
  package static let initialised: Bool = ccurl_global_init() == CURLE_OK

  /// The libcurl version string (`7.88.1`).
  package static var version: String {
    ccurl_version().map { String(cString: $0) } ?? "unknown"
  }
}

/// An easy handle: one transfer's libcurl state, freed in `deinit`, with the header lists and
/// strings it points to kept alive as long as it.
package final class EasyHandle {
  package let raw: UnsafeMutableRawPointer
  private var lists: [UnsafeMutablePointer<curl_slist>] = []
  private var mime: OpaquePointer?
  package let errorBuffer: UnsafeMutablePointer<CChar>
  /// The size of libcurl's receive buffer for this handle, when it was last set (0: libcurl's default).
  private var receiveBuffer = 0

  /// `receiveBuffer`: the bytes libcurl reads at a time (`CURLOPT_BUFFERSIZE`), nil for its default.
  package init(receiveBuffer: Int? = nil) throws(CurlSetupError) {
    _ = CurlGlobal.initialised
    guard let raw = curl_easy_init() else {
      throw CurlSetupError(message: "libcurl could not create a transfer (out of memory)")
    }
    self.raw = raw
    errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    ccurl_easy_setopt_pointer(raw, CURLOPT_ERRORBUFFER, errorBuffer)
    if let receiveBuffer {
      try set(CURLOPT_BUFFERSIZE, receiveBuffer)
      self.receiveBuffer = receiveBuffer
    }
  }

  deinit {
    curl_easy_cleanup(raw)
    for list in lists { curl_slist_free_all(list) }
    if let mime { curl_mime_free(mime) }
    errorBuffer.deallocate()
  }

  /// Makes the handle as new for another transfer of the same session: its options, header lists
  /// and form go, and it leaves its share; libcurl keeps the rest (connections, caches).
  package func reset() {
    ccurl_easy_setopt_pointer(raw, CURLOPT_SHARE, nil)
    curl_easy_reset(raw)
    for list in lists { curl_slist_free_all(list) }
    lists.removeAll()
    if let mime {
      curl_mime_free(mime)
      self.mime = nil
    }
    errorBuffer[0] = 0
    ccurl_easy_setopt_pointer(raw, CURLOPT_ERRORBUFFER, errorBuffer)
  }

  /// Whether a handle made as new by `reset()` can take another transfer reading `bytes` at a
  /// time, to a host that answered over HTTP/2 when `multiplexed`.
  ///
  /// libcurl 7.88 frees a handle's receive buffer only when a transfer ends with its connection
  /// unused: after a stream of an HTTP/2 connection that carries others, or a failure before
  /// connecting (DNS), it keeps the buffer and refuses `CURLOPT_BUFFERSIZE`, and the size it reads
  /// at a time is back at its default, 16 KiB, over the buffer it kept. That is safe when the
  /// buffer kept is at least that large, and costs nothing over HTTP/2, where libcurl reads the
  /// socket into a buffer of the connection's and hands each stream at most a frame (16 KiB) at a
  /// time: such a handle takes a transfer to a multiplexed host. Else it is dropped, for a new one.
  package func accepts(receiveBuffer bytes: Int, multiplexed: Bool) -> Bool {
    if ccurl_easy_setopt_long(raw, CURLOPT_BUFFERSIZE, bytes) == CURLE_OK {
      receiveBuffer = bytes
      return true
    }
    return multiplexed && receiveBuffer >= Self.defaultReceiveBuffer
  }

  /// libcurl's receive buffer when none is set (`CURL_MAX_WRITE_SIZE`).
  package static let defaultReceiveBuffer = 16 << 10

  /// libcurl's detailed message for the last failure, or its generic text for `code`.
  package func message(for code: CURLcode) -> String {
    let detail = String(cString: errorBuffer)
    return detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
  }

  /// `what` is only put into words when the call failed: transfers set dozens of options each.
  private func check(_ code: CURLcode, _ what: @autoclosure () -> String) throws(CurlSetupError) {
    guard code == CURLE_OK else {
      throw CurlSetupError(message: "libcurl refused \(what()): \(String(cString: curl_easy_strerror(code)))")
    }
  }

  package func set(_ option: CURLoption, _ value: Int) throws(CurlSetupError) {
    try check(ccurl_easy_setopt_long(raw, option, value), "option \(option.rawValue)")
  }

  package func set(_ option: CURLoption, offset value: Int64) throws(CurlSetupError) {
    try check(ccurl_easy_setopt_off(raw, option, curl_off_t(value)), "option \(option.rawValue)")
  }

  package func set(_ option: CURLoption, _ value: String) throws(CurlSetupError) {
    try check(ccurl_easy_setopt_string(raw, option, value), "option \(option.rawValue)")
  }

  package func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(CurlSetupError) {
    try check(ccurl_easy_setopt_pointer(raw, option, value), "option \(option.rawValue)")
  }

  /// Sets a header list (or any slist option); the list lives as long as the handle.
  package func set(_ option: CURLoption, list values: [String]) throws(CurlSetupError) {
    var list: UnsafeMutablePointer<curl_slist>?
    for value in values {
      guard let appended = curl_slist_append(list, value) else {
        if let list { curl_slist_free_all(list) }
        throw CurlSetupError(message: "libcurl could not build a header list (out of memory)")
      }
      list = appended
    }
    guard let list else { return }
    lists.append(list)
    try check(ccurl_easy_setopt_slist(raw, option, list), "option \(option.rawValue)")
  }

  /// Allows http and https only, for the transfer and the redirects it follows.
  package func allowHTTPOnly() throws(CurlSetupError) {
    try check(ccurl_easy_allow_http_only(raw), "the allowed protocols")
  }

  package func setCallback(_ option: CURLoption, _ callback: ccurl_data_callback) throws(CurlSetupError) {
    try check(ccurl_easy_setopt_data_callback(raw, option, callback), "callback \(option.rawValue)")
  }

  package func setProgressCallback(_ callback: ccurl_xferinfo_callback) throws(CurlSetupError) {
    try check(ccurl_easy_setopt_xferinfo_callback(raw, callback), "the progress callback")
  }

  package func setSeekCallback(_ callback: ccurl_seek_callback) throws(CurlSetupError) {
    try check(ccurl_easy_setopt_seek_callback(raw, callback), "the seek callback")
  }

  /// A multipart form: text fields, and files read by libcurl as it sends them.
  package func setForm(_ fields: [(name: String, value: String, file: String?)]) throws(CurlSetupError) {
    guard let form = curl_mime_init(raw) else { throw CurlSetupError(message: "libcurl could not create a form") }
    mime = form
    for field in fields {
      guard let part = curl_mime_addpart(form) else {
        throw CurlSetupError(message: "libcurl could not add a form field")
      }
      try check(curl_mime_name(part, field.name), "the form field name \(field.name)")
      if let file = field.file {
        try check(curl_mime_filedata(part, file), "the form file \(file)")
      } else {
        try check(curl_mime_data(part, field.value, field.value.utf8.count), "the form field \(field.name)")
      }
    }
    try check(ccurl_easy_setopt_mime(raw, form), "the form")
  }

  package func info(_ info: CURLINFO) -> Int {
    var value = 0
    _ = ccurl_easy_getinfo_long(raw, info, &value)
    return value
  }

  package func info(offset info: CURLINFO) -> Int64 {
    var value: curl_off_t = 0
    _ = ccurl_easy_getinfo_off(raw, info, &value)
    return Int64(value)
  }

  package func info(string info: CURLINFO) -> String? {
    var value: UnsafePointer<CChar>?
    guard ccurl_easy_getinfo_string(raw, info, &value) == CURLE_OK, let value else { return nil }
    return String(cString: value)
  }

  /// How many cookies the handle's cookie store holds (its share's, when it has one); nil when
  /// libcurl cannot tell.
  package func cookieCount() -> Int? {
    var list: UnsafeMutablePointer<curl_slist>?
    guard ccurl_easy_getinfo_slist(raw, CURLINFO_COOKIELIST, &list) == CURLE_OK else { return nil }
    defer { curl_slist_free_all(list) }
    var count = 0
    var node = list
    while let current = node {
      count += 1
      node = current.pointee.next
    }
    return count
  }
}

extension EasyHandle {
  /// The session's HTTP version and TLS settings, for a request of `url`; the one place that sets
  /// them, for transfers and for descriptors alike.
  package func setSecurity(
    url: String, httpVersion: HTTPVersion, tls: TLSSettings, insecure: Bool
  ) throws(CurlSetupError) {
    let https = url.utf8.starts(with: "https:".utf8)
    switch httpVersion {
    case .auto: try set(CURLOPT_HTTP_VERSION, ccurl_http_version_2tls)
    case .http1_1: try set(CURLOPT_HTTP_VERSION, ccurl_http_version_1_1)
    case .http2: try set(CURLOPT_HTTP_VERSION, https ? ccurl_http_version_2 : ccurl_http_version_2_prior_knowledge)
    }
    // Where HTTP/2 may be spoken, a request waits for a connection being set up to its host to
    // say whether it multiplexes, rather than open one more (as curl --parallel does). Not where
    // it cannot be, where it would only hold each new connection back until the last connected.
    if httpVersion == .http2 || (https && httpVersion == .auto) { try set(CURLOPT_PIPEWAIT, 1) }
    if insecure {
      try set(CURLOPT_SSL_VERIFYPEER, 0)
      try set(CURLOPT_SSL_VERIFYHOST, 0)
    }
    guard !tls.isEmpty else { return }
    // Either replaces the system's store: libcurl's default bundle (CAINFO) and folder (CAPATH,
    // /etc/ssl/certs on Debian) are not trusted beside them.
    if tls.caFile != nil || tls.caPath != nil {
      if let file = tls.caFile { try set(CURLOPT_CAINFO, file) } else { try set(CURLOPT_CAINFO, pointer: nil) }
      if let folder = tls.caPath { try set(CURLOPT_CAPATH, folder) } else { try set(CURLOPT_CAPATH, pointer: nil) }
    }
    if let certificate = tls.clientCert { try set(CURLOPT_SSLCERT, certificate) }
    if let key = tls.clientKey { try set(CURLOPT_SSLKEY, key) }
    if let password = tls.keyPassword { try set(CURLOPT_KEYPASSWD, password) }
    if let pin = tls.pinnedPublicKey { try set(CURLOPT_PINNEDPUBLICKEY, pin) }
    switch tls.minVersion {
    case .tls1_2: try set(CURLOPT_SSLVERSION, ccurl_sslversion_tls1_2)
    case .tls1_3: try set(CURLOPT_SSLVERSION, ccurl_sslversion_tls1_3)
    case nil: break
    }
  }
}

/// The multi handle that runs every transfer of a run on one thread.
package final class MultiHandle {
  package let raw: UnsafeMutableRawPointer

  package init() throws(CurlSetupError) {
    _ = CurlGlobal.initialised
    guard let raw = curl_multi_init() else { throw CurlSetupError(message: "libcurl could not create a multi handle") }
    self.raw = raw
  }

  deinit {
    curl_multi_cleanup(raw)
  }

  private func check(_ code: CURLMcode, _ what: @autoclosure () -> String) throws(CurlSetupError) {
    guard code == CURLM_OK else {
      throw CurlSetupError(message: "libcurl failed to \(what()): \(String(cString: curl_multi_strerror(code)))")
    }
  }

  package func set(_ option: CURLMoption, _ value: Int) throws(CurlSetupError) {
    try check(ccurl_multi_setopt_long(raw, option, value), "set multi option \(option.rawValue)")
  }

  package func add(_ easy: EasyHandle) throws(CurlSetupError) {
    try check(curl_multi_add_handle(raw, easy.raw), "start a transfer")
  }

  package func remove(_ easy: EasyHandle) {
    curl_multi_remove_handle(raw, easy.raw)
  }

  /// Runs what can run now; returns the number of transfers still running.
  package func perform() throws(CurlSetupError) -> Int {
    var running: Int32 = 0
    try check(curl_multi_perform(raw, &running), "run transfers")
    return Int(running)
  }

  /// Waits for activity for at most `milliseconds`, or until `wakeup()`.
  package func poll(milliseconds: Int) throws(CurlSetupError) {
    var events: Int32 = 0
    try check(curl_multi_poll(raw, nil, 0, Int32(milliseconds), &events), "wait for network activity")
  }

  /// Interrupts `poll` from any thread.
  package func wakeup() {
    curl_multi_wakeup(raw)
  }

  /// The finished transfers since the last call: their handles and results.
  package func finished() -> [(handle: UnsafeMutableRawPointer, result: CURLcode)] {
    var result: [(handle: UnsafeMutableRawPointer, result: CURLcode)] = []
    var remaining: Int32 = 0
    while let message = curl_multi_info_read(raw, &remaining) {
      if ccurl_msg_is_done(message) != 0, let easy = ccurl_msg_easy(message) {
        result.append((easy, ccurl_msg_result(message)))
      }
    }
    return result
  }
}
