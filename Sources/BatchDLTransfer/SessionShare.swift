import BatchDLSupport
import CCurl

#if canImport(Glibc)
  import Glibc
#endif

/// What the transfers of one connection identity share through one libcurl share handle
/// (`ShareKey`): their connections, a pool of their own (libcurl's pool of the multi handle would
/// match a connection to a request by its own rules, which ignore the client key and its
/// password); TLS sessions, so that a new connection to a host they have talked to resumes its TLS
/// session instead of a full handshake (every transfer has its own easy handle); and, for a
/// session that keeps cookies (whose share is its own), its cookie store, loaded from and saved to
/// a jar in the state folder (memory only for ephemeral sessions).
package final class SessionShare {
  private let share: UnsafeMutableRawPointer?
  /// nil: no cookies; "": cookies in memory only; else the jar's path.
  package let cookieJar: String?
  private var loaded = false
  /// The jar existed when the session's first transfer read it.
  private var hadJar = false

  package init(cookieJar: String?) {
    self.cookieJar = cookieJar
    share = curl_share_init()
    if let share {
      _ = ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue))
      _ = ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_CONNECT.rawValue))
      // A share that holds cookies turns libcurl's cookie engine on for every handle given it.
      if cookieJar != nil {
        _ = ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_COOKIE.rawValue))
      }
    }
  }

  deinit {
    if let share { curl_share_cleanup(share) }
  }

  private var jar: String? { cookieJar.flatMap { $0.isEmpty ? nil : $0 } }

  /// Gives `easy` the session's share; with cookies, the first transfer also reads the jar.
  package func attach(_ easy: EasyHandle) throws(CurlSetupError) {
    guard let share else { return }
    try easy.set(CURLOPT_SHARE, pointer: share)
    guard cookieJar != nil else { return }
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
  package func save() {
    guard let jar, loaded, let easy = try? EasyHandle() else { return }
    try? easy.set(CURLOPT_SHARE, pointer: share)
    if !hadJar, easy.cookieCount() == 0 { return }
    try? FileAccess.makeDirectories(FileAccess.directory(of: jar))
    try? easy.set(CURLOPT_COOKIEJAR, jar)
    try? easy.set(CURLOPT_COOKIELIST, "FLUSH")
    chmod(jar, 0o600)
  }
}
