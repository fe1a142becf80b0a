import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Starts POSIX threads that can be joined, unlike Foundation's `Thread`.
enum POSIXThread {
  private final class Body {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
  }

  /// Starts `body` on a new thread; nil when the system refuses one.
  static func start(_ body: @escaping @Sendable () -> Void) -> pthread_t? {
    let context = Unmanaged.passRetained(Body(body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(
      &thread, nil,
      { raw in
        guard let raw else { return nil }
        Unmanaged<Body>.fromOpaque(raw).takeRetainedValue().run()
        return nil
      }, context)
    guard status == 0 else {
      Unmanaged<Body>.fromOpaque(context).release()
      return nil
    }
    return thread
  }

  /// Waits for `thread` to end (never for the calling thread itself, which is detached instead).
  static func join(_ thread: pthread_t) {
    if pthread_equal(thread, pthread_self()) != 0 {
      pthread_detach(thread)
    } else {
      pthread_join(thread, nil)
    }
  }
}
