import Foundation

/// Debian's `chromium` without a window, to load a page the way a person's browser would: its DOM
/// once the page's scripts have run, what the page logged to the console (script errors, blocked
/// scripts and loads), and a screenshot. It is kept off the network: background services are off
/// and every host name resolves to nothing.
public enum HeadlessChromium {
  /// The browser's path, or nil when it is not installed (scripts/setup installs it).
  public static var path: String? { ExternalTool.find("chromium") }

  public struct Page: Sendable {
    /// The DOM as the browser serializes it after the page's scripts ran (`--dump-dom`).
    public var dom: String
    /// The page's console messages (Chromium logs each as a `CONSOLE` line): uncaught exceptions,
    /// `console.*` calls, Content-Security-Policy violations.
    public var console: [String]
  }

  public struct Failure: Error, CustomStringConvertible {
    public var description: String
  }

  /// Loads `file` (with `fragment` after `#`, if any) and returns its DOM and console. With
  /// `screenshot`, also saves a PNG of the window's top to that path. Each browser run is stopped
  /// after `timeout` seconds.
  public static func load(
    _ file: String, fragment: String? = nil, screenshot: String? = nil, width: Int = 1280, height: Int = 1600,
    timeout: TimeInterval = 90
  ) throws -> Page {
    guard let chromium = path else { throw Failure(description: "chromium is not installed") }
    var url = URL(fileURLWithPath: file).absoluteString
    if let fragment { url += "#" + fragment }
    let dom = try run(chromium, ["--dump-dom", url], width: width, height: height, timeout: timeout)
    var console = dom.console
    if let screenshot {
      let shot = try run(
        chromium, ["--screenshot=\(screenshot)", "--hide-scrollbars", url], width: width, height: height,
        timeout: timeout)
      console += shot.console
    }
    return Page(dom: dom.stdout, console: console)
  }

  /// The flags of every run: headless, sandbox and GPU off (containers), a fresh profile, the
  /// console on standard error, nothing in the background that would go online, no DNS.
  static func flags(profile: String, width: Int, height: Int) -> [String] {
    [
      "--headless=new", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(profile)", "--enable-logging=stderr",
      "--v=0", "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
      "--disable-component-update", "--disable-default-apps", "--disable-extensions", "--disable-sync",
      "--disable-breakpad", "--disable-domain-reliability", "--host-resolver-rules=MAP * ~NOTFOUND",
      "--window-size=\(width),\(height)",
    ]
  }

  private static func run(
    _ chromium: String, _ arguments: [String], width: Int, height: Int, timeout: TimeInterval
  ) throws -> (stdout: String, console: [String]) {
    let folder = TemporaryDirectory()
    let result = try ExternalTool.run(
      chromium, flags(profile: folder.path + "/profile", width: width, height: height) + arguments,
      environment: ["HOME": folder.path], timeout: timeout)
    let log = result.stderr
    if result.timedOut {
      throw Failure(description: "chromium did not finish within \(Int(timeout)) s: \(log.suffix(2000))")
    }
    guard result.status == 0 else {
      throw Failure(description: "chromium exited with status \(result.status): \(log.suffix(2000))")
    }
    let console = log.split(separator: "\n").filter { $0.contains(":CONSOLE") }.map(String.init)
    return (result.stdout, console)
  }
}
