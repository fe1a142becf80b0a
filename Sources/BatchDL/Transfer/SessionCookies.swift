import CCurl

#if canImport(Glibc)
  import Glibc
#endif

/// A session's cookies, through libcurl's cookie engine: one share handle for all of the session's
/// transfers, loaded from and saved to a jar in the state folder (memory only for ephemeral
/// sessions, whose `jar` is nil).
final class SessionCookies {
  private let share: UnsafeMutableRawPointer?
  let jar: String?
  private var loaded = false
  /// The jar existed when the session's first transfer read it.
  private var hadJar = false

  init(jar: String?) {
    self.jar = jar
    share = curl_share_init()
    if let share {
      _ = ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_COOKIE.rawValue))
    }
  }

  deinit {
    if let share { curl_share_cleanup(share) }
  }

  /// Gives `easy` the session's cookies; the first transfer also reads the jar.
  func attach(_ easy: EasyHandle) throws(CurlSetupError) {
    guard let share else { return }
    try easy.set(CURLOPT_SHARE, pointer: share)
    // The first transfer reads the jar into the shared store; the others only turn the engine on
    // (an empty name reads no file).
    let file = loaded ? nil : jar.flatMap { access($0, R_OK) == 0 ? $0 : nil }
    if !loaded { hadJar = file != nil }
    loaded = true
    try easy.set(CURLOPT_COOKIEFILE, file ?? "")
  }

  /// Writes the session's cookies to the jar (mode 0600: cookies are credentials).
  /// A session that got no cookie and had no jar writes none: libcurl would write an empty one,
  /// and seed OpenSSL's random generator to name its temporary file (a tenth of the instructions
  /// of a small run's start, bench/callgrind).
  func save() {
    guard let jar, loaded, let easy = try? EasyHandle() else { return }
    try? easy.set(CURLOPT_SHARE, pointer: share)
    if !hadJar, easy.cookieCount() == 0 { return }
    try? FileAccess.makeDirectories(FileAccess.directory(of: jar))
    try? easy.set(CURLOPT_COOKIEJAR, jar)
    try? easy.set(CURLOPT_COOKIELIST, "FLUSH")
    chmod(jar, 0o600)
  }
}
