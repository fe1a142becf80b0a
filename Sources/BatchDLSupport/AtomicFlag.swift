import Foundation

/// A flag set from any thread and read by the engine.
package final class AtomicFlag: @unchecked Sendable {
  private let lock = NSLock()
  private var value = false

  package func set() {
    lock.lock()
    value = true
    lock.unlock()
  }

  package var isSet: Bool {
    lock.lock()
    defer { lock.unlock() }
    return value
  }

  package init() {}
}
