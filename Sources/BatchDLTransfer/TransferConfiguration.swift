import BatchDLSupport
import CCurl

#if canImport(Glibc)
  import Glibc
#endif

// How a transfer sets up its easy handle: options, callbacks, headers and the request body.
extension Transfer {
  /// The bytes libcurl reads at a time for `spec`. A rate-limited session reads in small steps,
  /// so that the limit holds for small files too. Else 1 MiB: against 256 KiB, a GiB from loopback
  /// cost a quarter less system time (fewer, larger reads), and a small file touches only the
  /// pages its body fills.
  package static func receiveBuffer(for spec: TransferSpec) -> Int {
    spec.rateLimit.map { min(256 << 10, max(1 << 10, Int($0 / 16))) } ?? (1 << 20)
  }

  private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

  /// Sets the easy handle's options for `spec`: URL, limits, callbacks, headers and body. Called
  /// once, by `init`.
  func configure(timeout: Interval?) throws {
    try easy.set(CURLOPT_URL, spec.url)
    try easy.allowHTTPOnly()
    try easy.set(CURLOPT_FOLLOWLOCATION, spec.followsRedirectsItself ? 0 : 1)
    try easy.set(CURLOPT_MAXREDIRS, 10)
    try easy.set(CURLOPT_NOSIGNAL, 1)
    try easy.setSecurity(url: spec.url, httpVersion: spec.httpVersion, tls: spec.tls, insecure: spec.insecure)
    try easy.set(CURLOPT_NETRC, ccurl_netrc_ignored)
    if let interface = spec.interface { try easy.set(CURLOPT_INTERFACE, "if!\(interface)") }
    // The idle limit (`timeouts.request`) is the engine's: libcurl's low-speed check averages over
    // five seconds, and so fired that much late once data had flowed.
    try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(clamping: spec.requestTimeout.milliseconds))
    if let timeout { try easy.set(CURLOPT_TIMEOUT_MS, max(1, Int(clamping: timeout.milliseconds))) }

    try easy.set(CURLOPT_PRIVATE, pointer: context)
    try easy.set(CURLOPT_WRITEDATA, pointer: context)
    try easy.setCallback(CURLOPT_WRITEFUNCTION, Transfer.writeCallback)
    try easy.set(CURLOPT_HEADERDATA, pointer: context)
    try easy.setCallback(CURLOPT_HEADERFUNCTION, Transfer.headerCallback)
    // The callback does nothing, but keep it: without one, libcurl 7.88 took the 1 GiB benchmark
    // in 1.6 s instead of 1.0 s (its system time nearly doubled).
    try easy.set(CURLOPT_NOPROGRESS, 0)
    try easy.set(CURLOPT_XFERINFODATA, pointer: context)
    try easy.setProgressCallback(Transfer.progressCallback)

    var headers = spec.headersForURL
    try moveCookies(from: &headers)
    if let resume = spec.resume {
      headers.append("Range: bytes=\(resume.offset)-\(spec.rangeEnd.map(String.init) ?? "")")
      // No validator: a range of a file whose digest guards the bytes (a mirror's segment, a piece
      // fetched again); `Content-Range` must still give the recorded total.
      if let ifRange = resume.validator.ifRange { headers.append("If-Range: \(ifRange)") }
    }
    if let conditional = spec.conditional {
      if let etag = conditional.etag { headers.append("If-None-Match: \(etag)") }
      if let date = conditional.lastModified { headers.append("If-Modified-Since: \(date)") }
    }
    if spec.decodeContent {
      try easy.set(CURLOPT_ACCEPT_ENCODING, "")
    } else {
      headers.append("Accept-Encoding: identity")
    }
    try configureAccess(&headers)
    try configureBody(&headers)
    try easy.set(CURLOPT_HTTPHEADER, list: headers)
  }

  /// The manifest's `Cookie` headers go out through `CURLOPT_COOKIE`: libcurl appends them to the
  /// session jar's cookies for the URL on one `Cookie:` line (a `Cookie` header of its own would be
  /// a second line). libcurl would send that option to any host a redirect leads to: a request
  /// with a `Cookie` header has its redirects followed by the engine (`followsRedirectsItself`),
  /// which drops the header when a hop leaves the origin.
  private func moveCookies(from headers: inout [String]) throws {
    var pairs: [String] = []
    headers.removeAll { line in
      guard let colon = line.firstIndex(of: ":"), String(line[..<colon]).trimmingSpaces.lowercased() == "cookie"
      else { return false }
      let value = String(line[line.index(after: colon)...]).trimmingSpaces
      if !value.isEmpty { pairs.append(value) }
      return true
    }
    guard !pairs.isEmpty else { return }
    try easy.set(CURLOPT_COOKIE, pairs.joined(separator: "; "))
  }

  private func configureBody(_ headers: inout [String]) throws {
    switch spec.body {
    case .none:
      if spec.method(is: "HEAD") {
        try easy.set(CURLOPT_NOBODY, 1)
      } else if !spec.method(is: "GET") {
        try easy.set(CURLOPT_CUSTOMREQUEST, spec.method)
      }
    case .bytes(let bytes):
      try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(bytes.count))
      try bytes.withUnsafeBytes { raw throws in
        try easy.set(
          CURLOPT_COPYPOSTFIELDS,
          pointer: UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)))
      }
      if !spec.method(is: "POST") { try easy.set(CURLOPT_CUSTOMREQUEST, spec.method) }
    case .file(let path):
      let fd = open(path, O_RDONLY | O_CLOEXEC)
      guard fd >= 0 else {
        throw TransferFailure(code: .read, message: "cannot read \(path): \(String(cString: strerror(errno)))")
      }
      uploadDescriptor = fd
      var info = stat()
      guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
        throw TransferFailure(
          code: .read,
          message: "cannot upload \(path): not a regular file (a device, pipe or folder has no set length)")
      }
      let size = Int64(info.st_size)
      try easy.set(CURLOPT_READDATA, pointer: context)
      try easy.setCallback(CURLOPT_READFUNCTION, Transfer.readCallback)
      try easy.set(CURLOPT_SEEKDATA, pointer: context)
      try easy.setSeekCallback(Transfer.seekCallback)
      if spec.method(is: "PUT") {
        try easy.set(CURLOPT_UPLOAD, 1)
        try easy.set(CURLOPT_INFILESIZE_LARGE, offset: size)
      } else {
        try easy.set(CURLOPT_POST, 1)
        try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: size)
        if !spec.method(is: "POST") { try easy.set(CURLOPT_CUSTOMREQUEST, spec.method) }
      }
      // No `Expect: 100-continue` round trip: the servers batchdl talks to accept bodies directly.
      headers.append("Expect:")
    case .form(let parts):
      try easy.setForm(parts.map { ($0.name, $0.value, $0.file) })
      if !spec.method(is: "POST") { try easy.set(CURLOPT_CUSTOMREQUEST, spec.method) }
    }
  }
}
