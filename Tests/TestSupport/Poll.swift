import Foundation

/// Waiting for what a test needs (an event in a run's `--events` file, a file, a state) instead of
/// for a time that a loaded machine may not keep to.
public enum Poll {
  /// Checks `condition` every `interval` seconds until it holds or `timeout` seconds have passed;
  /// returns whether it held.
  @discardableResult
  public static func until(
    timeout: TimeInterval = 30, every interval: TimeInterval = 0.05, _ condition: () throws -> Bool
  ) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
      if try condition() { return true }
      if Date() >= deadline { return false }
      usleep(useconds_t(interval * 1_000_000))
    }
  }

  /// The JSON objects of the JSON-lines file at `path` (a run's `--events`), skipping a last line
  /// still being written; [] when there is no file yet.
  public static func jsonLines(_ path: String) -> [[String: Any]] {
    guard let data = FileManager.default.contents(atPath: path) else { return [] }
    return data.split(separator: UInt8(ascii: "\n")).compactMap { line in
      (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any]
    }
  }
}
